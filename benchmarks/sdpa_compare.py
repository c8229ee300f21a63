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

from iosim import IosimError, load_profile
from iosim.gpu import sdpa
from iosim.run.heap import keep_freed_memory


def compare(raw_dir: str, cache: bool = False, hw: str = "h200") -> list[dict]:
    """One row per kernel launch of every config (iosim.gpu.sdpa.compare), with the config, on
    the profile ``hw`` (the GPU the run measured)."""
    profile = load_profile(hw)
    try:
        configs = list(sdpa.raw_configs(raw_dir))
    except IosimError as exc:  # a CSV whose kernel groups do not match its configs
        raise SystemExit(str(exc)) from None
    rows = []
    for cfg, problem, launches in configs:
        rows += [{**cfg, **row} for row in sdpa.compare(problem, launches, profile, cache=cache)]
    return rows


def agreement(row: dict) -> dict:
    """Which measurements equal the prediction exactly (loads by either load metric; the L1
    tag stage's against iosim's loads in whole sectors where they differ: iosim.gpu.sectors)."""
    p, m = row["predicted"], row["measured"]
    return {"loads_sass": p["loads"] == m["loads"], "loads_l1tex": p.get("l1tex_loads", p["loads"]) == m["l1tex_ld"],
            "stores": p["stores"] == m["stores"], "atomics": p["atomics"] == m["atomics"]}


#: the first five columns of every per-launch table: the config and the kernel
LAUNCH_HEAD = "| d | N | B×H | causal | kernel |"
LAUNCH_ALIGN = "|---:|---:|---:|:---:|---|"
#: the DRAM columns (cupy_compare.py's table has them too)
DRAM_HEAD = " DRAM read, iosim | DRAM read, ncu | ratio | DRAM write, iosim | DRAM write, ncu |"
DRAM_ALIGN = "---:|---:|---:|---:|---:|"


def launch_cells(r: dict) -> str:
    """A per-launch row's first five cells, through the separator after the kernel."""
    return f"| {r['head_dim']} | {r['seq_len']:,} | {r['batch']}×{r['heads']} | {'y' if r['causal'] else ''} | " \
           f"{r['kernel']} | "


def dram_cells(p: dict, m: dict) -> str:
    """DRAM read (iosim, ncu, their ratio) and written (iosim, ncu), through the last separator."""
    ratio = p["dram_read"] / m["dram_read"] if m["dram_read"] else float("nan")
    return f"{p['dram_read']:,} | {m['dram_read']:,} | {ratio:.3f} | {p['dram_write']:,} | {m['dram_write']:,} |"


def markdown(rows: list[dict]) -> str:
    out = [LAUNCH_HEAD + " loads, iosim | loads, SASS | loads, l1tex | stores, iosim | stores, SASS "
           "| atomics, iosim | atomics, SASS |",
           LAUNCH_ALIGN + "---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        p, m, ok = r["predicted"], r["measured"], agreement(r)
        mark = lambda good: "" if good else " ≠"
        out.append(
            f"{launch_cells(r)}{p['loads']:,} | {m['loads']:,}{mark(ok['loads_sass'])} | "
            f"{m['l1tex_ld']:,}{mark(ok['loads_l1tex'])} | {p['stores']:,} | {m['stores']:,}{mark(ok['stores'])} | "
            f"{p['atomics']:,} | {m['atomics']:,}{mark(ok['atomics'])} |")
    return "\n".join(out)


def dram_markdown(rows: list[dict]) -> str:
    """Predicted (cache model) against measured DRAM bytes, per kernel launch."""
    out = [LAUNCH_HEAD + DRAM_HEAD, LAUNCH_ALIGN + DRAM_ALIGN]
    for r in rows:
        out.append(launch_cells(r) + dram_cells(r["predicted"], r["measured"]))
    return "\n".join(out)


def time_markdown(rows: list[dict]) -> str:
    """Predicted (kernel time model) against measured time, per kernel launch with N >= 2,048."""
    out = [LAUNCH_HEAD + " iosim | ncu | ratio | bound (time model) |", LAUNCH_ALIGN + "---:|---:|---:|---|"]
    for r in rows:
        if r["seq_len"] < sdpa.TARGETS["time_min_seq_len"]:
            continue
        p, m = r["predicted"], r["measured"]
        out.append(f"{launch_cells(r)}{p['time_s'] * 1e6:,.1f} µs | {m['time_s'] * 1e6:,.1f} µs | "
                   f"{p['time_s'] / m['time_s']:.2f} | {p['time_bound']} |")
    return "\n".join(out)


def summary(rows: list[dict]) -> str:
    """How many launches meet each of issue 6's targets, by kernel."""
    dram, time, min_n = sdpa.TARGETS["dram_read"], sdpa.TARGETS["time"], sdpa.TARGETS["time_min_seq_len"]
    lines = [f"| kernel | DRAM read within {100 * dram:.0f} % | DRAM write within {100 * dram:.0f} % "
             f"| time within {100 * time:.0f} % (N ≥ {min_n:,}) | time ratio min / median / max |",
             "|---|---:|---:|---:|---|"]

    def near(p, m):  # no bytes measured: right only where none are predicted
        return p == m if not m else sdpa.within(p, m, dram)

    for kernel in dict.fromkeys(r["kernel"] for r in rows):
        mine = [r for r in rows if r["kernel"] == kernel]
        dr = sum(near(r["predicted"]["dram_read"], r["measured"]["dram_read"]) for r in mine)
        dw = sum(near(r["predicted"]["dram_write"], r["measured"]["dram_write"]) for r in mine)
        big = [r["predicted"]["time_s"] / r["measured"]["time_s"] for r in mine if r["seq_len"] >= min_n]
        big.sort()
        t = sum(abs(x - 1) <= time for x in big)
        spread = f"{big[0]:.2f} / {big[len(big) // 2]:.2f} / {big[-1]:.2f}" if big else "-"
        lines.append(f"| {kernel} | {dr}/{len(mine)} | {dw}/{len(mine)} | {t}/{len(big)} | {spread} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("raw_dir")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    parser.add_argument("--cache", action="store_true", help="also predict DRAM bytes with the L2 model")
    parser.add_argument("--hw", default="h200", help="the profile of the GPU the run measured (default h200)")
    args = parser.parse_args()
    keep_freed_memory()          # the L2 model's large arrays reuse the heap's pages (iosim/run/heap.py)
    rows = compare(args.raw_dir, cache=args.cache, hw=args.hw)
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
