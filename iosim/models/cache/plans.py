"""A run's L2 model planned before it is played: what playing costs, and how.

:func:`plan` takes one head's recorded requests. Where it can, it expands them into every
thread block's program (:mod:`.programs`) and plays them exactly (:mod:`.playback`), or
from a sample of the chunks (:mod:`.sampled`) past the caller's budget. A kernel whose
thread blocks are out of lockstep and whose programs hold more than :data:`BUILD_STEPS`
requests a head is not expanded: it is planned from its intervals (:mod:`.uniform`). Past
the budget, and where a sample of the chunks would be past it too (or cannot be made), such
kernels, and those whose thread blocks run programs of unequal lengths (causal masks: each
query block its own number of key blocks), are played in windows of their rounds
(:mod:`.windows`): :meth:`Plan.windowed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import sampled, windows
from .playback import CacheReport, PlayLimit, cost, replay_programs
from .programs import head_programs

#: a kernel out of lockstep whose programs hold more requests a head than this is planned from
#: its intervals, never expanded (about 100 bytes a request expanded)
BUILD_STEPS = 4_000_000


@dataclass(frozen=True)
class Plan:
    """A run's L2 model, ready to play: ``requests``, how many its streams hold (what playing
    costs: about 2 µs each on the development machine, docs/performance.md), known before
    playing. Exact where the heads' extension takes its first two steps; where they differ
    (:func:`~.periodic.all_heads`), more heads are played than planned."""

    requests: int
    _play: Callable[[int | None], CacheReport]
    _sample: Callable[[int], "Plan | None"] | None = None
    _window: Callable[[int], "Plan | None"] | None = None

    def play(self, limit: int | None = None) -> CacheReport:
        """The report; :class:`PlayLimit` before any stream that would take the requests
        played past ``limit``."""
        return self._play(limit)

    def sampled(self, budget: int) -> "Plan | None":
        """The same run estimated from a sample of its chunks of about ``budget`` requests
        (:mod:`.sampled`); None where it cannot be (a cache behind the L2, too many blocks, a
        kernel too large to expand)."""
        return None if self._sample is None else self._sample(budget)

    @property
    def has_windows(self) -> bool:
        """Whether a kernel is played in windows by :meth:`windowed` (else it is :meth:`sampled`)."""
        return self._window is not None

    def windowed(self, budget: int) -> "Plan | None":
        """The same run estimated from about ``budget`` requests, its kernels of unequal
        thread blocks (or too large to expand) in windows of their rounds (:mod:`.windows`),
        the others from a sample of their chunks; None where it cannot be."""
        return self.sampled(budget) if self._window is None else self._window(budget)


def replay(requests: list, **kw) -> CacheReport:
    """:func:`plan` the recorded ``requests`` and play them."""
    return plan(requests, **kw).play()


def plan(requests: list, *, heads_total: int, kv_of_q, capacity_bytes: int, concurrency: dict,
         chunk_rows: int = 64, outer_levels: tuple = (), leads_group=lambda h: True, group_size: int = 1,
         method: str = "stream", uniform: dict | None = None) -> Plan:
    """One head's recorded ``requests``, to be played for every head through an LRU cache.

    ``kv_of_q(h)``: the K/V head that query head ``h`` reads; ``leads_group(h)``: whether
    ``h`` is the query head that makes its group's once-per-K/V-head accesses (the GQA
    reductions, keyed by the K/V head); ``concurrency[kernel]``:
    resident CTAs (:func:`~.playback.occupancy`); ``outer_levels``: (name, capacity) of further
    caches between this one and DRAM, nearest first (each an LRU fed by the misses and
    dirty evictions of the one in front); ``group_size``: query heads per K/V head. The
    stream of a kernel whose CTAs have one length, with no cache behind this one, is
    played as copies of P heads (:func:`~.playback._by_copies`); otherwise the heads are played as
    :func:`~.periodic.all_heads` says: every one, or, for many heads, enough of them to
    extend the totals (exactly, or where two steps only nearly agree within
    :data:`~.periodic.NEAR`, and the report says so). ``method``: ``"stream"`` plays the
    cohorts' stream (:mod:`.stream`), ``"round_robin"`` every CTA's every request in turn
    (the reference it is checked against). ``uniform``: the kernels' intervals
    (:func:`~.uniform.uniform_programs`), where the caller has them: see the module's docstring.
    """
    kernels = list(dict.fromkeys(r.kernel for r in requests))
    lazy = {k for k in kernels if uniform is not None and int(uniform[k].lengths.sum()) > BUILD_STEPS}
    programs = head_programs([r for r in requests if r.kernel not in lazy], chunk_rows)
    kw = dict(heads=heads_total, kv_of_q=kv_of_q, leads_group=leads_group, group=group_size,
              capacity_bytes=capacity_bytes)
    costs = {k: int(uniform[k].lengths.sum()) * heads_total if k in lazy else
             cost(programs[k], concurrency.get(k, 1), outer_levels, **kw) for k in kernels}

    def every():                                     # the lazy kernels expanded: played exactly
        built = {**programs, **head_programs([r for r in requests if r.kernel in lazy], chunk_rows)}
        return {k: built[k] for k in kernels}
    def sample(budget, windowed):
        return None if outer_levels else _sampled_plan(programs, uniform if windowed else None, lazy, costs,
                                                       concurrency, budget, chunk_rows, **kw)
    return Plan(sum(costs.values()), lambda limit: replay_programs(every(), concurrency, outer_levels, method, limit,
                                                                   **kw),
                lambda budget: None if lazy else sample(budget, False),
                (lambda budget: sample(budget, True)) if uniform and (lazy or any(map(_unequal, uniform.values())))
                else None)


def _unequal(u) -> bool:
    """Whether a kernel's thread blocks run programs of more than one length."""
    return len(u.lengths) > 1 and bool((u.lengths != u.lengths[0]).any())


def _sampled_plan(programs: dict, uniform: dict | None, lazy: set, costs: dict, concurrency: dict, budget: int,
                  chunk_rows: int, *, group: int, **kw) -> Plan | None:
    """Every head of every kernel from a sample of about ``budget`` requests, shared among the
    kernels by their cost: of its chunks (:func:`.sampled.plan`), or, given ``uniform``, for a
    kernel of unequal thread blocks or one not expanded (``lazy``) in windows (:func:`.windows.plan`)."""
    total = max(1, sum(costs.values()))
    parts = []
    for k, c in costs.items():
        share = max(1, budget * c // total)
        if uniform is not None and (k in lazy or _unequal(uniform[k])):
            got = windows.plan({k: uniform[k]}, concurrency, share, **kw)
        else:
            got = sampled.plan({k: programs[k]}, concurrency, share, chunk_rows, **kw)
        if got is None:
            return None
        parts.append(got)

    def report(limit) -> CacheReport:
        kernels = {}
        for _, play in parts:
            got = play()
            if got is None:                  # a chunk of two sizes: not played from stack distances
                raise PlayLimit(0)
            kernels.update(got)
        return CacheReport({k: g.stats for k, g in kernels.items()}, {k: concurrency.get(k, 1) for k in kernels},
                           sampled=kernels)
    return Plan(sum(p[0] for p in parts), report)


__all__ = ["BUILD_STEPS", "Plan", "PlayLimit", "plan", "replay"]
