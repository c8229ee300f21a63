"""Compare iosim's own CuPy kernels, as Nsight Compute measured them (benchmarks/cupy_ncu.py),
with the simulator's predictions with the L2 model on. Runs anywhere.

    python benchmarks/cupy_compare.py RAW_DIR [--json OUT.json] [--plots DIR]

Per configuration (all of its kernel launches summed: standard runs three kernels) it prints
the simulator's global-load bytes (the paper's count with the kernels' tiles) beside ncu's
SASS load bytes, the L2 model's DRAM bytes beside ncu's, and the roofline time (and, for
the tensor-core fa2 kernel, the kernel time model's) beside ncu's ``gpu__time_duration``. The simulator runs each algorithm as one kernel: for
``standard`` the L2 stays warm between its three launches in the model but is flushed
between them under ncu, and the model writes S and P back only when evicted.
"""

from __future__ import annotations

import argparse
import json
import os

from iosim import Problem, load_profile
from iosim.gpu.cupy_kernels import make_config, model_time, simulate_config
from iosim.gpu.ncu import cupy_groups, sum_metrics
from iosim.gpu.sdpa import measured_classes

from sdpa_compare import DRAM_ALIGN, DRAM_HEAD, dram_cells


def compare(raw_dir: str) -> list[dict]:
    profile = load_profile("h200")
    rows = []
    for cfg, mine in cupy_groups(raw_dir):  # stops where ncu ran out of time
        problem = Problem(seq_len=cfg["seq_len"], head_dim=cfg["head_dim"], heads=cfg["heads_total"],
                          dtype=cfg["dtype"], causal=cfg["causal"])
        threads = int(mine[0]["block"].strip("()").split(",")[0])
        config = make_config(**{k: cfg[k] for k in ("algo", "seq_len", "head_dim", "heads_total", "dtype", "causal",
                                                    "block_q", "block_kv", "impl")})
        sim = simulate_config(profile, config, problem, cache=True, threads_per_block=threads)
        classes = measured_classes(sum_metrics(mine))
        measured = {k: classes[k] for k in ("loads", "stores", "dram_read", "dram_write", "time_s")}
        total = sim.cache.total
        predicted = {"loads": sim.hbm.read_bytes, "stores": sim.hbm.write_bytes, "dram_read": total.dram_read_bytes,
                     "dram_write": total.dram_write_bytes, "time_s": sim.time.predicted_s, "time_bound": sim.time.bound,
                     "model_time_s": None}
        model = model_time(sim, profile, config)
        if model is not None:  # the tensor-core fa2 kernel: the kernel time model applies
            predicted["model_time_s"] = model["predicted_s"]
        rows.append({**{k: cfg[k] for k in ("algo", "impl", "seq_len", "head_dim", "heads_total", "causal")},
                     "kernel": cfg["algo"],
                     "kernels": [l["name"].replace("void ", "").split("(")[0] for l in mine],
                     "predicted": predicted, "measured": measured})
    return rows


def markdown(rows: list[dict]) -> str:
    out = ["| algo | N | d | causal | loads, iosim | loads, SASS |" + DRAM_HEAD + " time, roofline | time, model "
           "| time, ncu |",
           "|---|---:|---:|:---:|---:|---:|" + DRAM_ALIGN + "---:|---:|---:|"]
    for r in rows:
        p, m = r["predicted"], r["measured"]
        out.append(f"| {r['algo']} ({r['impl']}) | {r['seq_len']:,} | {r['head_dim']} | {'y' if r['causal'] else ''} | "
                   f"{p['loads']:,} | {m['loads']:,}{'' if p['loads'] == m['loads'] else ' ≠'} | {dram_cells(p, m)} "
                   f"{p['time_s'] * 1e6:,.0f} µs | "
                   + (f"{p['model_time_s'] * 1e6:,.0f} µs ({p['model_time_s'] / m['time_s']:.2f}×)"
                      if p["model_time_s"] else "–") + f" | {m['time_s'] * 1e6:,.0f} µs |")
    return "\n".join(out)


def plots(rows: list[dict], out: str) -> None:
    from sdpa_plots import plot_pairs

    os.makedirs(out, exist_ok=True)
    title = "iosim's CuPy kernels on an H200 (Nsight Compute) vs iosim"
    plot_pairs(rows, lambda r: (r["predicted"]["loads"], r["measured"]["loads"]), f"Global-load bytes\n{title}",
               "bytes", os.path.join(out, "cupy-global-loads.png"))
    plot_pairs(rows, lambda r: (r["predicted"]["dram_read"], r["measured"]["dram_read"]),
               f"DRAM read bytes (L2 model)\n{title}", "bytes", os.path.join(out, "cupy-dram-read.png"),
               band=[(0.10, "--")])
    plot_pairs([r for r in rows if r["predicted"]["model_time_s"]],
               lambda r: (r["predicted"]["model_time_s"], r["measured"]["time_s"]),
               f"Kernel time, tensor-core fa2 (kernel time model)\n{title}", "s",
               os.path.join(out, "cupy-time.png"), band=[(0.25, ":")])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("raw_dir")
    parser.add_argument("--json")
    parser.add_argument("--plots", help="write cupy-global-loads/dram-read/time.png here")
    args = parser.parse_args()
    rows = compare(args.raw_dir)
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)
    if args.plots:
        plots(rows, args.plots)
    print(markdown(rows))


if __name__ == "__main__":
    main()
