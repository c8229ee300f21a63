"""DRAM reads of spill frames, once per thread-block slot (:mod:`iosim.kernels.spill_frames`).

Some of flash-attn 2's forward kernels reload spilled registers that only some lanes wrote.
The L2 then fills those sectors from DRAM once for each slot's frame, and the blocks that
follow on the slot find them filled. Which slots ever run a block that reaches the stores
follows from the launch order: thread blocks take the slot that frees first, as in
:func:`.stream.schedule`, and a block holds its slot for its key-block steps plus one (its Q
load and O store). With causal masks, the short blocks near a head's start never reach the
stores, and in principle a slot could see only those.
"""

from __future__ import annotations

import dataclasses
import heapq

from .rounds import WAVES


def slots_reached(steps: list[int], reached: list[bool], heads: int, slots: int) -> int:
    """How many of the ``slots`` ever run a thread block that reaches the stores. ``steps`` and
    ``reached`` are given per block of one head, in launch order, and every head has the same
    blocks. Placement is played for at most :data:`.rounds.WAVES` × slots blocks. Past those the
    launch order repeats, so no new slot is reached."""
    total = len(steps) * heads
    if not any(reached) or total == 0:
        return 0
    n = min(slots, total)
    if all(reached):
        return n
    free = [(0, s) for s in range(n)]
    seen: set[int] = set()
    for g in range(min(total, WAVES * n)):
        i = g % len(steps)
        t, s = heapq.heappop(free)
        if reached[i]:
            seen.add(s)
            if len(seen) == n:
                break
        heapq.heappush(free, (t + steps[i] + 1, s))
    return len(seen)


def with_frames(report, kernel: str, nbytes: int):
    """The L2 model's report with ``nbytes`` of spill-frame fills added to ``kernel``'s DRAM
    reads, which are listed apart (``CacheReport.frames``)."""
    stats = dataclasses.replace(report.kernels[kernel])
    stats.dram_read_bytes += nbytes
    return dataclasses.replace(report, kernels={**report.kernels, kernel: stats},
                               frames={**(report.frames or {}), kernel: nbytes})


__all__ = ["slots_reached", "with_frames"]
