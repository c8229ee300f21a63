"""The forward launches cuDNN's fused attention makes for one query row (grid ``s30-cudnn-decode``,
docs/validation/2026-12-05-cudnn-decode.md): per config, its sm80 decode kernel's grid, whether a
reduction follows and its grid, and their DRAM reads and times, beside Q, K and V's bytes.

    python benchmarks/cudnn_decode_table.py docs/validation/2026-12-05-cudnn-decode/raw
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from iosim.gpu.cudnn import split_by_marker  # noqa: E402
from iosim.gpu.ncu import raw_exists, read_launches, read_raw  # noqa: E402


def configs_and_launches(raw: str, measured_only: bool = False):
    """(config, its launches) of every config of one run, in the run's order (``measured_only``: of
    the head dims the run reached, where its budget ran out before the others)."""
    with open(os.path.join(raw, "cudnn_configs.json")) as f:
        grid = json.load(f)["grid"]
    for d, configs in grid.items():
        if measured_only and not raw_exists(os.path.join(raw, f"cudnn_d{d}.csv")):
            continue
        groups, _ = split_by_marker(read_launches(read_raw(os.path.join(raw, f"cudnn_d{d}.csv"))))
        if len(groups) != len(configs):
            raise SystemExit(f"{raw}: cudnn_d{d}.csv has {len(groups)} marked groups of launches for "
                             f"{len(configs)} configs; the run is incomplete or not this grid's")
        yield from zip(configs, groups)


def rows(raw: str) -> list[dict]:
    """One row per config: its fields, then the forward's launches (the decode kernel and the
    reduction, when there is one) before the backward's."""
    out = []
    for cfg, launches in configs_and_launches(raw):
        fwd = [x for x in launches if "fprop" in x["name"] or "lean_reduction" in x["name"]]
        out.append({"config": cfg, "forward": [
            {"kernel": "decode" if "fprop" in x["name"] else "reduction", "grid": x["grid"],
             "dram_read": x["metrics"].get("dram__bytes_read.sum", 0.0),
             "time_us": x["metrics"].get("gpu__time_duration.sum", 0.0) / 1e3, "metrics": x["metrics"]}
            for x in fwd]})
    return out


def markdown(table: list[dict]) -> str:
    lines = ["| d | N_kv | B × H (H_kv) | dtype | decode grid | reduction grid | DRAM read (MB) | Q, K, V (MB) "
             "| time (µs) |", "|---:|---:|---|---|---|---|---:|---:|---:|"]
    for row in table:
        c, fwd = row["config"], row["forward"]
        dec = [x for x in fwd if x["kernel"] == "decode"]
        red = [x for x in fwd if x["kernel"] == "reduction"]
        qkv = c["expected"]["QKV"] / 1e6
        lines.append(f"| {c['head_dim']} | {c['seq_len_kv']:,} | {c['batch']} × {c['heads']} ({c.get('kv_heads', c['heads'])}) "
                     f"| {c.get('dtype', 'fp16')} | {dec[0]['grid'] if dec else '—'} | {red[0]['grid'] if red else 'none'} "
                     f"| {sum(x['dram_read'] for x in fwd) / 1e6:,.2f} | {qkv:,.2f} "
                     f"| {sum(x['time_us'] for x in fwd):,.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(rows(sys.argv[1])))
