"""Compute time from a kernel's measured steps (:mod:`iosim.kernels.measured_steps`): what the
busiest SM spends on a launch's thread blocks when a round of the kernel's blocks is timed
on the compiled kernel rather than derived (docs/triton.md, "Measured steps").

* The launch's **fill** (its first loads and last stores) is paid once.
* **Uniform blocks** (every block the same steps ``n``, not causal): the busiest SM runs
  ``ceil(blocks / SMs)`` of them in rounds of ``k`` (the measured occupancy), a round
  ``n·R(r)`` plus the measured wave cost after the first; ``R(k)`` is measured, a partial
  round's step lies between the lone block's measured step and ``R(k)`` in proportion to its
  blocks, or, where no lone step was measured, is ``R(k)`` times ``ratio(r)`` (the caller's
  model of a round of ``r`` over a full round).
* **Unequal blocks** (causal): each block takes its share ``(wave + n·R_causal)/k`` of a full
  SM, in launch order to the least-loaded SM (:func:`~iosim.models.kernel_time.busiest_sm`),
  at least the longest block alone, at the lone step scaled to the causal one.
* **Short blocks.** The steps above are slopes over blocks of 33–132 key steps, and the
  slope absorbs a cost every round pays besides its steps (its blocks' Q loads, the
  pipeline's prologue and epilogue, the O stores). Where the table also has the short
  launches' line (blocks of about 4 and 16 steps: ``round_s + n·short_step_s``), a round
  costs the larger of the two lines: the fixed cost decides short blocks, the long slope
  long ones (docs/validation/2026-12-02-triton-short.md). A causal block's share takes the
  short line at the causal step's scale.
"""

from __future__ import annotations

import math
from typing import Callable

from .kernel_time import KernelRates, busiest_sm
from .launch_time import each_kernel

#: the unit a measured step's compute is reported under
MEASURED = "measured steps"


def steps_of(work) -> int:
    """Key-block steps of one block of a per-head :class:`~iosim.engine.ledger.CtaWork` (its
    S = Q·Kᵀ products, one a step)."""
    return sum(c for (_m, _n, _k, a, _), c in work.products.items() if a)


def busiest(m, blocks: list, heads: int, sms: int, causal: bool,
            ratio: Callable[[int], float] | None = None) -> float:
    """The busiest SM's compute seconds (module docstring); ``m`` the
    :class:`~iosim.kernels.measured_steps.MeasuredStep`, ``blocks`` (steps, count) per
    distinct block of one head, in launch order; ``ratio`` as in the module docstring
    (default: a round's step in proportion to its blocks)."""
    k = m.blocks_per_sm
    ratio = ratio or (lambda r: r / k)

    def step(r: int) -> float:
        return m.round_step(r, ratio(r))

    total = heads * sum(c for _, c in blocks)
    if not causal and len({n for n, _ in blocks}) == 1:
        n = blocks[0][0]
        per_sm = math.ceil(total / sms)
        rounds = [k] * (per_sm // k) + ([per_sm % k] if per_sm % k else [])
        long = m.fill_s + (len(rounds) - 1) * m.wave_s + sum(n * step(r) for r in rounds)
        return max(long, sum(short_round(m, n, step(r) / m.step_s) for r in rounds))
    causal_step = m.causal_step_s if causal and m.causal_step_s is not None else m.step_s
    lone = causal_step * step(1) / m.step_s
    runs = [(max(m.wave_s + n * causal_step, short_round(m, n, causal_step / m.step_s)) / k, c) for n, c in blocks]
    alone = max(n * lone for n, _ in blocks)
    return m.fill_s + max(busiest_sm(runs, sms, heads), alone)


def short_round(m, n: int, scale: float = 1.0) -> float:
    """A round of blocks of ``n`` key steps as short blocks cost it: the measured fixed cost
    of a round besides its steps, plus ``n`` short-block steps (``scale``: this round's step
    over a full round's); 0 where the short launches were not measured."""
    if m.round_s is None or m.short_step_s is None:
        return 0.0
    return m.round_s + n * m.short_step_s * scale


def predict(profile, dtype: str, m, requested: dict, dram: dict, work: dict, causal: bool = False) -> dict:
    """kernel -> :class:`~iosim.models.roofline.TimePrediction` with compute from the measured
    steps ``m`` (arguments as :func:`iosim.models.kernel_time.predict`)."""
    rates = KernelRates.from_profile(profile, dtype)

    def compute(heads: int, works: list) -> tuple[float, dict]:
        blocks = [(steps_of(w), w.count) for w in works if steps_of(w)]
        seconds = busiest(m, blocks, heads, rates.sm_count, causal) if blocks else 0.0
        return seconds, {MEASURED: seconds}

    return each_kernel(rates, requested, dram, work, compute)


__all__ = ["busiest", "predict", "short_round", "steps_of", "MEASURED"]
