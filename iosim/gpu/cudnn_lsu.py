"""cuDNN's decode forward (one query row) under Nsight Compute's LSU counters, beside the ``cudnn``
preset (``iosim validate --vendor cudnn``, benchmarks/cudnn_decode_bytes.py).

The preset's ``cudnn_decode`` schedule counts the attention's tensors; the two kernels also move
bytes the schedule has no tensor for, and the L1's tag stage counts whole 32-byte sectors
(measured on an H200 and an H100, docs/validation/2026-12-06-cudnn-splits.md):

* the decode kernel's Q tile is 16 rows from its group's first query head, cut at the batch's last
  head (R = Σ_j min(16, H − j·g) rows a batch, not H): the later groups' rows come too, unused,
  once a block at d ≤ 128, again at every key tile of 128 above;
* it loads its tiles (Q, and K and V a key tile of 128 rows; padded to 64, 128 or 256 columns) by
  16-byte ``cp.async``, a warp's instruction taking 4 rows × 8 pieces: each row's run of at most 128
  bytes counts its sectors, and one more where the run is an odd number of pieces that starts 16
  bytes into a sector and crosses a 128-byte line (:func:`decode_load_bytes`; at head dims that
  are multiples of 16 every run is whole sectors, so the bytes are the tiles' own);
* a block writes its group's g statistics (fp32: with S > 1 a max and a sum laid out [s][b][h],
  else the LSE, [b][h]), 8 rows a store, which the counter sees as the sectors each store touches
  (:func:`stats_store_bytes`);
* the reduction reads each (b, h)'s S maxima and S sums, B·H·4 bytes apart, as the distinct
  sectors they lie in, once a half of the head dim (:func:`stats_load_bytes`), and stores the LSE
  a sector a row.

* O's rows (d · e bytes) count the sectors each piece touches (:func:`row_sector_bytes`): the decode
  kernel's (S = 1) in pieces of 64 bytes (:data:`O_STORE_PIECE`), the reduction's in pieces of 128
  elements; the splits' partial O (fp32) are whole sectors.

At a head dim that is no multiple of 16 the rule for the runs was read from a probe of the same
instructions (benchmarks/ldgsts_zfill_probe.py) and holds on every decode launch of the committed
runs, d = 32 to 256 (docs/validation/2026-12-06-cudnn-odd.md).
"""

from __future__ import annotations

import numpy as np

from ..kernels.cudnn_preset import DECODE_HALF, DECODE_KEY_TILE, DECODE_Q_ROWS, decode_halves
from .sectors import COPY_BYTES, LINE, SECTOR, copy_row_bytes, piece_sector_bytes, sectors, tiled_rows_sum

#: the counters: the LSU's bytes (the decode kernel loads by cp.async, not TMA)
LSU_LD, LSU_ST = "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum"
#: bytes of an O row the decode kernel stores as one piece (S = 1): the sectors of each 64-byte piece of a
#: row count apart (read from the two such launches at head dims no multiple of 16, d = 40 and 72, where
#: each row on its own counted 6 and 32 sectors too few; docs/validation/2026-12-06-cudnn-odd.md)
O_STORE_PIECE = 64
#: rows of statistics one store instruction writes (grid s42-cudnn-decode, 12 query heads a group: the
#: counter sees the sectors of rows 0-7 and of rows 8-11 apart; every group before had at most 8)
STATS_ROWS = 8


def q_tile_rows(heads: int, kv_heads: int) -> int:
    """R: the Q rows a batch's blocks of one split load, Σ_j min(16, H − j·g)."""
    g = heads // kv_heads
    return sum(min(DECODE_Q_ROWS, heads - j * g) for j in range(kv_heads))


