"""cuDNN's decode forward (one query row): the bytes its two kernels move, as formulas, checked
against Nsight Compute on every recorded launch (grid ``s30-cudnn-decode`` on the H200, session 32,
and on an H100, session 41; grids ``s41-cudnn-decode`` and ``s41-cudnn-decode2``, the second
predicted before it ran, on an H100: docs/validation/2026-12-06-cudnn-splits.md).

The decode kernel (``…sm80_flash_fprop_wmma_f16_knob_{35_16x128,3_64x64}x…``, grid (S · ⌈d / 128⌉,
H_kv, B): one thread block a split of a K/V head (two above d = 128), for every query head of
its group; S from ``cudnn_splits_probe.splits``) and, where S > 1, ``cudnn::lean_reduction_kernel``
(grid (1, H, B)). With g = H / H_kv query heads a K/V head, e = 2 bytes an element, R = Σ_j
min(16, H − j · g) (a block's Q tile: 16 rows from query head j · g of its batch, cut at the
batch's last head, not at the group's; the next groups' rows come too, unused), sectors of 32 bytes:

* decode, loads, d ≤ 128: K and V once (4 · B · H_kv · N_kv · d: no row of a padded tile), Q's
  tile once a block (S · B · R · d · e); above d = 128 the two blocks of a split each read all
  of K and half of V (3/2 of K and V) and Q's tile again at every key tile of 128 rows
  (2 · ⌈N_kv / 128⌉ · B · R · d · e). Those are the SASS cp.async bytes; the LSU's are the
  sectors of each instruction's run of a row (``iosim.gpu.cudnn_lsu.decode_load_bytes``), the same
  bytes at head dims that are multiples of 16 and 1.17-1.30 × them at the others;
* decode, stores: with S > 1 every split's fp32 partial O of its g rows, and its max and sum
  (fp32, laid out [s][b][h]: the LSU writes the sectors g floats touch); with S = 1, O (the
  sectors each 64-byte piece of a row of d · e bytes touches) and the LSE (fp32, [b][h]);
* reduction, loads: every split's partial O, and each (b, h)'s S maxima and sums, B · H · 4 bytes
  apart (the sectors they touch; twice above d = 128); stores: O (the sectors each row touches,
  in pieces of 128 elements), and the LSE a sector a row.

Every count of grids s41-cudnn-decode2 and s41-cudnn-decode-odd (d = 40-168) is exact
(docs/validation/2026-12-06-cudnn-odd.md).
How the keys are shared among the splits does not show in these bytes at d ≤ 128; above, the Q
term counts key tiles, not splits.

The LSU's bytes (``l1tex__t_bytes_pipe_lsu_…``) are the target; the SASS cp.async bytes
(``…_op_ldgsts``) equal the tiles' bytes but differ from them on some launches by up to 0.1 %,
by amounts that differ between the two GPUs (a counter's, as for flash-attn: docs/known-limits.md).

    python benchmarks/cudnn_decode_bytes.py [RAW ...]     # default: the four runs above

prints one row a launch (measured against the formula) and exits 1 if an LSU count or a store
count differs.
"""

from __future__ import annotations

import ast
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cudnn_decode_table import rows  # noqa: E402
from iosim.gpu.cudnn_lsu import (O_STORE_PIECE, decode_load_bytes, q_tile_rows, row_sector_bytes,  # noqa: E402
                                  stats_load_bytes, stats_store_bytes)
from iosim.gpu.sectors import SECTOR  # noqa: E402
from iosim.kernels.cudnn_preset import DECODE_HALF, DECODE_KEY_TILE, decode_halves  # noqa: E402
from iosim.workload.problem import Problem  # noqa: E402
from cudnn_splits_probe import splits  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = (os.path.join(ROOT, "docs/validation/2026-12-05-cudnn-decode/raw"),
        os.path.join(ROOT, "docs/validation/2026-12-06-cudnn-splits/decode-h100"),
        os.path.join(ROOT, "docs/validation/2026-12-06-cudnn-splits/decode-s41-h100"),
        os.path.join(ROOT, "docs/validation/2026-12-06-cudnn-splits/decode2-h100"))
