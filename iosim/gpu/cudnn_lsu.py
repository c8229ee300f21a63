"""cuDNN's decode forward (one query row) under Nsight Compute's LSU counters, beside the ``cudnn``
preset (``iosim validate --vendor cudnn``, benchmarks/cudnn_decode_bytes.py).

The preset's ``cudnn_decode`` schedule counts the attention's tensors; the two kernels also move
bytes the schedule has no tensor for, and the L1's tag stage counts whole 32-byte sectors
(measured on an H200 and an H100, docs/validation/2026-12-06-cudnn-splits.md):

* the decode kernel's Q tile is 16 rows from its group's first query head, cut at the batch's last
  head (R = Σ_j min(16, H − j·g) rows a batch, not H): the later groups' rows come too, unused,
  once a block at d ≤ 128, again at every key tile of 128 above (:func:`q_extra_bytes`);
* a block writes its group's g statistics (fp32: with S > 1 a max and a sum laid out [s][b][h],
  else the LSE, [b][h]), 8 rows a store, which the counter sees as the sectors each store touches
  (:func:`stats_store_bytes`);
* the reduction reads each (b, h)'s S maxima and S sums, B·H·4 bytes apart, as the distinct
  sectors they lie in, once a half of the head dim (:func:`stats_load_bytes`), and stores the LSE
  a sector a row.

O and the splits' partial O have rows of whole sectors at the head dims the preset models
(multiples of 16), so their bytes are the schedule's.
"""

from __future__ import annotations

import numpy as np

from ..kernels.cudnn_preset import DECODE_KEY_TILE, DECODE_Q_ROWS, decode_halves
from .sectors import SECTOR, sectors

#: the counters: the LSU's bytes (the decode kernel loads by cp.async, not TMA)
LSU_LD, LSU_ST = "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum"
#: rows of statistics one store instruction writes (grid s42-cudnn-decode, 12 query heads a group: the
#: counter sees the sectors of rows 0-7 and of rows 8-11 apart; every group before had at most 8)
STATS_ROWS = 8


def q_tile_rows(heads: int, kv_heads: int) -> int:
    """R: the Q rows a batch's blocks of one split load, Σ_j min(16, H − j·g)."""
    g = heads // kv_heads
    return sum(min(DECODE_Q_ROWS, heads - j * g) for j in range(kv_heads))


def q_extra_bytes(p, splits: int) -> int:
    """The decode kernel's loads of later groups' Q rows (user's problem ``p``, S = ``splits``)."""
    halves = decode_halves(p.head_dim)
    tiles = splits if halves == 1 else halves * -(-p.seq_len_kv // DECODE_KEY_TILE)
    return tiles * p.batch * (q_tile_rows(p.heads, p.kv_heads) - p.heads) * p.head_dim * p.width


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
    out = [("decode", "decode", [
        ("loads", "load", LSU_LD, rd("decode", "Q", "K", "V") + q_extra_bytes(p, splits)),
        ("stores", "store", LSU_ST, wr("decode", out_tensor) + stats_store_bytes(p, splits)),
        ("stores (SASS)", "store", sass_st, wr("decode", out_tensor, *stats))])]
    if splits > 1:
        out.append(("reduction", "reduction", [
            ("loads", "load", LSU_LD, rd("reduction", "Oaccum") + stats_load_bytes(p, splits)),
            ("stores", "store", LSU_ST, wr("reduction", "O") + SECTOR * p.batch * p.heads),
            ("stores (SASS)", "store", sass_st, wr("reduction", "O", "L"))]))
    return out


__all__ = ["LSU_LD", "LSU_ST", "q_tile_rows", "q_extra_bytes", "stats_store_bytes", "stats_load_bytes",
           "decode_checks"]
