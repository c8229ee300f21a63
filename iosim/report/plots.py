"""Plots for ``iosim bounds --plot`` and ``iosim explore --plot`` (matplotlib, optional).

matplotlib is imported only when a plot is asked for; without it the command stops with
:class:`~iosim.errors.DependencyError` (exit code 2) and the pip command to run. Figures
are drawn on the Agg canvas without touching pyplot's global state, and saved as PNG or
SVG by the file's extension. They are meant to read in black and white: lines differ by
marker and dash as well as colour, the heat map's colour scale is monotone in lightness,
and infeasible cells are hatched.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from statistics import median
from typing import Sequence

from ..errors import DependencyError, ProblemError
from .files import check_writable

FORMATS = (".png", ".svg")
_MARKERS = ("o", "s", "^", "D", "v", "P")
_DASHES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (1, 1)))
_COLORS = ("#1f4e79", "#c0504d", "#4f6228", "#7f6000", "#5f497a", "#31859c")


def require_matplotlib():
    """The matplotlib modules the plots use, or DependencyError with the install command."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise DependencyError(
            "plots need matplotlib, which is not installed: pip install 'iosim[plot]' (or pip install matplotlib)"
        ) from None
    return Figure, FigureCanvasAgg


def check_plot_path(path: str | os.PathLike) -> Path:
    """Validate a --plot FILE before any work is done: a .png or .svg in an existing folder,
    that can be opened for writing (tried here: a file this made is removed again)."""
    p = Path(path)
    if p.suffix.lower() not in FORMATS:
        raise ProblemError(f"--plot {path}: the file must end in .png or .svg (the format follows the extension)")
    check_writable(p, "--plot")
    require_matplotlib()
    return p


def problem_label(p) -> str:
    """The problem as a plot title names it: lengths, d, heads (GQA's K/V heads), batch, dtype, causal."""
    n = f"N = {p.seq_len_q:,}" if p.seq_len_q == p.seq_len_kv else f"N_q = {p.seq_len_q:,}, N_kv = {p.seq_len_kv:,}"
    heads = f"heads = {p.heads}" + (f" (K/V heads {p.kv_heads})" if p.kv_heads != p.heads else "")
    batch = f", batch {p.batch}" if p.batch != 1 else ""
    return f"{n}, d = {p.head_dim}, {heads}{batch}, {p.dtype}" + (", causal" if p.causal else "")


def _new_figure(width: float, height: float):
    Figure, Canvas = require_matplotlib()
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    Canvas(fig)
    return fig


def _style(k: int) -> dict:
    return {"marker": _MARKERS[k % len(_MARKERS)], "linestyle": _DASHES[k % len(_DASHES)],
            "color": _COLORS[k % len(_COLORS)], "markersize": 5, "linewidth": 1.6}


# --------------------------------------------------------------------------------------
# bounds
# --------------------------------------------------------------------------------------
def plot_bounds(report, path: str | os.PathLike) -> Path:
    """Count against M and against N (log-log), one line per algorithm, with the claims' lines."""
    path = check_plot_path(path)
    N = report.reference_N()
    d = 128 if 128 in report.head_dims else max(report.head_dims)
    fig = _new_figure(13, 6.8)
    ax_m, ax_n = fig.subplots(1, 2)
    theta = [v for v in report.verdicts if v.claim.kind == "theta"]
    has_lower = "proposition3-lower" in {v.claim.id for v in report.verdicts}

    # Left: count vs M at (N, d).
    Ms = _algorithm_lines(ax_m, report, theta, lambda p: p.N == N and p.d == d, lambda p: p.M)
    if Ms:
        lower = [M for M in Ms if M >= d * d]
        if lower and has_lower:
            ax_m.plot(lower, [N * N * d * d / M for M in lower], color="black", linestyle=":", linewidth=1.4,
                      label="lower bound N²d²/M, M ≥ d² (Prop. 3; Saha & Ye)")
        ax_m.plot(Ms, [4 * N * d] * len(Ms), color="0.45", linestyle=(0, (6, 2, 1, 2)), linewidth=1.2,
                  label="compulsory 4Nd (read Q, K, V, write O)")
        if report.block_rule == "paper" and 4 * d * d <= Ms[-1]:
            ax_m.axvline(4 * d * d, color="0.3", linewidth=1.0, linestyle=(0, (8, 3)),
                         label=f"M = 4d² = {4 * d * d:,}: paper rule caps B_r at d above")
        if Ms[0] <= report.profile_M <= Ms[-1]:
            ax_m.axvline(report.profile_M, color="0.55", linewidth=1.0, linestyle=(0, (1, 2)),
                         label=f"{report.profile}'s M = {report.profile_M:,}")
    _loglog(ax_m, "SRAM size M (elements)", f"count against M at N = {N:,}, d = {d}")

    # Right: count vs N at the profile's M, d.
    M = report.profile_M
    Ns = _algorithm_lines(ax_n, report, theta, lambda p: p.M == M and p.d == d, lambda p: p.N)
    if Ns:
        if M >= d * d and has_lower:
            ax_n.plot(Ns, [n * n * d * d / M for n in Ns], color="black", linestyle=":", linewidth=1.4,
                      label="lower bound N²d²/M (M ≥ d²)")
        ax_n.plot(Ns, [4 * n * d for n in Ns], color="0.45", linestyle=(0, (6, 2, 1, 2)), linewidth=1.2,
                  label="compulsory 4Nd")
        _loglog(ax_n, "sequence length N", f"count against N at M = {M:,} ({report.profile}), d = {d}")
    else:
        ax_n.text(0.5, 0.5, f"the profile's M = {M:,} is outside d ≤ M ≤ N·d\nfor every swept N",
                  ha="center", va="center", transform=ax_n.transAxes)
        ax_n.set_axis_off()
    for ax in (ax_m, ax_n):
        if ax.axison:
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    held = ", ".join(f"{v.algorithm} {v.claim.id} {'holds' if v.holds else 'FAILS'}" for v in report.verdicts
                     if v.claim.kind == "theta")
    fig.suptitle(f"HBM accesses counted by iosim on {report.profile}, {report.block_rule} block rule"
                 f"{chr(10) + held if held else ''}", fontsize=10)
    fig.savefig(path)
    return path


