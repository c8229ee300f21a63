"""Built-in loop orders, written as the papers' listings against the engine's ``ctx``.

:mod:`.registry` names them; each other module is one pass of one algorithm.
"""

from .registry import KERNEL_PASSES, PASSES, SCHEDULES, Algorithm, get_algorithm, get_schedule, options_for

__all__ = ["SCHEDULES", "KERNEL_PASSES", "PASSES", "Algorithm", "get_algorithm", "get_schedule", "options_for"]
