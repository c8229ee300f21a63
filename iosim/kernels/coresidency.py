"""How much faster a flash-attn 2 forward block steps when its SM holds a second one (H200).

The kernel time model adds a thread block's steps at the SM's share of each unit's rate
(:mod:`iosim.models.kernel_time`). That is right for one block an SM, and 1.2-1.4× too
slow when two share it: their warps share each sub-partition's tensor core, special-
function and fp32 units, and one block's phases fill the other's gaps. The factor is
measured, not fitted: ``benchmarks/microbench_overlap.py`` runs flash-attn 2's forward
step with each kernel's warp tile (``ldmatrix`` + ``mma.sync`` products, the online
softmax, the two barriers; no global memory) with one and with two blocks an SM, on an
H200 (docs/validation/2026-12-01-overlap.md). Keyed by the kernel's tile as the launch
template compiles it: (B_r, B_c, warps, kHeadDim) ->

* ``(2, r)``: 4-warp kernels, two resident an SM (255 registers a thread): while two run,
  the pair makes one step each in 2·r of a lone block's step time (r = 1: no overlap,
  r = 0.5: each as fast as alone);
* ``(1, r)``: the 8-warp kernel (one block an SM): its block-step takes ``r`` × the time of
  its two 4-warp halves run alone one after the other.

Tiles that are not in the table (other kernels, the split-KV forward, whose occupancy is
not measured) keep the serial sum. The factor travels with the kernel's tile
(``KernelTile.coresident``): ``iosim explore --kernel flash-attn-2`` keeps the kernel's own
tile's factor for every tile it tries (measured across tiles it is 0.73-0.89), so its
ranking and ``simulate`` agree on the kernel's tile.
"""

from __future__ import annotations

#: the kernel these factors are for (KernelTile.kernel of the flash-attn 2 forward table)
KERNEL = "flash-attn 2 forward (flash_fwd_kernel)"

#: (B_r, B_c, warps, kHeadDim) -> (blocks an SM, step factor); the factor is step_c2_s / step_c1_s of
#: docs/validation/2026-12-01-overlap/overlap.json (the 8-warp kernel: its step_c1_s / 2 × its half's)
FACTORS: dict[tuple[int, int, int, int], tuple[int, float]] = {
    (128, 128, 4, 32): (2, 0.763),     # 1.233 / 1.616 µs
    (128, 128, 4, 64): (2, 0.754),     # 1.988 / 2.636 µs
    (128, 64, 4, 64): (2, 0.894),      # dropout's tile: 0.791 / 0.884 µs
    (128, 64, 4, 96): (2, 0.864),      # 1.119 / 1.295 µs
    (128, 64, 4, 128): (2, 0.731),     # 1.691 / 2.313 µs
    (64, 64, 4, 192): (2, 0.877),      # dropout's tile: 1.071 / 1.221 µs
    (64, 64, 4, 256): (2, 0.793),      # 1.745 / 2.200 µs
    (128, 64, 8, 192): (1, 0.926),     # 2.260 / (2 × 1.221) µs
}


def coresident_factor(kernel: str, block_q: int, block_kv: int, warps: int, kernel_head_dim: int):
    """(blocks an SM, step factor) of a flash-attn 2 forward tile, or None where unmeasured."""
    if kernel != KERNEL:
        return None
    return FACTORS.get((block_q, block_kv, warps, kernel_head_dim))


__all__ = ["coresident_factor", "FACTORS", "KERNEL"]