def run_bytes(starts: np.ndarray, nbytes: int) -> np.ndarray:
    """What the LSU counter gives one instruction's run of ``nbytes`` (≤ 128, 16-byte pieces) of a row
    from each of ``starts``: :func:`.sectors.copy_row_bytes` where the run is an odd number of pieces,
    its sectors where even (benchmarks/ldgsts_zfill_probe.py, on an H100)."""
    if (nbytes // COPY_BYTES) % 2:
        return copy_row_bytes(starts, nbytes)
    return SECTOR * sectors(starts, nbytes)


def _tile_rows_bytes(starts: np.ndarray, row_bytes: int, width: int) -> np.ndarray:
    """Per row start: the LSU bytes of a tile row ``width`` bytes wide with ``row_bytes`` to load,
    8 pieces (128 bytes) an instruction."""
    out = np.zeros(np.shape(starts), np.int64)
    for c0 in range(0, width, LINE):
        if row_bytes > c0:
            out += run_bytes(starts + c0, min(LINE, row_bytes - c0))
    return out


def _rows_bytes(bases: np.ndarray, rows: int, pitch: int, row_bytes: int, width: int, skip: int = 0) -> int:
    """Σ over runs of ``rows`` rows at ``pitch`` from each of ``bases``: each tile row ``width`` bytes wide
    from byte ``skip`` of the row (:func:`.sectors.tiled_rows_sum`, the rows as one tile)."""
    return tiled_rows_sum(bases, rows, pitch, rows, [1], lambda st: _tile_rows_bytes(st + skip, row_bytes, width))


def decode_load_bytes(p, splits: int) -> int:
    """The decode kernel's LSU load bytes (user's problem ``p``, S = ``splits``): K and V once (at d >
    128 each of a split's two blocks K whole and V's half), and each block's Q tile, once a block at
    d ≤ 128, again at every key tile above."""
    e, d, halves = p.width, p.head_dim, decode_halves(p.head_dim)
    pitch, width = d * e, 64 * e * (1 if d <= 64 else 2 if d <= 128 else 4)
    n = p.seq_len_kv
    heads = np.arange(p.batch * p.kv_heads, dtype=np.int64) * n * pitch          # each K/V head's first row
    k = _rows_bytes(heads, n, pitch, pitch, width)
    if halves == 1:
        kv = 2 * k
    else:
        half = DECODE_HALF * e
        kv = 2 * k + _rows_bytes(heads, n, pitch, half, half) + _rows_bytes(heads, n, pitch, pitch - half, half, half)
    g, batches = p.group_size, np.arange(p.batch, dtype=np.int64) * p.heads
    q = sum(_rows_bytes((batches + j * g) * pitch, min(DECODE_Q_ROWS, p.heads - j * g), pitch, pitch, width)
            for j in range(p.kv_heads))                  # block j's Q tile: its group's first query head on
    tiles = splits if halves == 1 else halves * -(-n // DECODE_KEY_TILE)
    return kv + tiles * q


def row_sector_bytes(rows: int, row_bytes: int, piece: int | None = None) -> int:
    """Bytes of the 32-byte sectors that ``rows`` consecutive rows of ``row_bytes`` touch, each row
    (each ``piece`` bytes of it from its start, where given) on its own."""
    return int(piece_sector_bytes(np.arange(rows) * row_bytes, row_bytes, piece or row_bytes).sum())


def _group_rows(p, copies: int) -> np.ndarray:
    """Each block's first statistic (its group's first head), for ``copies`` × B rows of H heads."""
    return np.arange(copies * p.batch)[:, None] * p.heads + np.arange(p.kv_heads) * p.group_size


def stats_store_bytes(p, splits: int) -> int:
    """LSU bytes of the decode kernel's statistics stores: the sectors each store of a block's g
    floats touches, STATS_ROWS rows a store."""
    pieces = np.arange(0, p.group_size, STATS_ROWS)
    starts = _group_rows(p, splits)[..., None] + pieces
    per_array = SECTOR * int(sectors(4 * starts, 4 * np.minimum(STATS_ROWS, p.group_size - pieces)).sum())
    return 2 * per_array if splits > 1 else per_array


def stats_load_bytes(p, splits: int) -> int:
    """LSU bytes of the reduction's statistics loads: each (b, h)'s S maxima and sums, B·H·4
    bytes apart, as the distinct sectors they lie in, once a half of the head dim."""
    bh = p.batch * p.heads
    lying = 4 * (np.arange(splits)[None, :] * bh + np.arange(bh)[:, None]) // SECTOR
    distinct = int((1 + (np.diff(lying, axis=1) > 0).sum(axis=1)).sum())
    return 2 * SECTOR * decode_halves(p.head_dim) * distinct


def decode_checks(p, splits: int, rd, wr, sass_st: str) -> list[tuple]:
    """(cuDNN's label, the preset's kernel, [(quantity, kind, metric, bytes)]) of the decode
    forward's launches; ``rd(kernel, *tensors)``, ``wr(…)``: the preset's bytes read, written."""
    stats = ("m_accum", "l_accum") if splits > 1 else ("L",)
    out_tensor = "Oaccum" if splits > 1 else "O"
    rows = p.batch * p.heads
    o_store = wr("decode", out_tensor) if splits > 1 else row_sector_bytes(rows, p.head_dim * p.width, O_STORE_PIECE)
    out = [("decode", "decode", [
        ("loads", "load", LSU_LD, decode_load_bytes(p, splits)),
        ("stores", "store", LSU_ST, o_store + stats_store_bytes(p, splits)),
        ("stores (SASS)", "store", sass_st, wr("decode", out_tensor, *stats))])]
    if splits > 1:
        out.append(("reduction", "reduction", [
            ("loads", "load", LSU_LD, rd("reduction", "Oaccum") + stats_load_bytes(p, splits)),
            ("stores", "store", LSU_ST, row_sector_bytes(rows, p.head_dim * p.width, DECODE_HALF * p.width)
             + SECTOR * rows),
            ("stores (SASS)", "store", sass_st, wr("reduction", "O", "L"))]))
    return out


__all__ = ["LSU_LD", "LSU_ST", "q_tile_rows", "run_bytes", "decode_load_bytes", "row_sector_bytes",
           "stats_store_bytes", "stats_load_bytes", "decode_checks"]
