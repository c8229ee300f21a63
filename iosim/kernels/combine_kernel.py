"""flash-attn 2's split-KV combine kernel as compiled for the H200: its blocks, and its chain.

``combine_attn_seqk_parallel`` (flash_fwd_kernel.h) gives each 128-thread block kBlockM of the
B·H·N_q output rows (``kBlockM = kHeadDim % 128 == 0 ? 4 : kHeadDim % 64 == 0 ? 8 : 16``,
flash_fwd_launch_template.h). A block loads its rows' log-sum-exps of every split (one
round trip), reduces them across the block (two barriers, exps, a log) and then walks the
splits one after another: the loop's bound is a run-time value and each iteration's load
lands in the registers the previous one's sum read, so every split waits for its own load.

Measured on the compiled kernel (``benchmarks/sdpa_combine_cost.py``, docs/validation/
2026-12-02-combine-cost.md; H200, ncu's ``gpu__time_duration``, the L2 flushed before each
launch as in every grid): one-wave decode launches (1–16 blocks, d = 64 and 128, 2–64
splits) take 4.05 µs + 0.370 µs a split (residuals within 0.8 µs). A split costs about one
dependent DRAM load (a pointer chase through DRAM: 0.34 µs, ``benchmarks/microbench_latency.py``);
the rest, 1.87 µs past the read-then-write floor, is the log-sum-exp phase. ncu's launch
statistics give 52–64 registers a thread: 9 blocks an SM up to 16 splits, 8 above.
"""

from __future__ import annotations

#: µs past the profile's read-then-write floor before a block's first split (measured: 4.049 − 2.18)
BASE_S = 1.869e-6
#: one split of the chain (measured slope, µs a split)
SPLIT_S = 0.370e-6
#: the kernel's name, as the split-KV tile table names the launch's kernels
KERNEL = "flash-attn 2 split-KV forward (flash_fwd_splitkv_kernel)"


def block_rows(kernel_head_dim: int) -> int:
    """kBlockM: output rows a combine block owns."""
    return 4 if kernel_head_dim % 128 == 0 else 8 if kernel_head_dim % 64 == 0 else 16


def blocks_per_sm(splits: int) -> int:
    """Blocks an SM holds (ncu's register occupancy limit: 9 up to 16 splits, 8 above)."""
    return 9 if splits <= 16 else 8


__all__ = ["BASE_S", "SPLIT_S", "KERNEL", "block_rows", "blocks_per_sm"]
