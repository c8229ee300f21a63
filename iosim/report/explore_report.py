"""``iosim explore``'s report: the text table, CSV and JSON of an exploration."""

from __future__ import annotations

import csv
import io
from typing import Sequence

from ..studies.explore import ExploreResult
from .tables import format_bytes, format_seconds, render_table


def render_explore(results: Sequence[ExploreResult], top: int = 10) -> str:
    """The text report: per algorithm, best / paper default / real kernel, then the top tiles."""
    out = []
    for res in results:
        p = res.problem
        shape = f"N={p.seq_len_q:,}" if p.is_square else f"N_q={p.seq_len_q:,} N_kv={p.seq_len_kv:,}"
        feasible = sum(c.feasible for c in res.candidates)
        spill = sum(c.feasible and not c.registers_fit for c in res.candidates)
        out.append(
            f"{res.algorithm} on {res.profile}: {shape} d={p.head_dim} batch={p.batch} heads={p.heads}"
            f"{'' if p.kv_heads == p.heads else f' kv_heads={p.kv_heads}'} {p.dtype}"
            f"{' causal' if p.causal else ''}; shared memory {res.best.sram_capacity_bytes:,} B per block "
            f"(M = {res.M:,} elements); objective {res.objective}\n"
            f"{len(res.candidates):,} candidates: {feasible:,} fit in shared memory "
            f"({spill:,} of those would spill registers{'' if res.allow_spill else ', not chosen'}), "
            f"{len(res.candidates) - feasible:,} do not")
        rows = []
        for label, c in (("best", res.best), ("paper default", res.paper), ("real kernel", res.kernel)):
            if c is None:
                rows.append([label, "—", "—", "—", "—", "—", "—", res.kernel_reason])
                continue
            note = "" if c.feasible and c.registers_fit else c.reason
            if label == "real kernel" and res.kernel_info:
                note = (note + "; " if note else "") + res.kernel_info["rule"]
            rows.append([label, f"{c.block_q}×{c.block_kv}", format_bytes(c.hbm_total_bytes),
                         f"{c.hbm_total_bytes / res.best.hbm_total_bytes:.3f}", format_seconds(c.predicted_s),
                         f"{c.predicted_s / res.best.predicted_s:.3f}" if res.best.predicted_s else "—",
                         f"{c.sram_need_bytes:,}", note])
        out.append(render_table(rows, ["", "B_r×B_c", "HBM traffic", "× best", "predicted", "× best",
                                       "smem need (B)", "note"], "lrrrrrrl"))
        ranked = sorted((c for c in res.candidates if c.eligible(res.allow_spill)),
                        key=lambda c: c.score(res.objective))[:top]
        table = [[f"{c.block_q}×{c.block_kv}", f"{c.hbm_total_bytes:,}", format_seconds(c.predicted_s), c.bound,
                  f"{c.sram_need_bytes:,}", f"{c.registers_bytes:,}", ",".join(s for s in c.sources if s != "grid")]
                 for c in ranked]
        out.append(f"top {len(table)} by {res.objective} (all candidates: --format csv or json):")
        out.append(render_table(table, ["B_r×B_c", "HBM bytes", "predicted", "bound by", "smem (B)",
                                        "registers (B)", ""], "rrrlrrl"))
        out.append("")
    return "\n".join(out).rstrip()


def explore_csv(results: Sequence[ExploreResult]) -> str:
    """Every candidate of every algorithm, one CSV row each."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = ["block_q", "block_kv", "feasible", "registers_fit", "reason", "sram_need_bytes", "sram_capacity_bytes",
            "registers_bytes", "registers_capacity_bytes", "hbm_read_bytes", "hbm_write_bytes", "hbm_total_bytes",
            "predicted_s", "bound"]
    w.writerow(["algorithm"] + cols + ["is_best", "sources"])
    for res in results:
        for c in res.candidates:
            d = c.to_dict()
            w.writerow([res.algorithm] + [d[k] for k in cols] + [c is res.best, "+".join(c.sources)])
    return buf.getvalue()


def explore_json(results: Sequence[ExploreResult]) -> dict:
    """The first algorithm's result at the top level (the JSON contract), all under ``results``."""
    first = results[0].to_dict()
    return {**first, "results": [first] + [r.to_dict() for r in results[1:]]}


__all__ = ["render_explore", "explore_csv", "explore_json"]
