"""Does Nsight Compute's replay change the DRAM bytes it reports for the flash kernels?
(device machine only; the summary runs anywhere)

ncu collects a metric set in one or more passes. In kernel replay (its default) it saves
the memory a kernel can reach before the first pass and restores what the kernel wrote
before every later pass; the restore is a copy through the L2. The SASS byte counters of
the ``lsu`` set (benchmarks/sdpa_ncu.py) need passes of their own, so the DRAM counters may
be read in a pass that follows a restore. This measures one grid four ways, each head dim a
separate ncu run:

* ``dram``, ``dram_again``: DRAM read and written bytes and the time only (one pass, no
  restore), twice, for the run-to-run spread;
* ``lsu``: the validation's metric set, as the committed grids were measured;
* ``lsu_app``: the same set in application replay (``--replay-mode application``: the
  process is run again for every pass; nothing is restored).

Run:      PYTHONPATH=$PWD python3 benchmarks/ncu_replay_probe.py --out DIR [--grid s19]
Summary:  python benchmarks/ncu_replay_probe.py --summary DIR
Writes DIR/{variant}/sdpa_configs.json and sdpa_d{D}.csv (raw ncu CSV, as sdpa_ncu.py does)
and DIR/passes.txt (ncu's own report of the passes, one small run per variant).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iosim.gpu import sdpa  # noqa: E402
from sdpa_ncu import DRAM_METRICS  # noqa: E402

VARIANTS = {"dram": (DRAM_METRICS, []), "dram_again": (DRAM_METRICS, []), "lsu": (sdpa.METRICS, []),
            "lsu_app": (sdpa.METRICS, ["--replay-mode", "application"])}
SDPA_NCU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sdpa_ncu.py")


def drive(out: str, grid_name: str, budget_s: float) -> None:
    from iosim.gpu.ncu import find_ncu
    from sdpa_grids import GRIDS, grid
    from sdpa_ncu import available_metrics, run_ncu

    ncu, start = find_ncu(), time.time()
    head_dims = GRIDS[grid_name]["head_dims"]
    grids = {d: grid(d, grid_name) for d in head_dims}
    passes = []
    for variant, (wanted, extra) in VARIANTS.items():
        folder = os.path.join(out, variant)
        os.makedirs(folder, exist_ok=True)
        metrics = available_metrics(ncu, wanted)
        json.dump({"metrics": metrics, "grid_name": grid_name, "grid": grids, "ncu_extra": extra},
                  open(os.path.join(folder, "sdpa_configs.json"), "w"), indent=1)
        for d in head_dims:
            left = budget_s - (time.time() - start)
            if left < 20:
                print(f"{variant} d={d}: skipped, {left:.0f} s left", flush=True)
                continue
            t0 = time.time()
            target = [SDPA_NCU, "--target", "--head-dim", str(d), "--grid", grid_name]
            run_ncu(ncu, "regex:flash", metrics, target, os.path.join(folder, f"sdpa_d{d}.csv"), left, extra=extra)
            print(f"{variant} d={d}: {time.time() - t0:.0f} s", flush=True)
        # ncu's own report (not CSV) of how many passes each launch took: the first kernel only
        cmd = [ncu, "--clock-control", "none", *extra, "--kernel-name", "regex:flash", "--launch-count", "1",
               "--metrics", ",".join(metrics), sys.executable, *target]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        passes.append(f"## {variant}\n" + "\n".join(l for l in (done.stdout + done.stderr).splitlines()
                                                    if l.startswith("==PROF==")))
    open(os.path.join(out, "passes.txt"), "w").write("\n".join(passes) + "\n")


def rows(out: str) -> list[dict]:
    """Per launch of every variant: config, kernel label, DRAM bytes read and written."""
    found = []
    for variant in VARIANTS:
        folder = os.path.join(out, variant)
        if not os.path.exists(folder):
            continue
        for cfg, _problem, launches in sdpa.raw_configs(folder):
            for i, launch in enumerate(launches):
                m = launch["metrics"]
                found.append({"variant": variant, "config": cfg, "index": i, "kernel": sdpa.label(launch["name"]),
                              "read": m.get("dram__bytes_read.sum"), "write": m.get("dram__bytes_write.sum")})
    return found


def summary(out: str) -> str:
    table: dict = {}
    for r in rows(out):
        key = (json.dumps(r["config"], sort_keys=True), r["index"], r["kernel"])
        table.setdefault(key, {})[r["variant"]] = (r["read"], r["write"])
    variants = [v for v in VARIANTS if any(v in cells for cells in table.values())]
    head = "| d | N_q×N_kv | B×H | causal | kernel | " + " | ".join(f"{v} R/W (MB)" for v in variants) + " |"
    lines = [head, "|" + "---|" * (5 + len(variants))]
    for (cfg_text, _i, kernel), cells in table.items():
        cfg = json.loads(cfg_text)
        if kernel not in ("main", "dq_dk_dv", "splitkv"):
            continue
        shape = f"{cfg.get('seq_len_q', cfg['seq_len']):,}×{cfg.get('seq_len_kv', cfg['seq_len']):,}"
        cell = lambda c: f"{c[0] / 1e6:.1f} / {c[1] / 1e6:.1f}" if c and c[0] is not None else "-"
        lines.append(f"| {cfg['head_dim']} | {shape} | {cfg['batch']}×{cfg['heads']} | {'y' if cfg['causal'] else ''} "
                     f"| {kernel} | " + " | ".join(cell(cells.get(v)) for v in variants) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--grid", default="s19")
    parser.add_argument("--budget-s", type=float, default=500.0)
    parser.add_argument("--summary", metavar="DIR")
    args = parser.parse_args()
    if args.summary:
        print(summary(args.summary))
        return
    if not args.out:
        parser.error("--out DIR (on the device) or --summary DIR")
    drive(args.out, args.grid, args.budget_s)


if __name__ == "__main__":
    main()
