"""The (B_r, B_c) grids explore tries.

* ``tensor-core`` (the default): multiples of 16 along both axes — the granularity of
  the tensor cores' matrix products (``mma.sync`` m16n8k16 in fp16/bf16) that every
  FlashAttention kernel tiles by — from 16 up to the largest that fits the per-block
  shared memory with 16 along the other axis. With a real kernel's forward time model
  (``kernel=``) the query rows step by gcd(16 × the kernel's warps, its own B_r) instead:
  its forward kernels stack their warps along the query rows, 16 rows each (64 for
  FlashAttention-2's 4-warp tiles and FlashAttention-3's 128-row ones).
* ``all``: the powers of two and the multiples of 16, from 1, up to what fits with 1
  along the other axis — the paper's abstract machine, where 496 × 2 is a tile.

Either way the largest fitting value is found by bisection on the schedule's own
shared-memory need, and the grid stops at the sequence length (rounded up to the step).
Of the rectangle rows × columns, only the tiles that fit — in shared memory, and in the
register file unless spills are allowed — and the first one past the edge on each row
are run (:func:`within_edge`): both needs grow along both axes, so the rest cannot fit
either.
"""

from __future__ import annotations

from typing import Callable

from ...errors import ProblemError

GRIDS = ("tensor-core", "all")
#: rows and columns of the tensor cores' matrix-product tiles
MMA_STEP = 16


def default_grid(limit: int) -> list[int]:
    """The ``all`` grid along one axis: powers of two and multiples of 16, up to ``limit``."""
    values = {1 << k for k in range(limit.bit_length()) if 1 << k <= limit}
    values |= set(range(16, limit + 1, 16))
    return sorted(values)


def step_grid(step: int, limit: int) -> list[int]:
    """The ``tensor-core`` grid along one axis: step, 2·step, … up to ``limit``."""
    return list(range(step, limit + 1, step))


def largest_fitting(need: Callable[[int], int], step: int, top: int, capacity: int) -> int:
    """The largest multiple of ``step`` up to ``top`` whose ``need`` fits ``capacity``
    (0 if ``step`` itself does not): a bisection, the need growing with the block."""
    if need(step) > capacity:
        return 0
    lo, hi = 1, max(1, top // step)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if need(mid * step) <= capacity:
            lo = mid
        else:
            hi = mid - 1
    return lo * step


def grid_axes(grid: str, need: Callable[[tuple[int, int]], int], seq_q: int, seq_kv: int, capacity: int,
              row_step: int = MMA_STEP, label: str = "") -> tuple[dict, list[int], list[int]]:
    """(the largest fitting block per axis, the rows, the columns) of ``grid``; ``label``
    starts the error when nothing fits."""
    if grid == "all":
        steps, other = (1, 1), (1, 1)
    else:
        steps, other = (row_step, MMA_STEP), (MMA_STEP, row_step)
    tops = (_round_up(seq_q, steps[0]), _round_up(seq_kv, steps[1]))
    limits = {"block_q": largest_fitting(lambda b: need((b, other[0])), steps[0], tops[0], capacity),
              "block_kv": largest_fitting(lambda b: need((other[1], b)), steps[1], tops[1], capacity)}
    if 0 in limits.values():
        smallest = "1-row" if grid == "all" else f"{steps[0]}×{MMA_STEP}"
        hint = "" if grid == "all" else " (--grid all tries smaller ones)"
        raise ProblemError(f"{label}even {smallest} tiles do not fit in {capacity:,} B of shared memory{hint}")
    if grid == "all":
        return limits, default_grid(limits["block_q"]), default_grid(limits["block_kv"])
    return limits, step_grid(steps[0], limits["block_q"]), step_grid(steps[1], limits["block_kv"])


def frontier(rows: list[int], cols: list[int], fits: Callable[[tuple[int, int]], bool]) -> list[int]:
    """For each of ``rows`` (ascending), how many of ``cols`` (ascending) ``fits``. What a
    tile needs grows along both axes, so the edge is a staircase: one walk down it costs
    at most len(rows) + len(cols) counts."""
    out, k = [], len(cols)
    for r in rows:
        while k > 0 and not fits((r, cols[k - 1])):
            k -= 1
        out.append(k)
    return out


def within_edge(rows: list[int], cols: list[int], fits: Callable[[tuple[int, int]], bool]) -> list:
    """The tiles of rows × cols that fit, and the first past the edge on each row (to show
    why it stops); tiles further out do not fit either and are not run."""
    tiles = []
    for r, k in zip(rows, frontier(rows, cols, fits)):
        tiles += [(r, c) for c in cols[:k + 1]]
        if k == 0:
            break
    return tiles


def _round_up(n: int, step: int) -> int:
    return -(-n // step) * step


__all__ = ["GRIDS", "MMA_STEP", "default_grid", "step_grid", "largest_fitting", "grid_axes", "frontier",
           "within_edge"]