def _algorithm_lines(ax, report, theta, on_slice, x_of) -> list:
    """One line per algorithm, its count against ``x_of(point)`` over its feasible points on
    the slice, then the Θ claims' lines; the sorted x values of every point on the slice."""
    for k, algo in enumerate(report.algorithms):
        pts = sorted((p for p in report.feasible(algo) if on_slice(p)), key=x_of)
        if pts:
            ax.plot([x_of(p) for p in pts], [p.count for p in pts], label=algo, **_style(k))
    xs = sorted({x_of(p) for p in report.points if on_slice(p)})
    if xs:
        _claim_lines(ax, report, theta, on_slice, x_of)
    return xs


def _claim_lines(ax, report, theta, on_slice, x_of) -> None:
    """Each Θ claim's expression over the points its algorithm has on this slice, scaled by
    the median ratio there."""
    drawn = set()
    for v in theta:
        if v.claim.id in drawn:
            continue
        pts = sorted((p for p in report.feasible(v.algorithm) if on_slice(p)), key=x_of)
        if not pts:
            continue
        c = median(float(p.count / v.claim.value(p.N, p.d, p.M)) for p in pts)
        ax.plot([x_of(p) for p in pts], [c * float(v.claim.value(p.N, p.d, p.M)) for p in pts], color="0.55",
                linewidth=5, alpha=0.4, solid_capstyle="butt", zorder=1,
                label=f"Θ line: {c:.3g}·({v.claim.expression}), c from {v.algorithm}")
        drawn.add(v.claim.id)


def _loglog(ax, xlabel: str, title: str) -> None:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("HBM accesses per head (elements)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", color="0.85", linewidth=0.6)


# --------------------------------------------------------------------------------------
# explore
# --------------------------------------------------------------------------------------
_EXPLORE_LABELS = {"time": "predicted time", "bytes": "HBM bytes", "dram": "DRAM bytes"}
#: panels per row of explore's figure
_EXPLORE_COLUMNS = 3


