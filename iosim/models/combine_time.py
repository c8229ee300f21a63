"""flash-attn 2's split-KV combine kernel: a chain of dependent loads, one a split.

The kernel moves few bytes, so neither its memory rate nor the copy rate bounds it: each of
its blocks waits for its rows' log-sum-exps, then for each split's partial output in turn
(:mod:`iosim.kernels.combine_kernel`). A launch takes the read-then-write floor plus the
longest of

* the chain: each wave of blocks (kBlockM rows a block, 8–9 blocks an SM) waits the
  log-sum-exp phase and one load a split, all measured on the compiled kernel; and the
  partial outputs stream from DRAM as they arrive (every byte the kernel reads at the DRAM
  read rate, added: a split's load waits its round trip, then its bytes arrive at the
  DRAM's rate);
* the memory times the other kernels have (:func:`.launch_time.memory_seconds`).

Only where the rates are the H200's measured ones (the chain was measured there); elsewhere
the combine keeps the memory-bound model.
"""

from __future__ import annotations

import dataclasses
import math

from ..kernels import combine_kernel as ck
from .launch_time import combine
from .roofline import TimePrediction

#: the per-resource key of the combine's chain of dependent loads
CHAIN = "dependent loads, one a split"


def predict(base: TimePrediction, rates, *, splits: int, rows: int, kernel_head_dim: int,
            reads: int) -> TimePrediction:
    """``base`` (the memory-bound prediction of the combine launch) with the chain: ``splits``
    S, ``rows`` B·H·N_q output rows, ``reads`` the bytes the kernel loads (all heads)."""
    blocks = math.ceil(rows / ck.block_rows(kernel_head_dim))
    waves = math.ceil(blocks / (rates.sm_count * ck.blocks_per_sm(splits)))
    chain = waves * (ck.BASE_S + splits * ck.SPLIT_S) + reads / rates.dram_bytes
    out = combine({**base.per_resource_s, CHAIN: chain}, chain, [CHAIN])
    if not out.bound.startswith("compute"):
        return out
    plural = lambda n, word: f"{n} {word}{'s' if n > 1 else ''}"  # noqa: E731
    return dataclasses.replace(out, bound=f"{CHAIN} ({plural(splits, 'split')}; {plural(blocks, 'block')}, "
                                          f"{plural(waves, 'wave')})")


__all__ = ["CHAIN", "predict"]
