"""Compare the ``triton-fa2`` preset's predictions with benchmarks/triton_tiles.py's measured
CSV (runs here, no GPU; docs/triton.md):

    python3 benchmarks/triton_tiles_compare.py DIR [--plot FILE.png] [--cache/--no-cache]

Per shape: the model's pick (explore's best among the measured configurations) against the
measured best (within 5 %?), Spearman's rho of predicted against measured time over the
configurations; then the issue's targets: pick within 5 % on >= 11 of 12 shapes, median rho >= 0.8.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ranks(values: list[float]) -> list[float]:
    """Ranks from 1, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation (Pearson's on the ranks)."""
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    var = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / var if var else float("nan")


def read_measured(path: str) -> dict:
    """shape -> {config: median seconds} of the timed configurations."""
    out: dict = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["error"] or not r["median_s"]:
                continue
            shape = (int(r["seq_len"]), int(r["head_dim"]), int(r["batch"]), int(r["heads"]), r["causal"] == "True")
            cfg = (int(r["block_m"]), int(r["block_n"]), int(r["num_warps"]), int(r["num_stages"]))
            out.setdefault(shape, {})[cfg] = float(r["median_s"])
    return out


def judge(measured: dict, predicted: dict) -> dict:
    """One shape: the configurations both have; the model's pick, the measured best, rho."""
    common = sorted(set(measured) & set(predicted))
    pick = min(common, key=lambda c: predicted[c])
    best = min(common, key=lambda c: measured[c])
    return {"configs": len(common), "pick": pick, "best": best, "pick_over_best": measured[pick] / measured[best],
            "within_5pct": measured[pick] <= 1.05 * measured[best],
            "rho": spearman([predicted[c] for c in common], [measured[c] for c in common])}


def summary(judged: list[dict]) -> dict:
    within = sum(j["within_5pct"] for j in judged)
    rho = statistics.median(j["rho"] for j in judged)
    return {"shapes": len(judged), "pick_within_5pct": within, "median_rho": rho,
            "target_pick": within >= 11 and len(judged) >= 12, "target_rho": rho >= 0.8}


def predict_shape(shape, configs, cache) -> dict:
    from iosim import Problem
    from iosim.studies.explore.triton_configs import explore_triton
    n, d, b, h, causal = shape
    r = explore_triton("h200", Problem(seq_len=n, head_dim=d, batch=b, heads=h, causal=causal, dtype="fp16"),
                       configs=list(configs), cache=cache)
    return {c.config.key(): c.predicted_s for c in r.candidates if c.feasible}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="the folder triton_tiles.py wrote (results.csv)")
    ap.add_argument("--plot", help="predicted against measured time per configuration (.png)")
    ap.add_argument("--cache", action=argparse.BooleanOptionalAction, default=None)
    args = ap.parse_args()
    measured = read_measured(os.path.join(args.dir, "results.csv"))
    judged, points = [], []
    for shape, times in sorted(measured.items()):
        predicted = predict_shape(shape, times, args.cache)
        j = {"shape": shape, **judge(times, predicted)}
        judged.append(j)
        points.append((shape, [(predicted[c], times[c]) for c in times if c in predicted]))
        print(f"{shape}: pick {j['pick']} best {j['best']} ratio {j['pick_over_best']:.3f} "
              f"rho {j['rho']:.2f} ({j['configs']} configs)", flush=True)
    s = summary(judged)
    print(json.dumps(s, indent=2))
    with open(os.path.join(args.dir, "compare.json"), "w") as f:
        json.dump({"summary": s, "shapes": judged}, f, indent=2, default=str)
    if args.plot:
        _plot(points, args.plot)
    return 0


def _plot(points, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 7))
    for shape, pairs in points:
        ax.scatter([m * 1e3 for _, m in pairs], [p * 1e3 for p, _ in pairs], s=8, label=str(shape))
    lo = min(min(p, m) for _, pairs in points for p, m in pairs) * 1e3
    hi = max(max(p, m) for _, pairs in points for p, m in pairs) * 1e3
    ax.plot([lo, hi], [lo, hi], "k--", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="measured (ms)", ylabel="predicted (ms)",
           title="triton-fa2: predicted vs measured, every configuration")
    ax.legend(fontsize=6)
    fig.savefig(path, dpi=120, bbox_inches="tight")


if __name__ == "__main__":
    sys.exit(main())
