"""A run's L2 model planned before it is played: what playing costs, and how.

:func:`plan` takes one head's recorded requests. Where it can, it expands them into every
thread block's program (:mod:`.programs`) and plays them exactly (:mod:`.playback`), or
from a sample of the chunks (:mod:`.sampled`) past the caller's budget. A kernel whose
thread blocks are out of lockstep and whose programs hold more than :data:`BUILD_STEPS`
requests a head is not expanded: it is planned from its intervals (:mod:`.uniform`). Past
the budget, such kernels, those whose thread blocks run programs of unequal lengths
(causal masks: each query block its own number of key blocks), every kernel with a cache
behind the L2, and any kernel whose sample of the chunks would be past the budget too (or
cannot be made) are played in windows of their rounds (:mod:`.windows`): :meth:`Plan.windowed`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from . import lines, sampled, windows
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
    _sample: Callable[[int, int | None], "Plan | None"] | None = None
    _window: Callable[[int, int | None], "Plan | None"] | None = None
    _in_lines: Callable[[], int] | None = None

    def in_lines(self) -> int:
        """About how many requests the streams hold once the buffers many heads' rows share are split into their
        lines (:mod:`.lines`): what playing them exactly costs, up to several times ``requests`` (estimated when
        asked: about half a second for a stream of millions)."""
        return self.requests if self._in_lines is None else self._in_lines()

    def play(self, limit: int | None = None) -> CacheReport:
        """The report; :class:`PlayLimit` before any stream that would take the requests
        played past ``limit``."""
        return self._play(limit)

    def sampled(self, budget: int, in_windows: int | None = None) -> "Plan | None":
        """The same run estimated from a sample of its chunks of about ``budget`` requests
        (:mod:`.sampled`), its kernels played in windows from about ``in_windows`` (default
        ``budget``); None where it cannot be (a cache behind the L2, too many blocks, a kernel
        too large to expand)."""
        return None if self._sample is None else self._sample(budget, in_windows)

    def windowed(self, budget: int, in_windows: int | None = None) -> "Plan | None":
        """The same run estimated in windows of its rounds (:mod:`.windows`) where
        :func:`_sampled_plan` says, from about ``in_windows`` requests (default ``budget``),
        the others from a sample of their chunks of about ``budget``; None where it cannot be
        (a plan made without the thread blocks' intervals)."""
        return self.sampled(budget, in_windows) if self._window is None else self._window(budget, in_windows)


def replay(requests: list, **kw) -> CacheReport:
    """:func:`plan` the recorded ``requests`` and play them."""
    return plan(requests, **kw).play()


def plan(requests: list, *, heads_total: int, kv_of_q, capacity_bytes: int, concurrency: dict,
         chunk_rows: int = 64, outer_levels: tuple = (), leads_group=lambda h: True, group_size: int = 1,
         method: str = "stream", uniform: dict | None = None, lockstep: bool = False, sides=None,
         ways: int | None = None, interleaved=None) -> Plan:
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
    (:func:`~.uniform.uniform_programs`), or a function that makes them when asked, where the
    caller has them: see the module's docstring; ``lockstep``: every thread block runs one
    program (the expanded programs are then one block's, whatever the length); ``sides(slots)``:
    the partition each resident slot reads through, for an L2 of two (:mod:`.partitions`);
    ``ways``: the partitions are hashed sets of so many ways (:mod:`.sets`); ``interleaved``: the
    buffers that hold many heads' rows side by side (:class:`.lines.Interleaved`), played as
    their lines where the heads are played exactly with two partitions.
    """
    kernels = list(dict.fromkeys(r.kernel for r in requests))
    intervals = uniform if callable(uniform) else (lambda: uniform)
    lazy = set() if lockstep or uniform is None else {k for k, u in intervals().items()
                                                      if int(u.lengths.sum()) > BUILD_STEPS}
    programs = _marked(head_programs([r for r in requests if r.kernel not in lazy], chunk_rows), interleaved)
    kw = dict(heads=heads_total, kv_of_q=kv_of_q, leads_group=leads_group, group=group_size,
              capacity_bytes=capacity_bytes, sides=sides, ways=ways)
    costs = {k: int(uniform[k].lengths.sum()) * heads_total if k in lazy else
             cost(programs[k], concurrency.get(k, 1), outer_levels, **kw) for k in kernels}
    split = [k for k in kernels if k not in lazy and lines.touched(programs[k].tensors, programs[k].interleaved)]

    def in_lines() -> int:
        return sum(costs.values()) + sum(cost(programs[k], concurrency.get(k, 1), outer_levels, in_lines=True, **kw)
                                         - costs[k] for k in split)

    def every():                                     # the lazy kernels expanded: played exactly
        built = {**programs, **_marked(head_programs([r for r in requests if r.kernel in lazy], chunk_rows),
                                       interleaved)}
        return {k: built[k] for k in kernels}
    def sample(budget, in_windows, windowed):
        return _sampled_plan(programs, intervals() if windowed else None, lazy, costs, concurrency,
                             (budget, in_windows or budget), chunk_rows, outer_levels,
                             None if windowed or uniform is None else (lambda b, w: sample(b, w, True)), **kw)
    return Plan(sum(costs.values()), lambda limit: replay_programs(every(), concurrency, outer_levels, method, limit,
                                                                   **kw),
                lambda budget, w: None if lazy or outer_levels else sample(budget, w, False),
                None if uniform is None else lambda budget, w: sample(budget, w, True),
                in_lines if split and sides is not None else None)


def _marked(programs: dict, interleaved) -> dict:
    """The programs, each with the run's interleaved buffers (:class:`.lines.Interleaved`)."""
    if interleaved is None:
        return programs
    return {k: dataclasses.replace(p, interleaved=interleaved.for_kernel(k)) for k, p in programs.items()}


def _unequal(u) -> bool:
    """Whether a kernel's thread blocks run programs of more than one length."""
    return len(u.lengths) > 1 and bool((u.lengths != u.lengths[0]).any())


def _sampled_plan(programs: dict, uniform: dict | None, lazy: set, costs: dict, concurrency: dict, budget: tuple,
                  chunk_rows: int, outer_levels: tuple, windowed, *, group: int, **kw) -> Plan | None:
    """Every head of every kernel from a sample of about ``budget`` requests (a pair: that of a
    sample of the chunks, that of the windows), shared among the kernels by their cost: of its
    chunks (:func:`.sampled.plan`), or, given ``uniform``, in
    windows (:func:`.windows.plan`) for a kernel of unequal thread blocks, one not expanded
    (``lazy``), any kernel with caches behind the L2 (``outer_levels``), and one whose chunks
    cannot be sampled within its share (too many thread blocks, or too few chunks:
    :data:`.sampled.MIN_CHUNKS`). ``windowed``: the same in windows, the plan's
    :meth:`Plan.windowed` (where a sample of the chunks cannot be played)."""
    total = max(1, sum(costs.values()))
    parts = []
    for k, c in costs.items():
        share, window_share = (max(1, b * c // total) for b in budget)
        in_windows = uniform is not None and (k in lazy or outer_levels or _unequal(uniform[k]))
        got = None if in_windows else sampled.plan({k: programs[k]}, concurrency, share, chunk_rows, **kw)
        if uniform is not None and (got is None or got[0] > share):
            got = windows.plan({k: uniform[k]}, concurrency, window_share, group=group, outer_levels=outer_levels,
                               **kw)
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
        outer = {k: g.outer for k, g in kernels.items() if g.outer}
        return CacheReport({k: g.stats for k, g in kernels.items()}, {k: concurrency.get(k, 1) for k in kernels},
                           outer or None, sampled=kernels)
    return Plan(sum(p[0] for p in parts), report, _window=windowed)


__all__ = ["BUILD_STEPS", "Plan", "PlayLimit", "plan", "replay"]
