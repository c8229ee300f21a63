"""Where the L2 model's DRAM reads of flash-attn 2's backward are known to part from the GPU's, by the
size of the rows its thread blocks walk: one query head's Q, dO and fp32 dQaccum rows
(:data:`LONG_BACKWARD_NOTE`), or the rows of the query heads whose blocks are resident at once
(:data:`WAVE_ROWS_NOTE`), against half an L2 partition. The figures are the committed runs'
(docs/known-limits.md; tests/gpu/test_status_rows.py holds them to the rows)."""

from __future__ import annotations

from ..engine.tensors import rounded_head_size
from ..workload.problem import Problem
from .tile_tables import KernelTile


def half_partition(profile) -> float | None:
    """Half of one partition of ``profile``'s L2 (bytes), or None without an L2 model."""
    cache = profile.cache
    return None if cache is None else cache.capacity_bytes / max(1, cache.partitions) / 2


def wave_slots(tile: KernelTile, profile) -> int:
    """Thread blocks of ``tile`` resident at once on ``profile``'s GPU: one wave."""
    return tile.coresident[0] * profile.sm_count


#: a backward whose query head's Q, dO and dQaccum rows pass half an L2 partition: where the L2
#: model's DRAM reads part from the H200's, both ways (the committed grids' 75 such backwards, sessions 31-49;
#: figures of session 49)
LONG_BACKWARD_NOTE = (
    "not exact: a backward whose query head's Q, dO and fp32 dQaccum rows ({rows:.1f} MB, dQaccum at flash-attn's "
    "rounded head size), which its key blocks walk together, pass half an L2 partition ({half:.1f} MB); on the "
    "H200 the model's DRAM reads of 75 such backwards were 0.36-1.32 x the measured (67 within 10 %), where below "
    "that size 446 of 449 of more than 16 query rows were within 10 % (the others 1.10, 1.14 and 1.14); why was "
    "not measured (docs/cache.md, \"Sets\"); the far ones are flash-attn's 192 kernel at head dims that are not "
    "its size over many waves, as on an H100 below (d = 160 and 176 over 96 waves, 0.40 and 0.35; d = 166 over "
    "130 waves, 1.33: grids s38 and s44 on the H200, session 49). "
    "On an H100, such backwards of flash-attn's 192 kernel at head dims that are not its size (its uneven "
    "instantiation; d = 152 to 176 measured) part far from the model over many waves of thread blocks, most "
    "reading more: the model gave 0.25-1.30 of it on 8 launches of 24 to 130 waves (one over: d = 166 over 130 "
    "waves; 0.99 at 8 waves; 1.05 at 10,000 query rows over 96), and at d = 192 over 96 waves 1.00, at d = 120 "
    "and 240 1.01 and 1.02; on the two of grid s44 the measured reads lay between the model's lockstep blocks "
    "and blocks started one slot's share of a block apart (benchmarks/l2_stagger_sketch.py) "
    "(docs/validation/2026-12-05-s38-check.md, \"On an H100\"; docs/validation/2026-12-06-s44-check.md)")


#: a backward whose query heads resident at once (a wave of blocks over their heads, the wave straddling
#: heads as launch order gives it) walk rows past half an L2 partition, where one head's rows do not
WAVE_ROWS_NOTE = (
    "not exact: a backward whose query heads with blocks resident at once (up to {heads:,}: {slots:,} blocks at "
    "once, {per_head:,} a head) walk Q, dO and fp32 dQaccum rows ({rows:.1f} MB in all) past half an L2 partition "
    "({half:.1f} MB), though one head's rows do not; on the H200 the model's DRAM reads of 145 such backwards were "
    "0.99-1.14 x the measured (142 within 10 %), the only misses below the long backwards' size of more than 16 "
    "query rows: the 304 others of those were all within 10 % (docs/known-limits.md)")


def _rows(problem: Problem) -> int:
    """One query head's Q, dO and fp32 dQaccum rows (bytes; dQaccum at flash-attn's rounded head size)."""
    return problem.seq_len_q * (2 * problem.width * problem.head_dim + 4 * rounded_head_size(problem.head_dim))


def long_backward(problem: Problem, tile: KernelTile, profile) -> str | None:
    """:data:`LONG_BACKWARD_NOTE` or :data:`WAVE_ROWS_NOTE` for a backward of ``problem`` in ``tile``
    on ``profile``'s L2, or None. A wave of S blocks in launch order, n a query head's, touches at most
    ⌈(S − 1) / n⌉ + 1 heads (of the B · H)."""
    half, rows = half_partition(profile), _rows(problem)
    if not half:
        return None
    if rows >= half:
        return LONG_BACKWARD_NOTE.format(rows=rows / 1e6, half=half / 1e6)
    if tile.coresident is None:
        return None
    per_head, slots = -(-problem.seq_len_kv // tile.block_kv), wave_slots(tile, profile)
    heads = min(problem.batch * problem.heads, -(-(slots - 1) // per_head) + 1)
    if heads * rows < half:
        return None
    return WAVE_ROWS_NOTE.format(heads=heads, slots=slots, per_head=per_head, rows=heads * rows / 1e6,
                                 half=half / 1e6)
