"""Do a launch's thread blocks keep the lockstep of their first wave? A sketch, outside the model
(docs/validation/2026-12-06-s44-check.md, "Lockstep or staggered").

iosim's L2 model gives each thread block its slot in launch order (``stream.schedule``): the first
wave's blocks start together, and where every block runs as many steps, each later wave starts
together too. A GPU's blocks take slightly different times, so over many waves the slots' start
times could part until each block starts one slot's share of a block's time after the one before
it in launch order: the steady state of a launch whose blocks have lost their first wave's step.
This script plays the flash-attn-2 preset's launches of one call both ways through the model
itself, with only the schedule changed:

* ``lockstep``: the model as shipped;
* ``staggered``: slot s first free at round ⌊s · L / S⌋ (L a block's median length in rounds, S
  the slots), then every block to the first free slot in launch order, as the model does.

    python benchmarks/l2_stagger_sketch.py h100-sxm '{"seq_len": 11074, "head_dim": 166, "batch": 9, "heads": 11, "causal": false}'

prints each kernel's DRAM reads (MB) under both. The staggered play goes through the model's
general path (no copies of heads), so it takes minutes and, on launches of tens of GB of
requests, more memory than a small machine has.
"""

from __future__ import annotations

import heapq
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from iosim import Options, load_profile, simulate  # noqa: E402
from iosim.gpu.sdpa import problem_of  # noqa: E402
from iosim.models.cache import rounds, stream  # noqa: E402


def staggered(lengths: np.ndarray, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """(first round, slot) of each block in launch order, slot s first free at ⌊s · L / S⌋."""
    n = len(lengths)
    start, slot = np.empty(n, np.int64), np.empty(n, np.int64)
    if n == 0:
        return start, slot
    period = int(np.median(lengths))
    free = [((s * period) // slots, s) for s in range(min(slots, n))]
    heapq.heapify(free)
    for g, length in enumerate(lengths.tolist()):
        t, s = heapq.heappop(free)
        start[g], slot[g] = t, s
        heapq.heappush(free, (t + length, s))
    return start, slot


def dram_reads(hw: str, cfg: dict) -> dict:
    """kernel -> the L2 model's DRAM reads (bytes) of the call's launches (forward and backward)."""
    r = simulate(load_profile(hw), "fa2", problem_of(cfg), passes="forward+backward",
                 options=Options(kernel="flash-attn-2", cache=True))
    return {k: v["dram_read_bytes"] for k, v in r.to_dict()["l2"]["per_kernel"].items()}


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    hw, cfg = sys.argv[1], json.loads(sys.argv[2])
    cfg.setdefault("seq_len", cfg.get("seq_len_q"))
    lock = dram_reads(hw, cfg)
    shipped = stream.schedule, rounds.schedule
    stream.schedule = rounds.schedule = staggered
    try:
        stag = dram_reads(hw, cfg)
    finally:
        stream.schedule, rounds.schedule = shipped
    print("kernel       lockstep (MB)  staggered (MB)")
    for k in lock:
        print(f"{k:<12} {lock[k] / 1e6:>13,.1f} {stag[k] / 1e6:>15,.1f}")


if __name__ == "__main__":
    main()
