"""The human-readable ``iosim bounds`` report: verdict table, rules, reasons, the
profile's point and the excluded points. (The JSON form is :meth:`BoundsReport.to_dict`.)
"""

from __future__ import annotations

import csv
import io

from ..studies.bounds.check import BoundsReport
from ..studies.bounds.claims import BLOCK_RULES, CLAIMS
from ..studies.bounds.verdicts import Verdict, rounded
from .tables import render_table


# --------------------------------------------------------------------------------------
# text report
# --------------------------------------------------------------------------------------
def _fmt_exp(got, want) -> str:
    if got is None:
        return "—"
    return f"{rounded(got):+.2f} ({rounded(want):+.2f})"


def _exp_cells(v: Verdict) -> list[str]:
    """The N, d and M exponents of a verdict, each as "count (claim)"."""
    return [_fmt_exp(v.exponents[k], v.claim_exponents[k]) for k in "NdM"]


def render_bounds(report: BoundsReport) -> str:
    """The human-readable report: verdict table, rules, reasons, the profile's point."""
    lines = [
        f"iosim bounds: {', '.join(report.algorithms)} on {report.profile} "
        f"(its M = {report.profile_M:,} {report.dtype} elements per block); block rule {report.block_rule}: "
        f"{BLOCK_RULES[report.block_rule]}",
        _sweep_line(report),
        "",
    ]
    rows = []
    for v in report.verdicts:
        rows.append([v.claim.id, v.algorithm, v.claim.expression, "HOLDS" if v.holds else "FAILS",
                     f"{v.ratio_min:.3g}", f"{v.ratio_max:.3g}", *_exp_cells(v), str(v.points)])
    lines.append(render_table(rows, ["claim", "algorithm", "expression", "verdict", "ratio min", "ratio max",
                                     "exp N (claim)", "exp d (claim)", "exp M (claim)", "points"], "lllllrrrrr"))
    lines.append("")
    lines.append("ratio = counted HBM elements per head ÷ expression; exp = log-log least-squares exponent of the "
                 "count (of the expression) over the judged points")
    lines.append("")
    for v in report.verdicts:
        lines.append(f"{v.claim.id} / {v.algorithm}: {'holds' if v.holds else 'FAILS'}: {v.reason}.")
        for note in v.notes:
            lines.append(f"    note: {note}")
        if v.uncapped is not None:
            u = v.uncapped
            exp_n, exp_d, exp_m = _exp_cells(u)
            lines.append(f"    without the capped points ({u.points} points): {'holds' if u.holds else 'fails'}; "
                         f"{u.reason}; exponents N {exp_n}, d {exp_d}, M {exp_m}")
    for sk in report.skipped:
        lines.append(f"{sk['id']} / {sk['algorithm']}: not judged: {sk['reason']}")
    lines.append("")
    lines.append("verdict rules:")
    for cid in dict.fromkeys(v.claim.id for v in report.verdicts):
        lines.append(f"  {cid}: {CLAIMS[cid].rule}")
    prof = _profile_table(report)
    if prof:
        lines += ["", prof]
    if report.excluded:
        lines += ["", _excluded_summary(report)]
    return "\n".join(lines)


def _sweep_line(report: BoundsReport) -> str:
    def vals(xs):
        return ", ".join(f"{x:,}" for x in xs) if len(xs) <= 6 else f"{xs[0]:,} … {xs[-1]:,} ({len(xs)} values)"

    M = vals(report.sram) if report.sram else report.sram_rule()
    judged = len({(p.N, p.d, p.M) for p in report.points})
    return (f"sweep: N = {vals(report.seq_lens)}; d = {vals(report.head_dims)}; M = {M}: {judged:,} (N, d, M) "
            f"points, {report.runs:,} distinct simulations")


def _profile_table(report: BoundsReport) -> str:
    ref = report.reference_N()
    rows = [r for r in report.profile_rows() if r["N"] == ref]
    if not rows:
        return ""
    table = []
    for r in rows:
        table.append([r["algorithm"], f"{r['d']}", f"{r['block_q']}×{r['block_kv']}", f"{r['count_elements']:,}",
                      f"{r['ratio_flash']:.2f}", f"{r['ratio_standard']:.2f}"])
    out = [f"at the profile's M = {report.profile_M:,} elements, N = {ref:,}:",
           render_table(table, ["algorithm", "d", "B_r×B_c", "count (elements/head)",
                                            "÷ N²d²/M", "÷ (Nd + N²)"], "lrrrrr")]
    for d in sorted({r["d"] for r in rows}):
        r = next(x for x in rows if x["d"] == d)
        out.append(f"Theorem 2's expressions alone: (N·d + N²) ÷ (N²·d²/M) = {r['theorem2_expression_ratio']:.2f} "
                   f"at d = {d} (constants ignored)")
    counted = {(r["algorithm"], r["d"]): r["count_elements"] for r in rows}
    for d in sorted({r["d"] for r in rows}):
        for flash in ("fa1", "fa2"):
            if ("standard", d) in counted and (flash, d) in counted:
                out.append(f"counted: standard ÷ {flash} = {counted['standard', d] / counted[flash, d]:.2f} at d = {d}")
    return "\n".join(out)


def _excluded_summary(report: BoundsReport) -> str:
    outside = [e for e in report.excluded if e["algorithm"] is None]
    tight = [e for e in report.excluded if e["algorithm"] is not None]
    out = ["excluded points (listed in --format json):"]
    if outside:
        ex = outside[0]
        out.append(f"  {len(outside)} outside d ≤ M ≤ N·d, e.g. N={ex['N']:,}, d={ex['d']}, M={ex['M']:,}")
    if tight:
        by_algo: dict = {}
        for e in tight:
            by_algo.setdefault(e["algorithm"], []).append(e)
        for algo, es in by_algo.items():
            small = max(e["M"] / e["d"] for e in es)
            out.append(f"  {algo}: {len(es)} where the tiles do not fit in M (all with M ≤ {small:g}·d), "
                       f"e.g. N={es[0]['N']:,}, d={es[0]['d']}, M={es[0]['M']:,}: {es[0]['reason']}")
    return "\n".join(out)


#: the columns of ``iosim bounds --format csv``: one row per simulated point
CSV_COLUMNS = ("profile", "dtype", "block_rule", "algorithm", "N", "d", "M", "block_q", "block_kv", "capped",
               "count_elements", "sram_peak_bytes", "sram_bytes", "feasible")


def bounds_csv(report: BoundsReport) -> str:
    """Every simulated point as a CSV row (the claims' verdicts are in the table and JSON)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    data = report.to_dict()
    for point in data["points"]:
        row = {"profile": data["profile"], "dtype": data["dtype"], "block_rule": data["block_rule"], **point}
        writer.writerow(["" if row.get(c) is None else row.get(c) for c in CSV_COLUMNS])
    return out.getvalue()
