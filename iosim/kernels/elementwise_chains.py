"""flash-attn 2's two element-wise backward kernels as compiled for the H200: a lone block's duration.

``flash_bwd_dot_do_o_kernel`` (D = rowsum(dO ∘ O), and dQaccum cleared) and
``flash_bwd_convert_dq_kernel`` (dQ = scale · dQaccum, fp32 to fp16) give each 256-thread block
the backward's B_r query rows of a head. Neither has matrix products, so the kernel time model
timed both as their bytes at the copy rate above the read-then-write floor (2.18 µs, a kernel of
one 2 KiB load and store). Their blocks take longer than that floor alone: they hold 32–83
registers a thread (ncu's launch statistics, docs/validation/2026-11-29-sdpa-launch/), too few to
keep a tile's loads in flight at once, so a block waits several dependent round trips.

Measured on the compiled kernels (``benchmarks/sdpa_small_cost.py``,
docs/validation/2026-12-04-small-cost.md; H200, ncu's ``gpu__time_duration``, the L2 flushed before
each launch as in every grid), a launch of one block, median of three, µs, by kHeadDim:

* convert_dq reads its whole dQaccum tile (fp32, rows rounded to B_r) whatever the valid rows,
  and takes the same time with 1, 16, B_r/2 or B_r of them (within 0.8 µs, 0.3 below kHeadDim 256);
* dot_do_o reads only the valid rows of dO and O: 2.5–3.5 µs with one, 3.1–4.9 µs with B_r.

The uneven instantiations measured beside them (d = 40 on the 64 kernel, 160 on the 192) are
within 0.3 µs of their kernel's even one.
"""

from __future__ import annotations

#: kHeadDim -> (one valid row, B_r valid rows): a one-block dot_do_o launch, seconds
DOT_DO_O_S: dict[int, tuple[float, float]] = {
    32: (2.53e-6, 3.07e-6),
    64: (2.85e-6, 4.13e-6),
    96: (3.07e-6, 3.46e-6),
    128: (2.94e-6, 3.90e-6),
    192: (3.20e-6, 4.54e-6),
    256: (3.52e-6, 4.86e-6),
}
#: kHeadDim -> a one-block convert_dq launch, seconds (any number of valid rows)
CONVERT_DQ_S: dict[int, float] = {32: 3.26e-6, 64: 5.60e-6, 96: 4.67e-6, 128: 5.44e-6, 192: 7.20e-6, 256: 7.74e-6}


def lone_block_s(kernel: str, kernel_head_dim: int, rows: int, block_rows: int) -> float | None:
    """A one-block launch of ``kernel`` ("dot_do_o" or "convert_dq") whose block holds ``rows``
    valid query rows of ``block_rows``, or None where unmeasured: dot_do_o's between its one-row
    and whole-block measurements, in proportion to the rows (its loads are the valid rows')."""
    if kernel == "convert_dq":
        return CONVERT_DQ_S.get(kernel_head_dim)
    if kernel != "dot_do_o" or kernel_head_dim not in DOT_DO_O_S:
        return None
    one, full = DOT_DO_O_S[kernel_head_dim]
    return one + (full - one) * (min(rows, block_rows) - 1) / (block_rows - 1)   # rows ≥ 1, B_r ≥ 64


__all__ = ["DOT_DO_O_S", "CONVERT_DQ_S", "lone_block_s"]
