"""What the crossbar carries for cuDNN's sm90 kernels' TMA boxes beyond their rows' bytes, where a
row (d · e bytes) is not a whole number of 32-byte sectors (a head dim that is no multiple of 16).

The fprop and bprop move Q, K, V, dO and O, dK, dV by TMA boxes of 64 columns. The crossbar counter
(``l1tex__m_xbar2l1tex_read_bytes`` for loads, ``…_l1tex2xbar_write_bytes_mem_global_op_tma_st`` for
stores) carries, for each valid row of a box, the 32-byte sectors its run in each 64-column box (128
bytes) touches, and a load 16 bytes more a row. The box's rows past N are zero-filled on chip and
carried as bytes, as the preset counts them. Every other row of such a head dim starts 16 bytes into a
sector. Read on cuDNN 9.19's launches on an H100 (grids s41-cudnn-decode-odd, s41-cudnn-decode2 and
s44-cudnn-odd: docs/validation/2026-12-06-cudnn-odd.md); at head dims that are multiples of 16 there
is nothing to add.

Which rows a kernel loads how often is cuDNN's tiling (:func:`iosim.kernels.cudnn_preset.cudnn_tiles`):
the fprop a query tile of 128 rows with every key tile it visits (all, or causal up to its own); the
bprop a key tile of 128 rows (K, V, once per thread block of the tile) with every 64-row query step
that visits it (all, or causal from the tile's diagonal on).
"""

from __future__ import annotations

import numpy as np

from .sectors import LINE, SECTOR, piece_sector_bytes, tiled_rows_sum

#: what a load carries a row beyond its runs' sectors
LOAD_EXTRA = 16


def _row_excess(starts: np.ndarray, row_bytes: int, load: bool) -> np.ndarray:
    """Per row start: the bytes carried beyond ``row_bytes`` (runs of 128 bytes, their sectors)."""
    return piece_sector_bytes(starts, row_bytes, LINE) - row_bytes + (LOAD_EXTRA if load else 0)


def _tiles_excess(bases: np.ndarray, rows: int, tile: int, mult: np.ndarray, row_bytes: int, load: bool) -> int:
    """Σ over heads at ``bases`` (their first row's byte) of Σ over tiles of ``tile`` rows of a head's
    ``rows`` of mult[tile] × its valid rows' excess (:func:`.sectors.tiled_rows_sum`)."""
    return tiled_rows_sum(bases, rows, row_bytes, tile, mult, lambda st: _row_excess(st, row_bytes, load))


def _bases(outer: int, inner: int, rows: int, row_bytes: int, of=None) -> np.ndarray:
    """Each query head's first row byte in a (outer, inner, rows, d) tensor, or of the head ``of(h)``."""
    heads = np.arange(outer * inner)
    return (heads if of is None else of(heads)) * rows * row_bytes


def fprop_excess(p) -> tuple[int, int]:
    """(loads, O stores): the fprop's crossbar bytes beyond the preset's counts."""
    rb = p.head_dim * p.width
    if rb % SECTOR == 0:
        return 0, 0
    tq, tk = -(-p.seq_len_q // 128), -(-p.seq_len_kv // 128)
    q = _bases(p.batch, p.heads, p.seq_len_q, rb)
    kv = _bases(p.batch, p.heads, p.seq_len_kv, rb, of=lambda h: h // p.group_size)
    visits = tq - np.arange(tk) if p.causal else np.full(tk, tq)
    loads = _tiles_excess(q, p.seq_len_q, 128, np.ones(tq, np.int64), rb, True) + \
        2 * _tiles_excess(kv, p.seq_len_kv, 128, visits, rb, True)
    return loads, _tiles_excess(q, p.seq_len_q, 128, np.ones(tq, np.int64), rb, False)


def bprop_load_excess(p, blocks_per_tile: int) -> int:
    """The bprop's crossbar loads beyond the preset's counts: K and V once per thread block of a key
    tile, Q and dO once per query step of 64 rows a key tile visits, per thread block."""
    rb = p.head_dim * p.width
    if rb % SECTOR == 0:
        return 0
    tk, steps = -(-p.seq_len_kv // 128), -(-p.seq_len_q // 64)
    q = _bases(p.batch, p.heads, p.seq_len_q, rb)
    kv = _bases(p.batch, p.heads, p.seq_len_kv, rb, of=lambda h: h // p.group_size)
    visits = np.minimum(np.arange(steps) // 2 + 1, tk) if p.causal else np.full(steps, tk)
    return blocks_per_tile * (2 * _tiles_excess(kv, p.seq_len_kv, 128, np.ones(tk, np.int64), rb, True)
                              + 2 * _tiles_excess(q, p.seq_len_q, 64, visits, rb, True))


def dkdv_store_excess(p) -> int:
    """The bprop's dK and dV stores (each query head's N_kv rows, once) beyond the preset's counts."""
    rb = p.head_dim * p.width
    if rb % SECTOR == 0:
        return 0
    tk = -(-p.seq_len_kv // 128)
    rows = _bases(p.batch, p.heads, p.seq_len_kv, rb)
    return 2 * _tiles_excess(rows, p.seq_len_kv, 128, np.ones(tk, np.int64), rb, False)


__all__ = ["fprop_excess", "bprop_load_excess", "dkdv_store_excess"]
