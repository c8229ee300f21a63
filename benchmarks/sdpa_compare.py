"""Compare PyTorch's FlashAttention-2 SDPA kernels, as Nsight Compute measured them, with
iosim's ``flash-attn-2`` preset (issue 5's validation). Runs anywhere; reads the raw ncu
CSVs that benchmarks/sdpa_ncu.py wrote on the device machine.

    python benchmarks/sdpa_compare.py RAW_DIR [--json OUT.json] [--markdown OUT.md]

Per kernel launch it compares bytes by instruction class, as ncu's SASS metrics count them
(bytes the executed instructions asked for, summed over threads):
  loads  = smsp__sass_data_bytes_mem_global_op_ld + _ldgsts (cp.async)
  stores = smsp__sass_data_bytes_mem_global_op_st
  atomics = smsp__sass_data_bytes_mem_global_op_red + _atom
and the issue's l1tex__t_bytes_pipe_lsu_mem_global_op_ld. iosim's side is the preset's
per-kernel traffic; dQaccum's read-modify-write in the main backward kernel is one atomic
(red) of its bytes, not a load plus a store.
"""

from __future__ import annotations

import argparse
import json
import os

from iosim import Problem, load_profile
from iosim.gpu import sdpa
from iosim.gpu.ncu import read_launches


def compare(raw_dir: str, cache: bool = False) -> list[dict]:
    """One row per kernel launch of every config (iosim.gpu.sdpa.compare), with the config."""
    meta = json.load(open(os.path.join(raw_dir, "sdpa_configs.json")))
    profile = load_profile("h200")
    rows = []
    for d, configs in meta["grid"].items():
        path = os.path.join(raw_dir, f"sdpa_d{d}.csv")
        if not os.path.exists(path):
            continue
        groups = sdpa.group_by_config(read_launches(open(path).read()))
        if len(groups) != len(configs):
            raise SystemExit(f"{path}: {len(groups)} kernel groups for {len(configs)} configs")
        for cfg, launches in zip(configs, groups):
            problem = Problem(seq_len=cfg["seq_len"], head_dim=cfg["head_dim"], batch=cfg["batch"],
                              heads=cfg["heads"], causal=cfg["causal"])
            rows += [{**cfg, **row} for row in sdpa.compare(problem, launches, profile, cache=cache)]
    return rows


def agreement(row: dict) -> dict:
    """Which measurements equal the prediction exactly (loads by either load metric)."""
    p, m = row["predicted"], row["measured"]
    return {"loads_sass": p["loads"] == m["loads"], "loads_l1tex": p["loads"] == m["l1tex_ld"],
            "stores": p["stores"] == m["stores"], "atomics": p["atomics"] == m["atomics"]}


def markdown(rows: list[dict]) -> str:
    out = ["| d | N | B×H | causal | kernel | loads, iosim | loads, SASS | loads, l1tex | stores, iosim | stores, SASS "
           "| atomics, iosim | atomics, SASS |",
           "|---:|---:|---:|:---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        p, m, ok = r["predicted"], r["measured"], agreement(r)
        mark = lambda good: "" if good else " ≠"
        out.append(
            f"| {r['head_dim']} | {r['seq_len']:,} | {r['batch']}×{r['heads']} | {'y' if r['causal'] else ''} | "
            f"{r['kernel']} | {p['loads']:,} | {m['loads']:,}{mark(ok['loads_sass'])} | "
            f"{m['l1tex_ld']:,}{mark(ok['loads_l1tex'])} | {p['stores']:,} | {m['stores']:,}{mark(ok['stores'])} | "
            f"{p['atomics']:,} | {m['atomics']:,}{mark(ok['atomics'])} |")
    return "\n".join(out)


def dram_markdown(rows: list[dict]) -> str:
    """Predicted (cache model) against measured DRAM bytes, per kernel launch."""
    out = ["| d | N | B×H | causal | kernel | DRAM read, iosim | DRAM read, ncu | ratio | DRAM write, iosim | DRAM write, ncu |",
           "|---:|---:|---:|:---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        p, m = r["predicted"], r["measured"]
        ratio = p["dram_read"] / m["dram_read"] if m["dram_read"] else float("nan")
        out.append(f"| {r['head_dim']} | {r['seq_len']:,} | {r['batch']}×{r['heads']} | {'y' if r['causal'] else ''} | "
                   f"{r['kernel']} | {p['dram_read']:,} | {m['dram_read']:,} | {ratio:.3f} | {p['dram_write']:,} | "
                   f"{m['dram_write']:,} |")
    return "\n".join(out)


def time_markdown(rows: list[dict]) -> str:
    """Predicted (kernel time model) against measured time, per kernel launch with N >= 2,048."""
    out = ["| d | N | B×H | causal | kernel | iosim | ncu | ratio | bound (time model) |",
           "|---:|---:|---:|:---:|---|---:|---:|---:|---|"]
    for r in rows:
        if r["seq_len"] < 2048:
            continue
        p, m = r["predicted"], r["measured"]
        out.append(f"| {r['head_dim']} | {r['seq_len']:,} | {r['batch']}×{r['heads']} | {'y' if r['causal'] else ''} | "
                   f"{r['kernel']} | {p['time_s'] * 1e6:,.1f} µs | {m['time_s'] * 1e6:,.1f} µs | "
                   f"{p['time_s'] / m['time_s']:.2f} | {p['time_bound']} |")
    return "\n".join(out)


def summary(rows: list[dict]) -> str:
    """How many launches meet each of issue 6's targets, by kernel."""
    lines = ["| kernel | DRAM read within 10 % | DRAM write within 10 % | time within 25 % (N ≥ 2,048) "
             "| time ratio min / median / max |", "|---|---:|---:|---:|---|"]
    for kernel in dict.fromkeys(r["kernel"] for r in rows):
        mine = [r for r in rows if r["kernel"] == kernel]
        near = lambda p, m, tol: p == m if not m else abs(p / m - 1) <= tol  # noqa: E731
        dr = sum(near(r["predicted"]["dram_read"], r["measured"]["dram_read"], 0.10) for r in mine)
        dw = sum(near(r["predicted"]["dram_write"], r["measured"]["dram_write"], 0.10) for r in mine)
        big = [r["predicted"]["time_s"] / r["measured"]["time_s"] for r in mine if r["seq_len"] >= 2048]
        big.sort()
        t = sum(0.75 <= x <= 1.25 for x in big)
        spread = f"{big[0]:.2f} / {big[len(big) // 2]:.2f} / {big[-1]:.2f}" if big else "-"
        lines.append(f"| {kernel} | {dr}/{len(mine)} | {dw}/{len(mine)} | {t}/{len(big)} | {spread} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("raw_dir")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    parser.add_argument("--cache", action="store_true", help="also predict DRAM bytes with the L2 model")
    args = parser.parse_args()
    rows = compare(args.raw_dir, cache=args.cache)
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)
    if args.cache:
        text = "\n\n".join([summary(rows), dram_markdown(rows), time_markdown(rows)])
        if args.markdown:
            open(args.markdown, "w").write(text + "\n")
        print(text)
        return
    text = markdown(rows)
    if args.markdown:
        open(args.markdown, "w").write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
