"""Built-in loop orders. Each is a plain function ``schedule(ctx, **options)``.

A user schedule is any function with that signature; pass it to
:func:`iosim.simulate` in place of a name.
"""

from __future__ import annotations

from typing import Callable

from ..errors import ScheduleError
from .fa1 import fa1_forward
from .fa2 import fa2_forward
from .standard import standard_forward

#: name -> (schedule function, one-line description, family for Theorem 2)
SCHEDULES: dict[str, tuple[Callable, str, str]] = {
    "standard": (standard_forward, "Algorithm 0: S and P written to and read back from HBM", "standard"),
    "fa1": (fa1_forward, "FlashAttention Algorithm 1: K/V outer loop, O, ℓ, m read and written per step", "flash"),
    "fa2": (fa2_forward, "FlashAttention-2 Algorithm 1: Q outer loop, O, ℓ, m on chip, O and L written once", "flash"),
}


def get_schedule(name: str) -> Callable:
    """The schedule function called ``name``; a clear error for an unknown one."""
    try:
        return SCHEDULES[name][0]
    except KeyError:
        raise ScheduleError(f"unknown algorithm {name!r}; choose one of {', '.join(SCHEDULES)}") from None
