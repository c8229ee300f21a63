"""The registry of built-in loop orders: each algorithm's passes, its IO family, and the
problem its kernel really runs.

Each pass is a plain function ``schedule(ctx, **options)``; a user schedule is any
function with that signature, passed to :func:`iosim.simulate` in place of a name.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Callable

from ..errors import ScheduleError, require_choice
from ..workload.layouts import decode_layout
from .cudnn_decode import cudnn_decode
from .fa1 import fa1_forward
from .fa1_backward import fa1_backward
from .fa2 import fa2_forward
from .fa2_backward import fa2_backward
from .fa2_kernel_backward import fa2_kernel_backward
from .fa2_splitkv import fa2_splitkv_forward
from .standard import standard_forward
from .standard_backward import standard_backward

PASSES = ("forward", "backward", "forward+backward")


@dataclass(frozen=True)
class Algorithm:
    """A built-in algorithm: its forward and backward schedules and its IO family."""

    forward: Callable
    backward: Callable | None
    description: str
    family: str  # "standard" (Θ(Nd + N²)) or "flash" (Θ(N²d²/M)), Theorems 2 and 5
    #: the problem the kernel really runs, if it reshapes the user's (decode's GQA swap)
    layout: Callable | None = None


SCHEDULES: dict[str, Algorithm] = {
    "standard": Algorithm(standard_forward, standard_backward,
                          "Algorithms 0 and 3: S, P (and dP, dS) written to and read back from HBM", "standard"),
    "fa1": Algorithm(fa1_forward, fa1_backward,
                     "FlashAttention Algorithms 1 and 4: K/V outer loop, O, ℓ, m (dQ) read and written per step", "flash"),
    "fa2": Algorithm(fa2_forward, fa2_backward,
                     "FlashAttention-2 Algorithms 1 and 2: Q outer loop forward, K/V outer loop backward", "flash"),
    "fa2-splitkv": Algorithm(fa2_splitkv_forward, None,
                             "Flash-Decoding: FA2 over S splits of the keys, then a combine kernel (forward only)",
                             "flash", layout=decode_layout),
}


#: single passes that only the real-kernel presets run (iosim.kernels.plan names them here)
KERNEL_PASSES: dict[str, Callable] = {"fa2_kernel_backward": fa2_kernel_backward, "cudnn_decode": cudnn_decode}


def get_algorithm(name: str) -> Algorithm:
    require_choice("algorithm", name, SCHEDULES, ScheduleError)
    return SCHEDULES[name]


@functools.lru_cache(maxsize=None)
def parameters(step: Callable) -> tuple[str, ...]:
    """The names of a built-in pass's parameters (read once: every simulate call asks)."""
    return tuple(inspect.signature(step).parameters)


def options_for(name: str, passes: str, options: dict | None) -> dict:
    """The part of ``options`` that the ``passes`` of algorithm ``name`` take."""
    algorithm = get_algorithm(name)
    steps = [getattr(algorithm, p) for p in passes.split("+") if getattr(algorithm, p) is not None]
    accepted = set().union(*(parameters(s) for s in steps))
    return {k: v for k, v in (options or {}).items() if k in accepted}


def get_schedule(name: str, passes: str = "forward") -> Callable:
    """One function running the requested passes of algorithm ``name``.

    Options are routed to the pass that takes them (``gemm`` to standard attention,
    ``dq_read_twice`` to FA2's backward); an option no pass takes is an error.
    """
    if name in KERNEL_PASSES:
        return KERNEL_PASSES[name]
    algorithm = get_algorithm(name)
    require_choice("passes", passes, PASSES, ScheduleError)
    steps = [getattr(algorithm, p) for p in passes.split("+")]
    if None in steps:
        raise ScheduleError(f"{name} has no backward pass; run passes='forward'", field="passes")

    params = [set(parameters(s)) for s in steps]
    accepted = set().union(*params) - {"ctx"}

    def run(ctx, **options):
        unknown = set(options) - accepted
        if unknown:
            raise ScheduleError(f"{name} ({passes}) takes no option {', '.join(sorted(unknown))}")
        for step, takes in zip(steps, params):
            step(ctx, **{k: v for k, v in options.items() if k in takes})

    run.__name__ = name
    return run