def plot_explore(results: Sequence, path: str | os.PathLike) -> Path:
    """Heat map of the objective over (B_r, B_c), one panel per point and algorithm."""
    path = check_plot_path(path)
    ncols = min(len(results), _EXPLORE_COLUMNS)
    nrows = -(-len(results) // ncols)
    fig = _new_figure(6.2 * ncols + 0.6, 6.6 * nrows)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, res in zip(axes, results):
        _explore_panel(fig, ax, res)
    for ax in axes[len(results):]:
        ax.set_axis_off()
    fig.savefig(path)
    return path


def _explore_cells(res, rows: list, cols: list) -> tuple:
    """(values ÷ best, infeasible cells, spilling cells, cells whose value is a lower bound)."""
    ri, ci = {r: k for k, r in enumerate(rows)}, {c: k for k, c in enumerate(cols)}
    best = res.best.value(res.objective)[0]
    values = [[math.nan] * len(cols) for _ in rows]
    spill, bounded = [], []
    xe, ye = _edges(cols), _edges(rows)
    run = {(c.block_q, c.block_kv) for c in res.candidates}
    bad = [[(xe[j], ye[i]), (xe[j + 1], ye[i]), (xe[j + 1], ye[i + 1]), (xe[j], ye[i + 1])]
           for i, r in enumerate(rows) for j, c in enumerate(cols) if (r, c) not in run]  # past the edge: not run
    for c in res.candidates:
        if c.block_q not in ri or c.block_kv not in ci:
            continue
        i, j = ri[c.block_q], ci[c.block_kv]
        cell = [(xe[j], ye[i]), (xe[j + 1], ye[i]), (xe[j + 1], ye[i + 1]), (xe[j], ye[i + 1])]
        if not c.feasible:
            bad.append(cell)
            continue
        values[i][j] = c.value(res.objective)[0] / best
        if not c.registers_fit:
            spill.append(cell)
        if not c.exact(res.objective):
            bounded.append(cell)
    return values, bad, spill, bounded


def _explore_panel(fig, ax, res) -> None:
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, LogLocator

    rows = sorted({c.block_q for c in res.candidates if "grid" in c.sources or "user" in c.sources})
    cols = sorted({c.block_kv for c in res.candidates if "grid" in c.sources or "user" in c.sources})
    values, bad, spill, bounded = _explore_cells(res, rows, cols)
    xe, ye = _edges(cols), _edges(rows)
    finite = [v for row in values for v in row if not math.isnan(v)]
    mesh = ax.pcolormesh(xe, ye, values, cmap="viridis_r", shading="flat",
                         norm=LogNorm(vmin=1, vmax=max(finite + [1.01])))
    ax.add_collection(PolyCollection(bad, facecolors="0.88", edgecolors="0.45", hatch="xx", linewidths=0))
    for cells, hatch in ((spill, ".."), (bounded, "//")):
        if cells:
            ax.add_collection(PolyCollection(cells, facecolors="none", edgecolors="white", hatch=hatch, linewidths=0))
    label = _EXPLORE_LABELS[res.objective]
    fig.colorbar(mesh, ax=ax, shrink=0.85).set_label(f"{label} ÷ best (log scale)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlim(xe[0], xe[-1])
    ax.set_ylim(ye[0], ye[-1])
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=2))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlabel("B_c, key/value rows per tile (log scale)")
    ax.set_ylabel("B_r, query rows per tile (log scale)")
    ax.set_title(f"{res.algorithm} on {res.profile}: {problem_label(res.problem)}\n{label}; {res.time_model}; "
                 f"grid {res.grid}", fontsize=9)
    handles = _mark(ax, res) + [Patch(facecolor="0.88", edgecolor="0.45", hatch="xx",
                                      label="does not fit (past the edge: not run)")]
    if spill:
        handles.append(Patch(facecolor="0.5", edgecolor="white", hatch="..", label="fits, registers would spill"))
    if bounded:
        handles.append(Patch(facecolor="0.5", edgecolor="white", hatch="//", label="lower bound (L2 not replayed)"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=8,
              frameon=False, title=f"{label} relative to the best in brackets", title_fontsize=8)


def _mark(ax, res) -> list:
    """Mark the best, the practical choice, the paper default and the real kernel's tile;
    their legend handles."""
    from matplotlib.lines import Line2D

    handles = []
    best = res.best.value(res.objective)[0]
    for label, c, marker, size in (("best", res.best, "*", 15), ("practical choice", res.practical, "D", 8),
                                   ("paper default", res.paper, "o", 8), ("real kernel", res.kernel, "s", 8)):
        if c is None:
            continue
        style = {"marker": marker, "markersize": size, "markerfacecolor": "white", "markeredgecolor": "black",
                 "markeredgewidth": 1.3, "linestyle": "none"}
        ax.plot([c.block_kv], [c.block_q], zorder=5, **style)
        lo = c.value(res.objective)[0]
        ratio = "—" if lo is None else f"×{lo / best:.2f}"
        handles.append(Line2D([], [], label=f"{label} {c.block_q}×{c.block_kv} ({ratio})", **style))
    return handles


def _edges(values: list[int]) -> list[float]:
    """Cell edges on a log axis: geometric midpoints between neighbouring values."""
    if len(values) == 1:
        return [values[0] / 1.25, values[0] * 1.25]
    mids = [math.sqrt(a * b) for a, b in zip(values, values[1:])]
    return [values[0] ** 2 / mids[0]] + mids + [values[-1] ** 2 / mids[-1]]


__all__ = ["plot_bounds", "plot_explore", "check_plot_path", "require_matplotlib"]
