"""Predicted against measured, one plot per quantity, for the committed SDPA measurements.

    python benchmarks/sdpa_compare.py RAW_DIR --cache --json rows.json
    python benchmarks/sdpa_plots.py OUT_DIR rows.json [more_rows.json ...]

Writes OUT_DIR/sdpa-global-loads.png, sdpa-l2-read.png, sdpa-dram-read.png,
sdpa-dram-write.png and sdpa-time.png: each point is one kernel launch, iosim's prediction on x and Nsight
Compute's measurement on y, log-log, with the y = x line (and ±10 % / ±20 % bands where
the issue sets a target). Time is the kernel time model's (iosim.models.kernel_time).
"""

from __future__ import annotations

import json
import os
import sys

MARKERS = {"main": "o", "splitkv": "s", "combine": "D", "dot_do_o": "^", "dq_dk_dv": "v", "convert_dq": "P",
           "fa2": "o", "standard": "s", "fa1": "D"}  # the last three: iosim's CuPy kernels


def plot_pairs(rows, pick, title, unit, path, band=None):
    """One log-log scatter of (predicted, measured) = pick(row), a marker per row["kernel"]."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    lo, hi = float("inf"), 0.0
    for kernel, marker in MARKERS.items():
        pts = [pick(r) for r in rows if r["kernel"] == kernel]
        pts = [(x, y) for x, y in pts if x > 0 and y > 0]
        if not pts:
            continue
        xs, ys = zip(*pts)
        lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
        ax.scatter(xs, ys, marker=marker, facecolors="none", edgecolors="black", s=28, label=kernel)
    ax.plot([lo, hi], [lo, hi], color="black", lw=1, label="measured = predicted")
    if band:
        for b, style in band:
            ax.plot([lo, hi], [lo * (1 + b), hi * (1 + b)], color="gray", lw=0.8, ls=style,
                    label=f"±{int(b * 100)} %")
            ax.plot([lo, hi], [lo / (1 + b), hi / (1 + b)], color="gray", lw=0.8, ls=style)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"iosim prediction ({unit})")
    ax.set_ylabel(f"Nsight Compute measurement ({unit})")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", lw=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def global_loads(r: dict) -> tuple:
    """(predicted, measured) global-load bytes by the metric the replays hold exact: the L1 tag
    stage's (iosim's in whole sectors where they differ), the combine's SASS bytes."""
    p, m = r["predicted"], r["measured"]
    return (p["loads"], m["loads"]) if r["kernel"] == "combine" else (p.get("l1tex_loads", p["loads"]), m["l1tex_ld"])


def main() -> None:
    out = sys.argv[1]
    rows = [row for path in sys.argv[2:] for row in json.load(open(path))]
    os.makedirs(out, exist_ok=True)
    plot_pairs(rows, global_loads,
          "Global-load bytes per kernel launch\nPyTorch flash SDPA on an H200 vs iosim --kernel flash-attn-2",
          "bytes", os.path.join(out, "sdpa-global-loads.png"))
    plot_pairs(rows, lambda r: (r["predicted"]["l2_read"], r["measured"]["l2_read_from_sm"]),
               "L2 reads from the SMs per kernel launch\nmeasured (lts__t_sectors_srcunit_tex_op_read × 32) vs "
               "iosim's requests", "bytes", os.path.join(out, "sdpa-l2-read.png"))
    plot_pairs(rows, lambda r: (r["predicted"]["dram_read"], r["measured"]["dram_read"]),
          "DRAM read bytes per kernel launch\nmeasured vs iosim's L2 model", "bytes",
          os.path.join(out, "sdpa-dram-read.png"), band=[(0.10, "--")])
    plot_pairs(rows, lambda r: (r["predicted"]["dram_write"], r["measured"]["dram_write"]),
          "DRAM write bytes per kernel launch\nmeasured vs iosim's L2 model", "bytes",
          os.path.join(out, "sdpa-dram-write.png"), band=[(0.10, "--")])
    plot_pairs([r for r in rows if r["seq_len"] >= 2048], lambda r: (r["predicted"]["time_s"], r["measured"]["time_s"]),
          "Kernel time per launch (N ≥ 2,048)\nmeasured vs iosim's kernel time model", "s",
          os.path.join(out, "sdpa-time.png"), band=[(0.10, "--"), (0.20, ":")])


if __name__ == "__main__":
    main()
