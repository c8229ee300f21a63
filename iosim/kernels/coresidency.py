"""The steps of flash-attn 2's compiled kernels on the H200, measured: how two co-resident
forward blocks overlap, how the backward's 8 warps do, a lone forward block's step, and the
same for head dims that run a kernel's uneven (``Is_even_K = false``) instantiation.

Tables, each keyed by the kernel's tile (B_r, B_c, warps, kHeadDim): ``FACTORS`` (forward,
below), ``BACKWARD_FACTORS`` and ``STEP_FACTORS`` (docs/validation/2026-12-02-bwd-step.md),
their ``UNEVEN_`` forms (docs/validation/2026-12-02-uneven-k.md) and ``SPLITKV_FACTORS``
(docs/validation/2026-12-04-splitkv-step.md).
``benchmarks/step_factors.py`` re-derives each from the committed measurements. These are
calibrations of each compiled kernel on controlled launches; the committed SDPA grids and
the prospective checks (docs/validation/2026-12-02-step-check.md) test them.

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

Tiles in no table (other kernels) keep the serial sum; the split-KV forward's tiles have their own measured pair factors
(``SPLITKV_FACTORS``). The factor travels with the kernel's tile (``KernelTile.coresident``):
``iosim explore --kernel flash-attn-2`` keeps the kernel's own tile's factor for every tile it tries
(measured across kernels it is 0.67-0.89), so its ranking and ``simulate`` agree on the kernel's tile.
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
    # 54.13 / (2 × 31.43): SDPA's 264 blocks over flash-attn's variable-length entry's 132 (with
    # 132 blocks SDPA runs the split-KV kernel; the varlen entry never splits a non-decode:
    # docs/validation/2026-12-04-wide-step.md). Emulated until session 27: 0.793
    (64, 64, 4, 256): (2, 0.861),
    # one block an SM: no lone baseline on the compiled kernel; the factor that makes the
    # model's serial step (56.34 µs per 1,024 keys at r = 1) the measured one (40.83)
    (128, 64, 8, 192): (1, 0.725),
}


#: the backward kernel (KernelTile.kernel of the flash-attn 2 backward table)
BACKWARD = "flash-attn 2 backward (flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel)"

#: The backward kernel holds one block of 8 warps an SM, two warps a sub-partition, whose
#: phases overlap within each barrier-to-barrier step: (1, r), r = the measured step ÷ the
#: model's serial sum, on launches where every block walks the same query blocks (one head of
#: 132 key blocks, N_q = 256 … 4,096: docs/validation/2026-12-02-bwd-step.md, slopes in µs per
#: 1,024 query rows, measured / model). Calibrated, as the 8-warp d = 192 forward's is.
BACKWARD_FACTORS: dict[tuple[int, int, int, int], tuple[int, float]] = {
    (128, 128, 8, 32): (1, 0.914),     # 24.77 / 27.10
    (128, 128, 8, 64): (1, 0.890),     # 37.70 / 42.34
    (64, 128, 8, 96): (1, 0.835),      # 53.91 / 64.53
    (64, 128, 8, 128): (1, 0.867),     # 69.38 / 80.00
    (64, 64, 8, 192): (1, 0.960),      # 62.72 / 65.31
    (64, 64, 8, 256): (1, 0.990),      # 83.19 / 84.06
}

#: A lone 4-warp forward block's measured step ÷ the model's serial sum (the "model's b₁₃₂ ÷
#: measured" column of docs/validation/2026-12-02-block-cost.md, inverted): what the four
#: units' sum leaves out — the instructions that are none of them and the one warp a
#: scheduler's dependent stalls (ncu: 1.4–1.6 instructions a cycle, 37 % of issue slots, for
#: d = 32–128: docs/validation/2026-12-02-bwd-step.md). Scales every step of the tile, alone
#: or paired (r above is a ratio of two measured slopes, free of it).
STEP_FACTORS: dict[tuple[int, int, int, int], float] = {
    (128, 128, 4, 32): 1 / 0.742,
    (128, 128, 4, 64): 1 / 0.941,
    (128, 64, 4, 96): 1 / 0.910,
    (128, 64, 4, 128): 1 / 0.994,
    (64, 64, 4, 256): 31.43 / 36.61,   # the varlen entry's 132 blocks (docs/validation/2026-12-04-wide-step.md)
}


#: Head dims that are no kernel size (d = 8 … 24 on the 32 kernel; 40, 48 on 64; 72 on 96; 112 on
#: 128; 160 on 192; 200 … 248 on 256) run the kernel's ``Is_even_K = false`` instantiation: every
#: head-dim-wide load and store is predicated column by column and the columns past d are cleared.
#: Measured beside the kernel sizes (``benchmarks/sdpa_uneven_cost.py``,
#: docs/validation/2026-12-02-uneven-k.md; the 32 kernel's in session 26), its steps are 8–37 %
#: slower than the even kernel's at the same (padded) work (the 32 kernel's: 12 % lone, 17 %
#: backward), the same at d = 40 and 48 (within 1 %), 5 % apart at d = 16 and 24. Slopes in µs
#: per 1,024 keys (forward) or query rows (backward), measured / the model's serial sum:
UNEVEN_FACTORS: dict[tuple[int, int, int, int], tuple[int, float]] = {
    (128, 128, 4, 32): (2, 0.673),     # d = 16: 23.46 / (2 × 17.44)   (d = 24: 0.660)
    (128, 128, 4, 64): (2, 0.699),     # d = 40: 33.46 / (2 × 23.95)   (d = 48: 0.703)
    (128, 64, 4, 96): (2, 0.721),      # d = 72: 42.78 / (2 × 29.68)
    (128, 64, 4, 128): (2, 0.817),     # d = 112: 55.08 / (2 × 33.71)
    (128, 64, 8, 192): (1, 0.800),     # d = 160: 44.82 / 56.02 (one block an SM)
    # d = 224: 64.48 / (2 × 36.68), the lone step from the varlen entry (session 27,
    # docs/validation/2026-12-04-wide-step.md; d = 200 and 240 beside it: 66.07 and 63.84 a pair)
    (64, 64, 4, 256): (2, 0.879),
}
UNEVEN_STEP_FACTORS: dict[tuple[int, int, int, int], float] = {
    (128, 128, 4, 32): 17.44 / 11.53,  # d = 16 lone (d = 24: 18.30 / 11.57)
    (128, 128, 4, 64): 23.95 / 17.43,  # d = 40 lone (d = 48: 23.86 / 17.47)
    (128, 64, 4, 96): 29.68 / 24.55,   # d = 72
    (128, 64, 4, 128): 33.71 / 30.99,  # d = 112
    (64, 64, 4, 256): 36.68 / 36.45,   # d = 224 lone (the varlen entry)
}
UNEVEN_BACKWARD_FACTORS: dict[tuple[int, int, int, int], tuple[int, float]] = {
    (128, 128, 8, 32): (1, 1.071),     # d = 16: 28.83 / 26.91   (d = 24: 28.99 / 27.01 = 1.073)
    (128, 128, 8, 64): (1, 1.002),     # d = 40: 42.13 / 42.05   (d = 48: 41.72 / 42.15 = 0.990)
    (64, 128, 8, 96): (1, 0.963),      # d = 72: 61.69 / 64.06
    (64, 128, 8, 128): (1, 0.940),     # d = 112: 74.90 / 79.69
    (64, 64, 8, 192): (1, 1.034),      # d = 160: 67.11 / 64.92
    (64, 64, 8, 256): (1, 1.093),      # d = 224: 91.43 / 83.67
}


#: The backward's ``Is_even_MN = false`` instantiation at the kernel sizes up to kHeadDim 128 (lengths
#: that are no multiple of the tiles: every load and store of a row tile predicated). Measured like
#: ``BACKWARD_FACTORS`` with both lengths one short of the tiles (one head of 132 key blocks,
#: N_q = 128·s − 1; docs/validation/2026-12-04-bwd-heads.md, session 27): its step is 18 %, 6 % and
#: 11 % slower than the even one's at kHeadDim 32, 64 and 96, the same at 128. Causal launches step
#: alike in both instantiations (8 heads at N = 4,095 against 4,096: 0.98–1.05), so the factor is the
#: dense launches'. (The uneven head dims' factors above were measured on it already: flash-attn sets
#: Is_even_MN false wherever Is_even_K is.)
UNEVEN_MN_BACKWARD_FACTORS: dict[tuple[int, int, int, int], tuple[int, float]] = {
    (128, 128, 8, 32): (1, 1.078),     # 29.22 / 27.10
    (128, 128, 8, 64): (1, 0.946),     # 40.05 / 42.34
    (64, 128, 8, 96): (1, 0.926),      # 59.76 / 64.53
    (64, 128, 8, 128): (1, 0.867),     # 69.33 / 80.00
}


#: the split-KV forward kernel (KernelTile.kernel of the split-KV table)
SPLITKV = "flash-attn 2 split-KV forward (flash_fwd_splitkv_kernel)"

#: The split-KV forward's tiles hold two blocks an SM too (244-255 registers a thread: ncu's
#: launch statistics, docs/validation/2026-12-02-combine-cost/occupancy_ncu.csv), and PyTorch's
#: split heuristic aims at two on every SM (it counts 2 × 132 slots), so that pair is what nearly
#: every split-KV launch runs. Measured on the compiled kernel (``benchmarks/sdpa_splitkv_cost.py``,
#: docs/validation/2026-12-04-splitkv-step.md): one query block a head, 66 heads in 4 splits (264
#: blocks), 2-32 key blocks a block, one K/V head so the keys stay in the L2 and the slope is the
#: step itself; r = the measured slope ÷ the model's serial slope of two blocks (µs per key block).
#: Until then they borrowed the forward's factors (0.67-0.88), off by up to 0.17.
SPLITKV_FACTORS: dict[tuple[int, int, int, int], tuple[int, float]] = {
    (64, 256, 4, 32): (2, 0.776),      # 2.61 / 3.36
    (64, 256, 4, 64): (2, 0.720),      # 3.83 / 5.32
    (64, 128, 4, 96): (2, 0.827),      # 3.07 / 3.72
    (64, 128, 4, 128): (2, 0.706),     # 3.33 / 4.72
    (64, 64, 4, 192): (2, 0.711),      # 2.50 / 3.52
    (64, 64, 4, 256): (2, 0.722),      # 3.30 / 4.58
}
#: the same for the uneven instantiations (d = 16 on the 32 kernel: a second run, d = 24 there
#: 0.964; d = 40, 72, 112, 160, 224 on the 64 … 256 kernels)
UNEVEN_SPLITKV_FACTORS: dict[tuple[int, int, int, int], tuple[int, float]] = {
    (64, 256, 4, 32): (2, 0.893),      # d = 16: 3.00 / 3.35
    (64, 256, 4, 64): (2, 0.885),      # d = 40: 4.70 / 5.30
    (64, 128, 4, 96): (2, 0.937),      # d = 72: 3.47 / 3.70
    (64, 128, 4, 128): (2, 0.850),     # d = 112: 4.00 / 4.71
    (64, 64, 4, 192): (2, 0.838),      # d = 160: 2.93 / 3.50
    (64, 64, 4, 256): (2, 0.862),      # d = 224: 3.93 / 4.56
}


#: kernel -> (the tables of its kernel-size tiles, those of its uneven instantiation: the first
#: that has the tile gives its factor); by name, looked up when asked
_PAIR_TABLES = {KERNEL: (("FACTORS",), ("UNEVEN_FACTORS", "FACTORS")),
                BACKWARD: (("BACKWARD_FACTORS",), ("UNEVEN_BACKWARD_FACTORS", "BACKWARD_FACTORS")),
                SPLITKV: (("SPLITKV_FACTORS",), ("UNEVEN_SPLITKV_FACTORS",))}
_STEP_TABLES = {KERNEL: (("STEP_FACTORS",), ("UNEVEN_STEP_FACTORS", "STEP_FACTORS"))}
_UNEVEN_MN_TABLES = {BACKWARD: (("UNEVEN_MN_BACKWARD_FACTORS",), ())}


def _lookup(tables: dict, kernel: str, key: tuple, even_k: bool, default):
    names = tables.get(kernel, ((), ()))[0 if even_k else 1]
    return next((globals()[n][key] for n in names if key in globals()[n]), default)


def coresident_factor(kernel: str, block_q: int, block_kv: int, warps: int, kernel_head_dim: int,
                      even_k: bool = True):
    """(blocks an SM, step factor) of a flash-attn 2 forward, backward or split-KV tile, or None
    where unmeasured; ``even_k``: d is the kernel's head dim (else its uneven instantiation's,
    where measured, and the even one's where not)."""
    return _lookup(_PAIR_TABLES, kernel, (block_q, block_kv, warps, kernel_head_dim), even_k, None)


def step_factor(kernel: str, block_q: int, block_kv: int, warps: int, kernel_head_dim: int,
                even_k: bool = True) -> float:
    """A lone forward block's measured step over the model's, or 1 where unmeasured."""
    return _lookup(_STEP_TABLES, kernel, (block_q, block_kv, warps, kernel_head_dim), even_k, 1.0)


def uneven_mn_factor(kernel: str, block_q: int, block_kv: int, warps: int, kernel_head_dim: int):
    """(blocks an SM, step factor) of a backward tile's ``Is_even_MN = false`` instantiation at a
    kernel size, or None where unmeasured (other kernels)."""
    return _lookup(_UNEVEN_MN_TABLES, kernel, (block_q, block_kv, warps, kernel_head_dim), True, None)


__all__ = ["coresident_factor", "step_factor", "uneven_mn_factor", "FACTORS", "BACKWARD_FACTORS", "STEP_FACTORS",
           "UNEVEN_FACTORS", "UNEVEN_BACKWARD_FACTORS", "UNEVEN_STEP_FACTORS", "UNEVEN_MN_BACKWARD_FACTORS",
           "SPLITKV_FACTORS", "UNEVEN_SPLITKV_FACTORS", "KERNEL", "BACKWARD", "SPLITKV"]
