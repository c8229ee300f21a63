"""The counting engine: schedules describe what moves where, the engine counts it.

A schedule is a plain Python function ``schedule(ctx)`` written against
:class:`~iosim.engine.context.Context`. The same function runs in three modes:

* ``count`` — shapes only; identical loop iterations are run once and weighted by their
  trip count, so the cost does not grow with N/B or with batch × heads;
* ``trace`` — shapes only, every loop iteration run one by one (used to check ``count``,
  and to record every access in order for the cache model);
* ``numeric`` — every iteration, on NumPy arrays in float64, returning the outputs.

All three produce the same integer byte counts, by construction and by test.

The modules, one role each:

* :mod:`.context` — :class:`~iosim.engine.context.Context`, what a schedule sees as
  ``ctx``: ``load``, ``store``, ``read``, ``write``, ``keep``, ``fill``, ``mask``, ``kernel``;
* :mod:`.loops` — its block loops (``q_blocks``, ``kv_blocks``, Flash-Decoding's splits),
  each iteration a scope weighted by the blocks it stands for;
* :mod:`.blocks` — an axis cut into blocks, the active (query, key) blocks, and the
  grouping of identical blocks that makes ``count`` fast;
* :mod:`.affine` — causal blocks grouped by the shape of their inner loop (counts affine
  in the number of visible blocks), so a causal ``count`` is fast too;
* :mod:`.access` — where one load or store lands and the shape of its tile (C4);
* :mod:`.tiles` — :class:`~iosim.engine.tiles.Tile` arithmetic, the same in every mode,
  reporting its operations;
* :mod:`.hooks` — what the context does with those reports (operations, products,
  temporaries), a part of :class:`~iosim.engine.context.Context`;
* :mod:`.tensors` — the HBM tensors: their axes, dtypes and on-chip roles;
* :mod:`.residency` — what is on chip, where, and whether it fits;
* :mod:`.ledger` — the accounts, per head: traffic per tensor, bytes per link,
  operations, each thread block's work;
* :mod:`.storage` — numeric mode's HBM: the arrays loads read and stores write;
* :mod:`.requests` — every HBM access in program order (grouped, in ``count`` mode), for
  the L2 model.

Its place in the pipeline: it may import :mod:`iosim.errors`, :mod:`iosim.dtypes`,
:mod:`iosim.hardware` and :mod:`iosim.workload`, and no model; :mod:`iosim.run.count`
runs a schedule on a fresh :class:`~iosim.engine.context.Context` and reads its ledger,
and the models (:mod:`iosim.models`) read those counts afterwards.
"""
