"""The driver of a one-file Nsight Compute measurement (device machine only), shared by
benchmarks/l2_sweep_ncu.py, l2_partitions_ncu.py and cupy_ncu.py: the script runs itself
under ncu in ``--target`` mode."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iosim.gpu.ncu import find_ncu  # noqa: E402
from sdpa_ncu import available_metrics, run_ncu  # noqa: E402


def self_profile(script: str, doc: str, run_target, kernel_filter: str, wanted: list[str], csv_name: str,
                 meta_name: str, meta: dict, budget_s: float = 240.0) -> None:
    """With ``--target``, ``run_target()`` (what ncu profiles); otherwise ``script --target``
    under ncu with the metrics this ncu knows of ``wanted``: the raw CSV to OUT/``csv_name``,
    ``meta`` (with the metrics) to OUT/``meta_name``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--target", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--budget-s", type=float, default=budget_s)
    args = ap.parse_args()
    if args.target:
        run_target()
        return
    ncu = find_ncu()
    metrics = available_metrics(ncu, wanted)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, meta_name), "w") as f:
        json.dump({**meta, "metrics": metrics, "asked": wanted}, f, indent=1)
    t0 = time.time()
    text = run_ncu(ncu, kernel_filter, metrics, [script, "--target"], os.path.join(args.out, csv_name),
                   timeout=args.budget_s)
    print(f"{time.time() - t0:.0f} s, {text.count(chr(10))} lines, metrics: {len(metrics)}/{len(wanted)}", flush=True)


def main_or_summary(summary, *args, **kwargs) -> None:
    """``--summary DIR``: print ``summary(DIR)`` (a committed run's table, anywhere); otherwise
    :func:`self_profile` with ``args`` and ``kwargs`` (on the device machine)."""
    if sys.argv[1:2] == ["--summary"]:
        print(summary(sys.argv[2]))
        return
    self_profile(*args, **kwargs)
