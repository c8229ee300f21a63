"""Time of cuDNN's fused attention from its kernels' measured steps (:mod:`iosim.kernels.cudnn_steps`).

* **The persistent kernels** (the fprop, ``main``; the bprop, ``dq_dk_dv``). A launch of min(tiles, SMs) thread
  blocks takes its tiles from an atomic counter, in launch order: the block that is free first takes the next, so
  the tiles go, in launch order, to the least-loaded SM (:func:`~iosim.models.sm_schedule.busiest_sm`). A tile is
  one unit, or, where the bprop gives a tile to two thread blocks (above d = 128), two, each walking all of it. A
  unit costs ``tile_s + steps · step_s`` (causal: ``causal_step_s``); its steps are its key blocks (fprop: one
  S = QKᵀ product a step) or its query blocks (bprop: two products of B_r × B_c a step, S and dPᵀ's). The launch
  costs ``fill_s`` (its floor: what the measured launches cost besides their units) plus its busiest SM's units,
  or plus its memory times (:func:`~iosim.models.launch_time.memory_seconds`) where they are longer.
* **The element-wise kernels** (``compute_dot_do_o``, ``convert_dq_to_16bits``, ``fmha_reduce_head``): no products;
  their floor and memory times, their loads and stores at the measured copy kernel's rate.

Nothing here is fitted to the launches it predicts: the steps come from launches made for them
(``benchmarks/cudnn_steps.py``), the committed cuDNN runs are its test (docs/gpu.md, "cuDNN's time").
"""

from __future__ import annotations

from .kernel_time import KernelRates
from .launch_time import combine, memory_seconds
from .measured_time import steps_of
from .sm_schedule import busiest_sm

#: the per-resource key of the persistent kernels' busiest SM's units
STEPS = "measured steps (cuDNN)"
#: the kernels of a cuDNN launch that run its steps, and the step table's name for each
PERSISTENT = {"main": "fprop", "dq_dk_dv": "bprop"}
#: products a step makes, per kernel (those :func:`~iosim.models.measured_time.steps_of` counts)
PRODUCTS_A_STEP = {"main": 1, "dq_dk_dv": 2}


def units_of(kernel: str, works, halves: bool) -> list[tuple[int, int]]:
    """(steps, count) of one head's units in launch order, from its thread blocks' records. Where the bprop gives a
    tile to two thread blocks (``halves``), a count run records the two halves apart (their work differs: one
    writes dQaccum); both walk the tile's query blocks, and the tiles' walks shorten in launch order (causal: from
    the diagonal on; dense: all alike), so the launch order is the units longest first, a tile's halves together."""
    units = [(steps_of(w) // PRODUCTS_A_STEP[kernel], w.count) for w in works if steps_of(w)]
    return sorted(units, key=lambda u: -u[0]) if halves else units


def busiest(step, units: list, heads: int, sms: int, causal: bool) -> float:
    """The busiest SM's seconds: ``units`` (steps, count) of one head in launch order (:func:`units_of`), ``step``
    the kernel's :class:`~iosim.kernels.cudnn_steps.CudnnStep`."""
    per = step.causal_step_s if causal else step.step_s
    return busiest_sm([(step.tile_s + n * per, c) for n, c in units], sms, heads)


def predict(profile, dtype: str, steps: dict, requested: dict, dram: dict, work: dict, causal: bool,
            halves: bool = False) -> dict:
    """kernel -> :class:`~iosim.models.roofline.TimePrediction`: ``steps`` the persistent kernels'
    :class:`~iosim.kernels.cudnn_steps.CudnnStep` by kernel (a launch's one), ``halves`` whether its tile is two
    thread blocks' (the bprop above d = 128); the rest as :func:`iosim.models.kernel_time.predict`."""
    rates = KernelRates.from_profile(profile, dtype)
    out = {}
    for kernel, (reads, writes) in requested.items():
        heads, works = work.get(kernel, (0, []))
        step = steps.get(kernel)
        per = memory_seconds(rates, reads, writes, dram.get(kernel, (reads, writes)), copying=step is None)
        compute = 0.0
        if step is not None:
            units = units_of(kernel, works, halves)
            compute = busiest(step, units, heads, rates.sm_count, causal)
            per[STEPS] = compute
            per["launch"] = step.fill_s           # measured with the launch: its floor, fill and drain
        out[kernel] = combine(per, compute, [STEPS] if step is not None else [])
    return out


def model_name(source: str, elementwise: bool) -> str:
    """The launch's JSON's name of this model (``source``: its steps'; ``elementwise``: the launch has element-wise
    kernels)."""
    return f"cuDNN's steps measured on {source}" + ("; element-wise kernels: the copy rate" if elementwise else "")


__all__ = ["PERSISTENT", "STEPS", "busiest", "model_name", "predict", "units_of"]
