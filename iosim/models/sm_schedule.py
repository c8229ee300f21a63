"""Which SM works longest: thread blocks placed on the SMs in launch order.

The kernel time model (:mod:`.kernel_time`) times a launch by its busiest SM. Blocks go, in
launch order, to the SM (or, two an SM, the slot) with the least work so far, as the GPU's
block dispatcher gives a freed slot the next block; where two blocks share an SM their steps
overlap at the tile's measured factor (:mod:`iosim.kernels.coresidency`).
"""

from __future__ import annotations

import heapq
import math

#: Above this many thread blocks the busiest SM is bounded by the average, not scheduled.
MAX_SCHEDULED_BLOCKS = 2_000_000
#: what a thread block with no work (a split-KV block whose keys the mask hides) holds its slot
#: for: it still takes its turn in the dispatch, so the blocks after it pair up on the SMs as
#: their launch order places them (measured: a causal split-KV launch of one wave takes its
#: dense twin's time, docs/validation/2026-12-04-empty-blocks.md); then it leaves at once
EMPTY_BLOCK_S = 1e-12


def busiest_sm(durations, sm_count: int, heads: int = 1) -> float:
    """Seconds the busiest SM works when thread blocks of ``durations`` (one head's, in
    launch order, as (seconds, count) runs), launched for each of ``heads`` heads in turn,
    go each to the SM with the least work so far.

    The same as the plain greedy over the list repeated ``heads`` times, without building
    it: equal durations take the closed form ⌈blocks / SMs⌉ · t; above
    :data:`MAX_SCHEDULED_BLOCKS` blocks the busiest SM is bounded by the average (one
    head's work times ``heads``, ÷ SMs) and the longest block; else the heap walks the
    heads one after another, adding the same floats in the same order.
    """
    total_blocks, distinct = blocks_of(durations, heads)
    if total_blocks == 0:
        return 0.0
    if len(distinct) == 1:
        return math.ceil(total_blocks / sm_count) * durations[0][0]
    if total_blocks > MAX_SCHEDULED_BLOCKS:
        return max(sum(t * c for t, c in durations) * heads / sm_count, max(distinct))
    loads = [0.0] * sm_count
    for _ in range(heads):
        for t, c in durations:
            for _ in range(c):
                heapq.heapreplace(loads, loads[0] + t)
    return max(loads)


def blocks_of(durations, heads: int) -> tuple[int, set]:
    """(thread blocks over the heads, their distinct durations)."""
    return sum(c for _, c in durations) * heads, {t for t, _ in durations}


def busiest_sm_shared(durations, sm_count: int, heads: int, coresident: tuple[int, float] | None) -> float:
    """:func:`busiest_sm` where the SM's units overlap the steps of the blocks it holds.

    ``coresident`` = (1, r): each block's warps share the sub-partitions, every block takes
    r × its time. (2, r): two blocks an SM; while two run, the pair takes 2·r × one's time.
    Blocks go in launch order to the least-loaded of 2 × SMs slots (the first wave fills
    one slot of every SM, then the second), each taking 2·r × its time; an SM whose slots
    end at f₁ ≤ f₂ ran its last (f₂ − f₁) alone, at the lone rate: f₁ + (f₂ − f₁)/(2r).
    Equal blocks take the closed form; above :data:`MAX_SCHEDULED_BLOCKS` the average bound.
    """
    if coresident is None:
        return busiest_sm(durations, sm_count, heads)
    blocks, r = coresident
    if blocks == 1:
        return busiest_sm([(t * r, c) for t, c in durations], sm_count, heads)
    total_blocks, distinct = blocks_of(durations, heads)
    if total_blocks == 0:
        return 0.0
    if len(distinct) == 1:
        t = durations[0][0]
        pairs, rest = divmod(total_blocks, 2 * sm_count)
        return 2 * r * t * (pairs + 1) if rest > sm_count else 2 * r * t * pairs + (t if rest else 0.0)
    if total_blocks > MAX_SCHEDULED_BLOCKS:
        return max(sum(t * c for t, c in durations) * heads * r / sm_count, max(distinct))
    slots = [(0.0, i) for i in range(2 * sm_count)]     # slot i: SM i % S, its (i // S)-th
    for _ in range(heads):
        for t, c in durations:
            for _ in range(c):
                load, i = slots[0]
                heapq.heapreplace(slots, (load + (2 * r * t or EMPTY_BLOCK_S), i))
    ends = [0.0] * (2 * sm_count)
    for load, i in slots:
        ends[i] = load
    return max(min(a, b) + abs(a - b) / (2 * r) for a, b in zip(ends[:sm_count], ends[sm_count:]))


__all__ = ["EMPTY_BLOCK_S", "MAX_SCHEDULED_BLOCKS", "blocks_of", "busiest_sm", "busiest_sm_shared"]
