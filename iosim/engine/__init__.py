"""The counting engine: schedules describe what moves where, the engine counts it.

A schedule is a plain Python function ``schedule(ctx)`` written against
:class:`~iosim.engine.context.Context`. The same function runs in three modes:

* ``count`` — shapes only; identical loop iterations are run once and weighted by their
  trip count, so the cost does not grow with N/B or with batch × heads;
* ``trace`` — shapes only, every loop iteration run one by one (used to check ``count``);
* ``numeric`` — every iteration, on NumPy arrays in float64, returning the outputs.

All three produce the same integer byte counts, by construction and by test.
"""
