"""Built-in loop orders, written as the papers' listings against the engine's ``ctx``.

:mod:`.registry` names them (and the passes only the real kernels run); each other module
is one pass of one algorithm.

Its place in the pipeline: above :mod:`iosim.engine`, whose ``ctx`` and tiles a schedule
uses; a schedule describes what moves and never counts it.
"""

from .registry import KERNEL_PASSES, PASSES, SCHEDULES, Algorithm, get_algorithm, get_schedule, options_for

__all__ = ["SCHEDULES", "KERNEL_PASSES", "PASSES", "Algorithm", "get_algorithm", "get_schedule", "options_for"]
