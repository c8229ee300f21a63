"""Issue 14's targets over every committed SDPA grid, from ``sdpa_compare.py --cache --json`` rows.

    python benchmarks/sdpa_compare.py RAW_DIR --cache --json ROWS/NAME.json     # once per grid
    python benchmarks/sdpa_status.py ROWS/*.json [--markdown OUT.md]

Per grid and over all: launches whose loads, stores and atomics are exact (loads by either
load metric, the combine's by its SASS bytes: tests/gpu/test_ncu_replays.py); main kernels
(forward, split-KV forward, main backward) whose DRAM reads are within 10 %; main kernels at
N ≥ 2,048 and their time error, median and worst (target: ≤ 10 % and ≤ 20 %).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_compare import agreement  # noqa: E402

MAIN = ("main", "splitkv", "dq_dk_dv")


def exact(row: dict) -> bool:
    ok = agreement(row)
    loads = ok["loads_sass"] if row["kernel"] == "combine" else ok["loads_l1tex"] or ok["loads_sass"]
    return loads and ok["stores"] and ok["atomics"]


def status(rows: list[dict]) -> dict:
    main = [r for r in rows if r["kernel"] in MAIN]
    dram = [abs(r["predicted"]["dram_read"] / r["measured"]["dram_read"] - 1) <= 0.10
            for r in main if r["measured"]["dram_read"]]
    err = [abs(r["predicted"]["time_s"] / r["measured"]["time_s"] - 1) for r in main if r["seq_len"] >= 2048]
    return {"launches": len(rows), "exact": sum(map(exact, rows)), "main": len(dram), "dram_within": sum(dram),
            "timed": len(err), "time_median": statistics.median(err) if err else None,
            "time_worst": max(err, default=None), "time_within_20": sum(e <= 0.20 for e in err)}


def line(name: str, s: dict) -> str:
    t = (f"{100 * s['time_median']:.1f} % / {100 * s['time_worst']:.1f} % | {s['time_within_20']}/{s['timed']}"
         if s["timed"] else "- | -")
    return f"| {name} | {s['exact']}/{s['launches']} | {s['dram_within']}/{s['main']} | {t} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+")
    ap.add_argument("--markdown")
    args = ap.parse_args()
    out = ["| grid | loads, stores, atomics exact | main kernels' DRAM reads within 10 % | "
           "time, N ≥ 2,048: median / worst error | within 20 % |", "|---|---:|---:|---:|---:|"]
    every = []
    for path in args.rows:
        rows = json.load(open(path))
        every += rows
        out.append(line(os.path.basename(path).removesuffix(".json"), status(rows)))
    out.append(line("**all**", status(every)))
    text = "\n".join(out)
    if args.markdown:
        open(args.markdown, "w").write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