METRICS = {"loads": "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",
           "stores": "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum",
           "stores (SASS)": "smsp__sass_data_bytes_mem_global_op_st.sum",
           "loads (SASS, cp.async)": "smsp__sass_data_bytes_mem_global_op_ldgsts.sum"}
E = 2


def decode_bytes(b: int, h: int, h_kv: int, n_kv: int, d: int, s: int) -> dict:
    """The decode kernel's bytes (see the module's docstring)."""
    p = Problem(head_dim=d, seq_len_q=1, seq_len_kv=n_kv, batch=b, heads=h, kv_heads=h_kv)
    q_rows, halves = q_tile_rows(h, h_kv), decode_halves(d)
    kv = 2 * b * h_kv * n_kv * d * E
    if halves == 1:                     # Q once a block, K and V once
        sass = kv + s * b * q_rows * d * E
    else:                               # two blocks a split: all of K and half of V each, Q again every key tile
        sass = kv * 3 // 2 + halves * -(-n_kv // DECODE_KEY_TILE) * b * q_rows * d * E
    if s > 1:                           # [s][b][h]: max and sum
        o, stats = 4 * s * b * h * d, 8 * s * b * h
        stores = o + stats_store_bytes(p, s)
    else:                               # O in rows of d · e bytes, the LSE [b][h]
        o, stats = b * h * d * E, 4 * b * h
        stores = row_sector_bytes(b * h, d * E, O_STORE_PIECE) + stats_store_bytes(p, s)
    return {"loads": decode_load_bytes(p, s), "stores": stores, "stores (SASS)": o + stats,
            "loads (SASS, cp.async)": sass}


def reduction_bytes(b: int, h: int, d: int, s: int) -> dict:
    """The reduction kernel's bytes (see the module's docstring)."""
    p = Problem(head_dim=d, seq_len_q=1, seq_len_kv=1, batch=b, heads=h)
    partial, halves = 4 * s * b * h * d, decode_halves(d)
    return {"loads": partial + stats_load_bytes(p, s),
            "stores": row_sector_bytes(b * h, d * E, DECODE_HALF * E) + SECTOR * b * h,
            "stores (SASS)": b * h * d * E + 4 * b * h, "loads (SASS, cp.async)": partial + 8 * s * b * h * halves}


def check(raw: str, sixteens: bool = False) -> tuple[int, int, int]:
    """(launches, those whose LSU or store counts are off the formulas, those whose SASS cp.async
    count is off) of one run (``sixteens``: of its head dims that are multiples of 16 only)."""
    launches = misses = sass = 0
    for row in rows(raw):
        cfg = row["config"]
        if sixteens and cfg["head_dim"] % 16:
            continue
        b, h, n_kv, d = cfg["batch"], cfg["heads"], cfg["seq_len_kv"], cfg["head_dim"]
        h_kv = cfg.get("kv_heads", h)
        s = splits(n_kv, b * h_kv)
        for launch in row["forward"]:
            decode = launch["kernel"] == "decode"
            want = decode_bytes(b, h, h_kv, n_kv, d, s) if decode else reduction_bytes(b, h, d, s)
            got = {k: int(launch["metrics"].get(m) or 0) for k, m in METRICS.items()}
            off = {k: got[k] - want[k] for k in METRICS if got[k] != want[k]}
            launches += 1
            missed = any(k != "loads (SASS, cp.async)" for k in off)
            misses += missed
            sass += "loads (SASS, cp.async)" in off
            print(f"{'decode' if decode else 'reduction':9} {ast.literal_eval(launch['grid'])!s:13} d {d:3} "
                  f"N_kv {n_kv:6,} B {b:2} H {h:2} (H_kv {h_kv:2}) S {s:2}: loads {got['loads']:12,} "
                  f"{'= the formula' if 'loads' not in off else 'vs ' + format(want['loads'], ',')}"
                  + (f"; off (measured − formula): {off}" if off else ""))
    return launches, misses, sass


def main(argv: list[str]) -> int:
    total = bad = sass = 0
    for raw in argv or RUNS:
        print(raw)
        n, m, s = check(raw)
        total, bad, sass = total + n, bad + m, sass + s
    print(f"{total - bad} of {total} launches: LSU loads and stores (LSU and SASS) as the formulas say; "
          f"SASS cp.async loads off on {sass}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
