"""The ``cudnn`` preset's kernel time model (:mod:`iosim.models.cudnn_time`, on the steps shipped in
``iosim/kernels/cudnn_steps_*.json``) against every committed H200 run of cuDNN's persistent kernels
(``cudnn_steps_table.COMMITTED``, timed under Nsight Compute): per launch of the fprop and the bprop, measured over
predicted. None of these launches is one the steps were measured on (``benchmarks/cudnn_steps.py``).

    python benchmarks/cudnn_time_check.py [--json OUT] [--least N]

``--least``: only launches whose N_q is at least this (default 0: all); the summary gives N ≥ 2,048 apart.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cudnn_compare import records  # noqa: E402
from cudnn_steps_table import COMMITTED, ROOT, kernel_of  # noqa: E402
from iosim import IosimError, Options, simulate  # noqa: E402
from iosim.gpu.sdpa import problem_of  # noqa: E402
from iosim.models.cudnn_time import PERSISTENT  # noqa: E402

KERNEL_OF = {v: k for k, v in PERSISTENT.items()}     # fprop -> main, bprop -> dq_dk_dv


def launches(least: int = 0) -> list[dict]:
    """One row per committed fprop or bprop launch (repeats of a shape apart): run, config, kernel, measured and
    model seconds, the model's name (None where the preset refuses the shape or has no step for it)."""
    out, cache = [], {}
    for run in COMMITTED:
        for rec in records(os.path.join(ROOT, "docs", "validation", run)):
            c = rec["config"]
            p = problem_of(c)
            if p.seq_len_q < least or p.seq_len_q == 1:
                continue
            if p not in cache:
                cache[p] = _simulated(p)
            result = cache[p]
            for row in rec["rows"]:
                kernel = kernel_of(row["kernel"])
                if kernel:
                    out.append({"run": run, "config": c, "kernel": kernel, "measured_s": row["time_us"] * 1e-6,
                                **_model(result, kernel)})
    return out


def _simulated(p):
    """The preset's run of ``p``, or why it refuses it."""
    try:
        return simulate("h200", "fa2", p, passes="forward+backward", options=Options(kernel="cudnn", cache="auto"))
    except IosimError as exc:
        return str(exc)


def _model(result, kernel: str) -> dict:
    """model_s, bound and why_none of ``kernel``'s launch in ``result`` (a run, or why the preset refused it)."""
    if isinstance(result, str):
        return {"model_s": None, "bound": None, "why_none": result}
    timed = result.kernel_times.get(KERNEL_OF[kernel])
    if timed is None:
        return {"model_s": None, "bound": None,
                "why_none": result.options["launches"][0 if kernel == "fprop" else -1]["time_model"]}
    return {"model_s": timed.predicted_s, "bound": timed.bound, "why_none": None}


def summary(rows: list[dict], least: int = 2048) -> dict:
    """{kernel: {launches, median |error|, worst |error|, within 10 %, within 20 %}} over the launches at N ≥ least
    that have a model (error: model / measured − 1)."""
    out = {}
    for kernel in ("fprop", "bprop"):
        errors = [r["model_s"] / r["measured_s"] - 1 for r in rows
                  if r["kernel"] == kernel and r["model_s"] and problem_of(r["config"]).seq_len_q >= least]
        if errors:
            size = [abs(e) for e in errors]
            out[kernel] = {"launches": len(errors), "median_abs_error": statistics.median(size),
                           "worst_abs_error": max(size), "within_10": sum(e <= 0.10 for e in size),
                           "within_20": sum(e <= 0.20 for e in size)}
    return out


def markdown(rows: list[dict]) -> str:
    lines = ["| run | config | kernel | measured µs | model µs | measured / model | bound |", "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        c = r["config"]
        shape = (f"d={c['head_dim']} N={c.get('seq_len', c.get('seq_len_q'))} B={c['batch']} H={c['heads']}"
                 f"{' H_kv=' + str(c['kv_heads']) if c.get('kv_heads') else ''} {c.get('dtype', 'fp16')}"
                 f"{' causal' if c.get('causal') else ''}")
        model = f"{r['model_s'] * 1e6:.1f}" if r["model_s"] else "-"
        ratio = f"{r['measured_s'] / r['model_s']:.3f}" if r["model_s"] else (r["why_none"] or "-")[:60]
        lines.append(f"| {r['run']} | {shape} | {r['kernel']} | {r['measured_s'] * 1e6:.1f} | {model} | {ratio} | "
                     f"{r['bound'] or '-'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--least", type=int, default=0)
    a = ap.parse_args(argv)
    rows = launches(a.least)
    print(markdown(rows))
    for least in (0, 2048):
        print(f"\nN >= {least}:", json.dumps(summary(rows, least)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"launches": rows, "summary": summary(rows)}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
