"""How much faster a flash-attn 2 forward block steps when its SM holds a second one (H200).

The kernel time model adds a thread block's steps at the SM's share of each unit's rate
(:mod:`iosim.models.kernel_time`). That is right for one block an SM, and 1.2-1.4× too
slow when two share it: their warps share each sub-partition's tensor core, special-
function and fp32 units, and one block's phases fill the other's gaps. The factor is
measured on the compiled kernels, not fitted to the predicted launches:
``benchmarks/sdpa_block_cost.py`` times each forward kernel under Nsight Compute with one
query block a head, 132 and 264 blocks (one and two an SM) and 2-128 key-block steps
(docs/validation/2026-12-02-block-cost.md). Time is linear in the steps (residuals under
3 µs), and the ratio of the two slopes is the factor, free of the launch's fixed costs:
r = slope(264) / (2 · slope(132)). The first estimates came from an emulation of each
kernel's step (``benchmarks/microbench_overlap.py``, docs/validation/2026-12-01-overlap.md);
it was off by up to 0.15 (d = 96: 0.864 emulated, 0.715 measured), and its values remain
only where the compiled kernel could not be measured this way. Keyed by the kernel's tile as the launch
template compiles it: (B_r, B_c, warps, kHeadDim) ->

* ``(2, r)``: 4-warp kernels, two resident an SM (255 registers a thread): while two run,
  the pair makes one step each in 2·r of a lone block's step time (r = 1: no overlap,
  r = 0.5: each as fast as alone);
* ``(1, r)``: the 8-warp kernel (one block an SM, two warps a sub-partition): its block-step
  takes ``r`` × the model's serial sum of its step (the factor that makes that sum the
  measured step; its wait for its own first and last tiles is not scaled).

Tiles that are not in the table (other kernels, the split-KV forward, whose occupancy is
not measured) keep the serial sum. The factor travels with the kernel's tile
(``KernelTile.coresident``): ``iosim explore --kernel flash-attn-2`` keeps the kernel's own
tile's factor for every tile it tries (measured across kernels it is 0.67-0.89), so its
ranking and ``simulate`` agree on the kernel's tile.
"""

from __future__ import annotations

#: the kernel these factors are for (KernelTile.kernel of the flash-attn 2 forward table)
KERNEL = "flash-attn 2 forward (flash_fwd_kernel)"

#: (B_r, B_c, warps, kHeadDim) -> (blocks an SM, step factor): slope(264) / 2·slope(132) of
#: docs/validation/2026-12-02-block-cost/block_cost.json (µs per 1,024 keys), except where noted
FACTORS: dict[tuple[int, int, int, int], tuple[int, float]] = {
    (128, 128, 4, 32): (2, 0.668),     # 20.91 / (2 × 15.65)
    (128, 128, 4, 64): (2, 0.798),     # 29.77 / (2 × 18.65)
    (128, 64, 4, 64): (2, 0.894),      # dropout's tile, emulated (overlap.json): 0.791 / 0.884 µs
    (128, 64, 4, 96): (2, 0.715),      # 38.93 / (2 × 27.22)
    (128, 64, 4, 128): (2, 0.798),     # 49.99 / (2 × 31.34)
    (64, 64, 4, 192): (2, 0.877),      # dropout's tile, emulated: 1.071 / 1.221 µs
    # emulated (1.745 / 2.200 µs): with 66 heads of 2 blocks PyTorch picks the split-KV kernel,
    # so the compiled kernel has no one-block-an-SM launch to measure
    (64, 64, 4, 256): (2, 0.793),
    # one block an SM: no lone baseline on the compiled kernel; the factor that makes the
    # model's serial step (56.34 µs per 1,024 keys at r = 1) the measured one (40.83)
    (128, 64, 8, 192): (1, 0.725),
}


def coresident_factor(kernel: str, block_q: int, block_kv: int, warps: int, kernel_head_dim: int):
    """(blocks an SM, step factor) of a flash-attn 2 forward tile, or None where unmeasured."""
    if kernel != KERNEL:
        return None
    return FACTORS.get((block_q, block_kv, warps, kernel_head_dim))


__all__ = ["coresident_factor", "FACTORS", "KERNEL"]
