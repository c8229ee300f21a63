"""What benchmarks/triton_tiles_compare.py and benchmarks/cupy_tiles_compare.py share (issue 14,
item 3): read a measured tile CSV, judge the model's ranking per shape (its pick against the
measured best, within 5 %?, Spearman's rho), the issue's targets, the printed report and the
plot of predicted against measured time. No GPU, no iosim import.
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import sys

SHAPE_FIELDS = ("seq_len", "head_dim", "batch", "heads", "causal")
#: the issue's targets: the pick within 5 % of the best on >= 11 of 12 shapes, median rho >= 0.8
TARGET_SHAPES, TARGET_WITHIN, TARGET_RHO, WITHIN = 12, 11, 0.8, 1.05


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


def read_measured(path: str, config_fields: tuple[str, ...]) -> dict:
    """shape (N, d, B, H, causal) -> {config (the ``config_fields`` as ints): median seconds},
    the timed rows only (no error, a median)."""
    out: dict = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["error"] or not r["median_s"]:
                continue
            shape = (*(int(r[k]) for k in SHAPE_FIELDS[:4]), r["causal"] == "True")
            out.setdefault(shape, {})[tuple(int(r[k]) for k in config_fields)] = float(r["median_s"])
    return out


def load_measured(folder: str, config_fields: tuple[str, ...]) -> dict:
    """:func:`read_measured` of ``folder``/results.csv; on a missing or malformed file, one line
    on stderr and exit status 2."""
    path = os.path.join(folder, "results.csv")
    try:
        measured = read_measured(path, config_fields)
    except (OSError, KeyError, ValueError, csv.Error) as exc:
        sys.exit(_die(f"cannot read {path}: {type(exc).__name__}: {exc}"))
    if not measured:
        sys.exit(_die(f"{path} has no timed row"))
    return measured


def write_predictions(path: str, table: dict, extra: dict) -> None:
    """``table`` (shape -> {config: predicted seconds}) as JSON at ``path``, with the commit it
    was made at: written before the GPU times the shapes (a prospective check)."""
    import subprocess
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"commit_before": commit, **extra, "shapes": [list(s) for s in table],
           "predicted_s": {str(tuple(s)): {str(c): t for c, t in sorted(row.items())} for s, row in table.items()}}
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"{len(table)} shapes predicted into {path}")


def read_predictions(path: str):
    """``predict(shape, configs)`` from a committed predictions file."""
    import ast
    with open(path) as f:
        table = json.load(f)["predicted_s"]
    return lambda shape, times: {ast.literal_eval(c): t for c, t in table.get(str(tuple(shape)), {}).items()}


def _die(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def judge(measured: dict, predicted: dict) -> dict:
    """One shape: the configurations both have; the model's pick, the measured best, rho."""
    common = sorted(set(measured) & set(predicted))
    pick = min(common, key=lambda c: predicted[c])
    best = min(common, key=lambda c: measured[c])
    return {"configs": len(common), "pick": pick, "best": best, "pick_over_best": measured[pick] / measured[best],
            "within_5pct": measured[pick] <= WITHIN * measured[best],
            "rho": spearman([predicted[c] for c in common], [measured[c] for c in common])}


def summary(judged: list[dict]) -> dict:
    within = sum(j["within_5pct"] for j in judged)
    rho = statistics.median(j["rho"] for j in judged) if judged else float("nan")
    return {"shapes": len(judged), "pick_within_5pct": within, "median_rho": rho,
            "target_pick": within >= TARGET_WITHIN and len(judged) >= TARGET_SHAPES, "target_rho": rho >= TARGET_RHO}


def compare(measured: dict, predict, out_dir: str, plot: str | None, title: str, extra=None) -> dict:
    """Judge every measured shape with ``predict(shape, configs) -> {config: seconds}``, print
    one line per shape and the summary, write ``compare.json`` under ``out_dir`` (with
    ``extra``, a JSON-able dict, when given) and, with ``plot``, the scatter plot."""
    judged, points = [], []
    for shape, times in sorted(measured.items()):
        predicted = predict(shape, times)
        if not set(predicted) & set(times):
            print(f"{shape}: no configuration both measured and predicted", flush=True)
            continue
        j = {"shape": shape, **judge(times, predicted),
             "measured_s": {str(c): t for c, t in sorted(times.items())},
             "predicted_s": {str(c): t for c, t in sorted(predicted.items())}}
        judged.append(j)
        points.append((shape, [(predicted[c], times[c]) for c in times if c in predicted]))
        print(f"{shape}: pick {j['pick']} best {j['best']} ratio {j['pick_over_best']:.3f} "
              f"{'within 5 %' if j['within_5pct'] else 'NOT within 5 %'} rho {j['rho']:.2f} ({j['configs']} configs)",
              flush=True)
    s = summary(judged)
    print(json.dumps(s, indent=2))
    with open(os.path.join(out_dir, "compare.json"), "w") as f:
        json.dump({"summary": s, **(extra or {}), "shapes": judged}, f, indent=2, default=str)
    if plot and points:
        plot_points(points, plot, title)
    return s


def plot_points(points, path: str, title: str) -> None:
    """Predicted against measured time (log-log, the y = x line), one colour per shape."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 7))
    for shape, pairs in points:
        ax.scatter([m * 1e3 for _, m in pairs], [p * 1e3 for p, _ in pairs], s=8, label=str(shape))
    lo = min(min(p, m) for _, pairs in points for p, m in pairs) * 1e3
    hi = max(max(p, m) for _, pairs in points for p, m in pairs) * 1e3
    ax.plot([lo, hi], [lo, hi], "k--", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="measured (ms)", ylabel="predicted (ms)", title=title)
    ax.legend(fontsize=6)
    fig.savefig(path, dpi=120, bbox_inches="tight")
