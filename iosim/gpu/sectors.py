"""What the L1's tag stage counts beyond the bytes the kernels request: whole 32-byte sectors.

Nsight Compute's ``l1tex__t_bytes_pipe_lsu_mem_global_op_ld`` counts, for each warp's load
request, the 32-byte sectors it touches. Where a request's bytes start or end inside a
sector, the partly used sectors count whole. iosim counts requested bytes (what the
instructions ask for), so the two differ exactly there.

One such place decides the main backward kernel of flash-attn 2 at short or unaligned
query lengths: the softmax statistics L (``softmax_lse``, fp32, N_q values per head, the
heads packed one after another) are read, for each query block a key block's thread block
visits, by each of the ``stats_loads`` warps that split the key columns, for the block's
real rows, 8 rows per load instruction (the MMA accumulator layout: 4 lanes a row). The
8 rows from row k of query block i of head h start at byte 4·(h·N_q + i·B_r + k): on a
sector only when that is a multiple of 32, so with N_q not a multiple of 8 half or more of
the heads' requests count a sector more, and a block's last, partial request counts whole
sectors. :func:`stats_excess` sums this over every head and visited (key, query) block
pair. Measured on an H200: with it, the tag stage equals iosim on every main backward
launch of the committed grids but those at d = 40 (docs/validation/2026-12-01-sdpa-fresh.md):
N_q = 1 and 7, and N = 2,500 at d = 80 to 192, which were 0.2 % and 1 % off before.

The kernels read Q, K, V (and the backward dO) by 16-byte ``cp.async`` chunks. A
microbenchmark measured how the tag stage counts one row (benchmarks/sector_probe.py: an
80-byte row at each 16-byte offset of a 128-byte line): its sectors, plus one when it starts
16 bytes into a sector and crosses a line. Session 22 measured every kernel at the head dims
whose rows are an odd number of 16-byte chunks (d = 8 to 248, 8 mod 16; the 32, 64, 96, 128,
192 and 256 kernels, docs/validation/2026-12-04-rows/): a longer row counts one sector more
for *each* line boundary it crosses when it starts 16 bytes into a sector, whatever the
kernel's threads a row (:func:`copy_row_bytes`). :func:`forward_excess` sums that over every
row the forward kernels read — Q once per non-empty split, K and V once per visiting query
block and query head — and :func:`backward_excess` over the main backward kernel's — K and V
once per query head, Q and dO once per visiting key block.
"""

from __future__ import annotations

import math

import numpy as np

from ..workload.layouts import decode_layout, unaligned_row_bytes

SECTOR = 32
L_WIDTH = 4          # fp32
#: rows of L one warp's load instruction reads: in the MMA accumulator layout each group of
#: 4 lanes holds one row, so an instruction covers 8 consecutive rows
ROWS_PER_REQUEST = 8
#: the flash-attn 2 kernels' gmem copy reads a row of Q, K, V or dO in 16-byte ``cp.async``
#: chunks; the L2's lines are 128 bytes
COPY_BYTES, LINE = 16, 128
#: a head's first byte, mod a sector or a line, repeats every this many heads here (fp32 rows
#: of L; fp16 rows of 16 bytes times an odd number)
HEAD_PERIOD = 8


