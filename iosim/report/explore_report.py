"""``iosim explore``'s report: the text table, CSV and JSON of an exploration, one block
(or one set of rows) per point and algorithm."""

from __future__ import annotations

import csv
import io
from typing import Sequence

from ..studies.explore import PRACTICAL_RULE, Candidate, ExploreResult
from .tables import format_bytes, format_seconds, render_table

#: explore's JSON contract version (the top-level ``schema_version``)
EXPLORE_SCHEMA_VERSION = 1

OBJECTIVE_NAMES = {"time": "predicted time", "bytes": "HBM bytes requested", "dram": "DRAM bytes (L2 model)"}


def format_time(c: Candidate) -> str:
    """The exact time, or the interval the first count bounds it to (the L2 not replayed)."""
    if c.time_exact:
        return format_seconds(c.time_min_s)
    return f"{format_seconds(c.time_min_s)}–{format_seconds(c.time_max_s)}"


def format_dram(c: Candidate) -> str:
    if c.dram_min_bytes is None:
        return "—"
    if c.dram_bytes is not None:
        return format_bytes(c.dram_bytes)
    return f"{format_bytes(c.dram_min_bytes)}–{format_bytes(c.dram_max_bytes)}"


def model_lines(res: ExploreResult) -> list[str]:
    """Which model ranked the candidates, and what its times mean."""
    flags = "".join(f" {f}" for f in ("--no-cache" if not res.cache else "--cache" if res.cache_asked else "",
                                      f"--kernel {res.kernel_preset}" if res.kernel_preset else "",
                                      "--gemm tiled" if res.algorithm == "standard" else "") if f)
    lines = [f"ranked by {OBJECTIVE_NAMES[res.objective]}; times: {res.time_model}, as `iosim simulate{flags}` "
             "predicts each tile"]
    if res.time_model.startswith("roofline"):
        lines.append("  a roofline time is a lower bound on a real kernel's time (every unit at its peak, all "
                     "overlapped)")
    else:
        lines.append(f"  each tile runs {res.kernel_preset}'s launches in place of the kernel's own tile (same warps)")
        if res.registers_by:
            cap = res.best.registers_capacity_bytes
            lines.append(f"  a tile whose S_ij and O_i accumulator need more than the {cap:,} B of registers "
                         f"{res.registers_by} would spill")
    if res.cache:
        lines.append("  a–b: bounds from the count without the L2 (the L2 model is played for the tiles the report "
                     "names and, within --replays, the closest contenders)")
    return lines


def _tile_source(res: ExploreResult) -> str:
    """Where the tiles came from: the grid (with its limits), the --block-q/--block-kv lists
    given, or one given axis crossed with the grid's other; and the paper's or the kernel's
    tile, run besides when the lists do not hold it."""
    limits = " × ".join(f"{v:,}" for v in res.grid_limits.values())
    if not any("user" in c.sources for c in res.candidates):
        return f"grid {res.grid}" + (f" (up to {limits})" if limits and len(res.grid_limits) == 2 else "")
    added = [name for name in ("paper", "kernel")
             if any(name in c.sources and not {"user", "grid"} & set(c.sources) for c in res.candidates)]
    extra = "".join(f" and the {name}'s tile" for name in added)
    if not res.grid_limits:
        return f"tiles given{extra}"
    axis = "B_r" if "block_q" in res.grid_limits else "B_c"
    return f"tiles given, {axis} from grid {res.grid} (up to {limits}){extra}"


def _header(res: ExploreResult) -> list[str]:
    p = res.problem
    shape = f"N={p.seq_len_q:,}" if p.is_square else f"N_q={p.seq_len_q:,} N_kv={p.seq_len_kv:,}"
    feasible = sum(c.feasible for c in res.candidates)
    spill = sum(c.feasible and not c.registers_fit for c in res.candidates)
    grid = _tile_source(res)
    edge = "registers or shared memory" if not res.allow_spill else "shared memory"
    return [
        f"{res.algorithm} on {res.profile}: {shape} d={p.head_dim} batch={p.batch} heads={p.heads}"
        f"{'' if p.kv_heads == p.heads else f' kv_heads={p.kv_heads}'} {p.dtype}{' causal' if p.causal else ''}"
        f"{' layout bnhd' if p.layout == 'bnhd' else ''}"
        f"{'' if res.passes == 'forward' else f' ({res.passes})'}; shared memory "
        f"{res.best.sram_capacity_bytes:,} B per block (M = {res.M:,} elements)",
        *model_lines(res),
        f"{grid}: {len(res.candidates):,} tiles run: {feasible - spill:,} fit, {spill:,} would spill registers"
        f"{'' if res.allow_spill else ' (not chosen)'}, {len(res.candidates) - feasible:,} do not fit in shared "
        f"memory; past the edge of {edge}, larger tiles are not run",
        *(f"note: {n}" for n in res.notes),
    ]


def _reference_rows(res: ExploreResult) -> list[list[str]]:
    rows = []
    practical = res.practical
    for label, c in (("best", res.best), ("practical choice", practical), ("paper default", res.paper),
                     ("real kernel", res.kernel)):
        if c is None:
            rows.append([label, "—", "—", "—", "—", "—", "—", res.kernel_reason])
            continue
        note = "" if c.feasible and c.registers_fit and not c.rows_note else c.reason
        if label == "practical choice":
            note = res.ranking.practical_reason
        if label == "real kernel" and res.kernel_info:
            note = (note + "; " if note else "") + res.kernel_info["rule"]
        best_t = res.best.predicted_s
        ratio_t = f"{c.predicted_s / best_t:.3f}" if c.predicted_s is not None and best_t else "—"
        rows.append([label, f"{c.block_q}×{c.block_kv}", format_bytes(c.hbm_total_bytes),
                     f"{c.hbm_total_bytes / res.best.hbm_total_bytes:.3f}", format_time(c), ratio_t,
                     f"{c.sram_need_bytes:,}", note])
    return rows


