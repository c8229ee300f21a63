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

import numpy as np

from .rounds import WAVES
from .stream import schedule


def slots_reached(steps: list[int], reached: list[bool], heads: int, slots: int) -> int:
    """How many of the ``slots`` ever run a thread block that reaches the stores. ``steps`` and
    ``reached`` are given per block of one head, in launch order, and every head has the same
    blocks. Placement (:func:`.stream.schedule`) is played for the heads that fill the slots
    :data:`.rounds.WAVES` times over. Past those the launch order repeats, so no new slot is reached."""
    if not any(reached) or not steps or not heads:
        return 0
    played = min(heads, -(-WAVES * slots // len(steps)))
    _, slot = schedule(np.tile(np.asarray(steps, np.int64) + 1, played), slots)
    return len(np.unique(slot[np.tile(np.asarray(reached, bool), played)]))


__all__ = ["slots_reached"]