def sectors(start, nbytes):
    """32-byte sectors that the bytes [start, start + nbytes) touch (ints or arrays)."""
    return ((start + nbytes - 1) // SECTOR - start // SECTOR + 1) * (nbytes > 0)


def visits(problem, block_q: int, block_kv: int) -> list[int]:
    """Per query block i, how many key blocks' thread blocks visit it (all of them; causal:
    those with a visible key, the mask aligned bottom-right as flash-attn aligns it)."""
    n_q, n_kv = problem.seq_len_q, problem.seq_len_kv
    t_kv, i = math.ceil(n_kv / block_kv), np.arange(math.ceil(n_q / block_q))
    if not problem.causal:
        return [t_kv] * len(i)
    last_key = np.minimum((i + 1) * block_q, n_q) - 1 + (n_kv - n_q)    # the block's last row sees keys ≤ this
    return np.clip(last_key // block_kv + 1, 0, t_kv).tolist()


def _over_heads(heads: int, per_head) -> int:
    """Σ ``per_head(h)`` over ``heads`` heads, for a quantity that repeats every HEAD_PERIOD."""
    period = [per_head(h) for h in range(min(HEAD_PERIOD, heads))]
    full, rest = divmod(heads, HEAD_PERIOD)
    return full * sum(period) + sum(period[:rest])


def stats_excess(problem, block_q: int, block_kv: int, stats_loads: int) -> int:
    """Bytes the tag stage counts beyond iosim's L loads in the main backward kernel, over
    every head (see the module's docstring); ``block_q`` a multiple of 8 rows, as the kernels'."""
    n_q = problem.seq_len_q
    first = np.arange(0, n_q, ROWS_PER_REQUEST)                     # each request's first row
    rows = np.minimum(ROWS_PER_REQUEST, n_q - first)
    weight = np.asarray(visits(problem, block_q, block_kv))[first // block_q]
    def per_head(h: int) -> int:
        start = L_WIDTH * (h * n_q + first)
        return int((weight * (SECTOR * sectors(start, rows * L_WIDTH) - rows * L_WIDTH)).sum())
    return stats_loads * _over_heads(problem.batch * problem.heads, per_head)


def copy_row_bytes(starts: np.ndarray, nbytes: int) -> np.ndarray:
    """What the tag stage counts for one row of ``nbytes`` read by 16-byte ``cp.async`` chunks
    from each of ``starts``: its sectors, plus, where the row starts 16 bytes into a sector,
    one for each 128-byte line boundary it crosses (measured on an H200: a single 80-byte row
    at every 16-byte offset of a line, benchmarks/sector_probe.py, 8 of 8 cases; the kernels'
    rows of 16 to 496 bytes, docs/validation/2026-12-04-rows.md)."""
    crossed = (starts % LINE + nbytes - 1) // LINE
    return SECTOR * (sectors(starts, nbytes) + np.where(starts % SECTOR == COPY_BYTES, crossed, 0))


def _rows_excess(row: int, rows: int, heads: int, mult: np.ndarray) -> int:
    """Σ over ``heads`` heads of ``rows`` rows each (contiguous, a head after another) of what
    the tag stage counts beyond each row's bytes, times each row's reads ``mult``."""
    r = np.arange(rows)
    return _over_heads(heads, lambda h: int(((copy_row_bytes((h * rows + r) * row, row) - row) * mult).sum()))


def forward_excess(problem, block_q: int, block_kv: int, num_splits: int = 1) -> int:
    """Bytes the tag stage counts beyond iosim's Q, K and V reads in the forward kernel (or its
    split-KV kernel with ``num_splits``), over every head (0 where every row starts on a
    sector), of the problem the kernel runs (decode's GQA swap: :func:`.decode_layout`). Each
    Q row is read once per non-empty split of its query block; each K and V row once per query
    head of its group per query block that visits its key block."""
    problem = decode_layout(problem)
    row = unaligned_row_bytes(problem)
    if not row:
        return 0
    n_q, n_kv = problem.seq_len_q, problem.seq_len_kv
    seen = np.asarray(visits(problem, block_q, block_kv))         # key blocks each query block visits
    t_kv = math.ceil(n_kv / block_kv)
    per_split = math.ceil(t_kv / num_splits)
    splits = np.where(seen > 0, np.clip(-(-seen // per_split), 1, num_splits), 0)
    visiting = len(seen) - np.searchsorted(np.sort(seen), np.arange(t_kv), side="right")   # query blocks a key block has
    q_mult = np.repeat(splits, block_q)[:n_q]
    kv_mult = np.repeat(visiting, block_kv)[:n_kv] * problem.group_size
    return _rows_excess(row, n_q, problem.batch * problem.heads, q_mult) + \
        2 * _rows_excess(row, n_kv, problem.batch * problem.kv_heads, kv_mult)


def backward_excess(problem, block_q: int, block_kv: int) -> int:
    """Bytes the tag stage counts beyond iosim's Q, dO, K and V reads in the main backward
    kernel, over every head (0 where every row starts on a sector): each K and V row once per
    query head of its group (one thread block a key block and query head), each Q and dO row
    once per key block that visits its query block."""
    row = unaligned_row_bytes(problem)
    if not row:
        return 0
    q_mult = np.repeat(visits(problem, block_q, block_kv), block_q)[:problem.seq_len_q]
    kv_mult = np.full(problem.seq_len_kv, problem.group_size)
    return 2 * _rows_excess(row, problem.seq_len_q, problem.batch * problem.heads, q_mult) + \
        2 * _rows_excess(row, problem.seq_len_kv, problem.batch * problem.kv_heads, kv_mult)


def piece_sector_bytes(starts, row_bytes: int, piece: int) -> np.ndarray:
    """Per row start: the bytes of the 32-byte sectors each ``piece`` bytes of a row of ``row_bytes``
    touch, each piece on its own (the last one shorter)."""
    starts = np.asarray(starts, np.int64)
    return sum(SECTOR * sectors(starts + c, min(piece, row_bytes - c)) for c in range(0, row_bytes, piece))


#: a row of a multiple of 16 bytes starts at the same place in a line every this many rows
ROW_PERIOD = LINE // COPY_BYTES


def tiled_rows_sum(bases, rows: int, pitch: int, tile: int, mult, per_row) -> int:
    """Σ over heads whose first rows start at the bytes ``bases`` of Σ over tiles of ``tile`` rows of
    their ``rows`` rows at ``pitch`` (a multiple of 16 bytes) of mult[tile] × Σ ``per_row(starts)`` over the
    tile's rows, where ``per_row`` depends on a start mod a line only. Such a start repeats every
    ROW_PERIOD rows, and a tile starts at a multiple of them (``tile`` is), so each head needs only its
    first ROW_PERIOD rows' values."""
    bases, mult = np.asarray(bases, np.int64), np.asarray(mult, np.int64)
    per = per_row(bases[:, None] % LINE + np.arange(ROW_PERIOD) * pitch)                   # (heads, period)
    cum = np.concatenate([np.zeros((len(bases), 1), np.int64), np.cumsum(per, axis=1)], axis=1)
    valid = np.minimum(tile, rows - np.arange(len(mult)) * tile)
    tiles = (valid // ROW_PERIOD)[None, :] * cum[:, ROW_PERIOD:] + cum[:, valid % ROW_PERIOD]
    return int((tiles * mult[None, :]).sum())