def _tie_lines(res: ExploreResult) -> list[str]:
    r = res.ranking
    shown = ", ".join(f"{c.block_q}×{c.block_kv}" for c in r.members[:8]) + (", …" if len(r.members) > 8 else "")
    lines = [f"near-ties within {r.tolerance:.1%} of the best: {len(r.members):,} tile(s) ({shown}); practical "
             f"choice {r.practical.block_q}×{r.practical.block_kv} ({r.practical_reason})"]
    if r.undecided:
        lines.append(f"  {len(r.undecided):,} more may be near-ties: their bounds straddle the line and the L2 "
                     f"model was not replayed for them ({r.replays} replay(s) of a budget of {r.budget})")
    if not r.best_proven:
        lines.append(f"  the best is not proven: candidates not replayed could beat it (budget of {r.budget} replays "
                     "spent; raise --replays)")
    lines.append(f"  rule: {PRACTICAL_RULE}")
    return lines


def _top_table(res: ExploreResult, top: int) -> list[str]:
    """The best, its near-ties, then the rest by the objective's lower bound: a tile the L2 model was not
    played for has a lower bound of 0 DRAM bytes, and must not push the best off the table."""
    ranked = sorted((c for c in res.candidates if c.eligible(res.allow_spill)),
                    key=lambda c: (c is not res.best, not res.ranking.is_member(c), c.rank_key(res.objective)))[:top]
    dram = res.cache
    practical = (res.practical.block_q, res.practical.block_kv)
    table = []
    for c in ranked:
        tags = [s for s in c.sources if s not in ("grid", "user")]
        tags += ["best"] if c is res.best else []
        tags += ["practical"] if (c.block_q, c.block_kv) == practical else []
        tags += ["tie"] if res.ranking.is_member(c) and c is not res.best else []
        table.append([f"{c.block_q}×{c.block_kv}", f"{c.hbm_total_bytes:,}", format_time(c)]
                     + ([format_dram(c)] if dram else [])
                     + [c.bound if c.time_exact else "—", f"{c.sram_need_bytes:,}", f"{c.registers_bytes:,}", ",".join(tags)])
    header = ["B_r×B_c", "HBM bytes", "predicted"] + (["DRAM"] if dram else []) + [
        "bound by", "smem (B)", "registers (B)", ""]
    return [f"top {len(table)} by {OBJECTIVE_NAMES[res.objective]} (all candidates: --format csv or json):",
            render_table(table, header, "rrr" + ("r" if dram else "") + "lrrl")]


def render_explore(results: Sequence[ExploreResult], top: int = 10) -> str:
    """The text report: per point and algorithm, best / practical / paper default / real
    kernel, the near-ties, then the top tiles."""
    out = []
    for res in results:
        out += _header(res)
        out.append(render_table(_reference_rows(res), ["", "B_r×B_c", "HBM traffic", "× best", "predicted", "× best",
                                                       "smem need (B)", "note"], "lrrrrrrl"))
        out += _tie_lines(res)
        out += _top_table(res, top)
        out.append("")
    return "\n".join(out).rstrip()


def point_dict(res: ExploreResult) -> dict:
    """The point a result answers for (hw, N, d, heads, …): the columns every CSV row carries."""
    p = res.problem
    return {"hw": res.profile, "algorithm": res.algorithm, "passes": res.passes, "N": p.seq_len_q,
            "N_kv": p.seq_len_kv, "d": p.head_dim, "batch": p.batch, "heads": p.heads, "kv_heads": p.kv_heads,
            "causal": p.causal, "dtype": p.dtype, "layout": p.layout, "objective": res.objective,
            "time_model": res.time_model}


CANDIDATE_COLUMNS = ["block_q", "block_kv", "feasible", "registers_fit", "reason", "sram_need_bytes",
                     "sram_capacity_bytes", "registers_bytes", "registers_capacity_bytes", "hbm_read_bytes",
                     "hbm_write_bytes", "hbm_total_bytes", "predicted_s", "predicted_s_min", "predicted_s_max", "bound",
                     "dram_bytes", "dram_bytes_min", "dram_bytes_max", "replayed", "is_best", "near_tie", "practical"]


def explore_csv(results: Sequence[ExploreResult]) -> str:
    """Every candidate of every point and algorithm, one CSV row each."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    point_cols = list(point_dict(results[0]))
    w.writerow(point_cols + CANDIDATE_COLUMNS + ["sources"])
    for res in results:
        point = point_dict(res)
        for c in res.candidates:
            d = res.candidate_dict(c)
            w.writerow([point[k] for k in point_cols] + ["" if d[k] is None else d[k] for k in CANDIDATE_COLUMNS]
                       + ["+".join(c.sources)])
    return buf.getvalue()


def explore_json(results: Sequence[ExploreResult]) -> dict:
    """``schema_version``, the first result at the top level (the contract), and every
    result (one per point and algorithm) under ``results``, each with its ``point``."""
    dicts = [{"point": point_dict(r), **r.to_dict()} for r in results]
    return {"schema_version": EXPLORE_SCHEMA_VERSION, **dicts[0], "results": dicts}


__all__ = ["render_explore", "explore_csv", "explore_json", "point_dict", "EXPLORE_SCHEMA_VERSION", "format_time"]
