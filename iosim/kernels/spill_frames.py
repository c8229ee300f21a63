"""Spilled registers that flash-attn 2's forward reads before every lane has written them.

At head dims that are no kernel size below 64 (d = 40, 48, 56 on the 64 kernel; 8, 16, 24 on
the 32 kernel) flash-attn 2 runs its forward's ``Is_even_K = false`` instantiation. As PyTorch
2.11 compiles it for sm_90, that kernel spills registers, and some of its stores to the spill
frame are predicated by the column check: ``@!P0 STL [R1+…]``, done by the lanes whose 16-byte
chunk of a row lies inside d (5 of the 64 kernel's 8 lanes a row at d = 40) and skipped by the
others. The words are reloaded in every key-block step by every lane. Local memory interleaves
its words by lane, so every 32-byte sector of those words is written in part. The L1 does not
keep them, and the L2 cannot serve a read of a partly written sector without filling it from
DRAM. Each thread-block slot's frame is reused by the blocks that follow on it, so the L2
fills each such sector once per slot: ``bytes_per_thread`` × threads a block, for each slot
that runs a block reaching those stores.

Measured on the H200 (docs/validation/2026-12-04-frames.md): the per-instruction counters
(``ncu --section SourceCounters``) give the predicated stores and their offsets, 16 words a
thread in the non-causal d = 64 kernel and 12 in the causal one (whose masking steps write 4
of the 16 before). The local loads that miss the L1 are those words, to the sector, once per
slot. The DRAM reads beyond Q, K and V are the same bytes: 2.16 MB where all 264 slots run
such blocks, up to 0.37 × the inputs on the small launches measured. Where the key blocks are no more than the masking steps the
block never reaches the stores. The split-KV forward, the even instantiations and d = 72 on the
96 kernel have no such stores: the L1 misses at most 18 KB of their local loads a launch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .coresidency import KERNEL

#: (kHeadDim, causal) -> bytes a thread of frame words that only the lanes inside d write, read
#: by every lane (PyTorch 2.11's sm_90 build, fp16 and bf16 alike; docs/validation/2026-12-04-frames.md)
UNWRITTEN: dict[tuple[int, bool], int] = {
    (64, False): 64,   # 6 STL.64 + 4 STL, all @!P0: 16 words
    (64, True): 48,    # 8 STL.64 @!P0, 4 of whose 16 words the masking steps wrote before
    (32, False): 32,
    (32, True): 24,
}
#: the compute capability of the build read
MEASURED_ON = (9, 0)
UNMEASURED_NOTE = ("flash-attn 2's forward at d = {d} runs its Is_even_K = false instantiation, whose "
                   "sm_90 build reads {b} bytes a thread of spilled registers that some lanes never wrote, "
                   "a DRAM fill per thread-block slot; unmeasured on {arch}, so the L2 model adds none "
                   "(docs/validation/2026-12-04-frames.md)")


@dataclass(frozen=True)
class SpillFrames:
    """What one launch's slots read from DRAM of their spill frames (see the module's docstring)."""

    bytes_per_thread: int
    threads: int         # a thread block's
    masking_steps: int   # the key-block steps before the stores; a block with more reaches them

    def per_slot(self) -> int:
        return self.bytes_per_thread * self.threads

    def reached(self, steps) -> bool:
        """Whether a thread block of ``steps`` key blocks reaches the stores."""
        return steps > self.masking_steps


def even_mn(problem, tile) -> bool:
    """Whether flash-attn 2 runs its ``Is_even_MN`` instantiation for ``problem`` with ``tile``
    (flash_fwd_launch_template.h, flash_bwd_launch_template.h: the forward, split-KV and main
    backward kernels alike): both lengths whole tiles, d the kernel's head dim (``Is_even_K``),
    and kHeadDim ≤ 128 (above it only the uneven one is compiled). The kernel names of all
    committed launches agree (tests/gpu/test_code_replays.py)."""
    return (problem.seq_len_q % tile.block_q == 0 and problem.seq_len_kv % tile.block_kv == 0
            and problem.head_dim == tile.kernel_head_dim and tile.kernel_head_dim <= 128)


def masking_steps(block_q: int, block_kv: int, causal: bool, even: bool = False) -> int:
    """flash_fwd_kernel's ``n_masking_steps`` (and the split-KV kernel's): one without a causal
    mask; causal ⌈kBlockM / kBlockN⌉, one more in the uneven instantiation (the default:
    ``Is_even_MN`` is false wherever ``Is_even_K`` is)."""
    return math.ceil(block_q / block_kv) + (0 if even else 1) if causal else 1


def spill_frames(tile, head_dim: int, causal: bool, compute_capability) -> tuple[SpillFrames | None, str | None]:
    """(the launch's spill frames, or None; a note where the build that would have them was not
    measured) for a flash-attn 2 forward launch with ``tile`` at ``head_dim``."""
    if tile.kernel != KERNEL or head_dim == tile.kernel_head_dim:
        return None, None
    per_thread = UNWRITTEN.get((tile.kernel_head_dim, causal))
    if per_thread is None:
        return None, None
    if tuple(compute_capability or ()) != MEASURED_ON:
        arch = "an unknown GPU" if compute_capability is None else f"sm{compute_capability[0]}{compute_capability[1]}"
        return None, UNMEASURED_NOTE.format(d=head_dim, b=per_thread, arch=arch)
    return SpillFrames(per_thread, 32 * tile.warps, masking_steps(tile.block_q, tile.block_kv, causal)), None


__all__ = ["SpillFrames", "UNWRITTEN", "even_mn", "masking_steps", "spill_frames"]
