"""One instance (N, d, S), pebbled every way: the optimum, the three loop orders, and iosim's counts.

For each of standard, FA1 and FA2 the pebbling uses the largest block that fits S red
pebbles (:func:`iosim.studies.pebbling.strategies.fit`), and iosim's tile-level simulator is run
with the same blocks (standard with ``gemm="tiled"``, so its K and V re-reads are counted
like the pebbling's), giving HBM elements per head to set beside the pebbling's IO. The
two models count different things, which ``docs/pebbling.md`` spells out; the columns
``only_pebbling`` / ``only_iosim`` name the values each one moves that the other does not.

Proposition 3's scale N²d²/M is evaluated with M = S (red pebbles ↔ SRAM elements), and
Theorem 2's regime d ≤ M ≤ N·d is reported, since tiny instances often sit outside it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields

from ...errors import IosimError, require_choice, require_positive_int
from ...run import Options, simulate
from ...workload.problem import Problem
from .dag import AttentionDag, attention_dag
from .game import Pebbling
from .strategies import SCHEDULE_NAMES, DoesNotFit, fit
from .search import MAX_NODES, MAX_STATES, minimum_io, require_nodes, require_red

ALL = SCHEDULE_NAMES + ("optimal",)
#: the largest N²·d whose schedules are played move by move (a few seconds)
MAX_PLAYED = 32_768
_BLOCK = {"standard": "B_r", "fa1": "B_c", "fa2": "B_r"}


@dataclass(frozen=True)
class Row:
    """One way of pebbling the instance."""

    schedule: str
    io: int | None                  # loads + stores; None when it could not be played
    loads: int | None = None
    stores: int | None = None
    peak_red: int | None = None
    recomputes: int | None = None
    block: int | None = None        # B_r (standard, fa2) or B_c (fa1)
    passes: int | None = None       # T_r or T_c = ⌈N/block⌉: passes over the re-read operand
    iosim_elements: int | None = None   # iosim simulate's HBM elements, same blocks
    loads_by_value: dict = field(default_factory=dict)
    stores_by_value: dict = field(default_factory=dict)
    iosim_by_value: dict = field(default_factory=dict)  # tensor → [read, write] elements
    note: str = ""
    search: dict | None = None      # expanded, generated, seconds, lower_bound (optimal only)
    pebbling: Pebbling | None = field(default=None, repr=False, compare=False)  # the moves, checked


@dataclass(frozen=True)
class PebbleReport:
    seq_len: int
    head_dim: int
    red: int
    nodes: int
    edges: int
    min_red: int
    compulsory: int                 # 3Nd loads + Nd stores: every input once, every output once
    prop3_scale: float              # N²d²/S
    in_regime: bool                 # d ≤ S ≤ N·d
    rows: tuple[Row, ...]

    def row(self, name: str) -> Row:
        return next(r for r in self.rows if r.schedule == name)

    def to_dict(self) -> dict:
        """Plain data for JSON (the moves themselves are left out)."""
        head = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "rows"}
        rows = [{f.name: getattr(r, f.name) for f in fields(r) if f.name != "pebbling"} for r in self.rows]
        return {**head, "rows": rows}


def compare(seq_len: int, head_dim: int, red: int, schedules=ALL, *, block: int | None = None,
            max_nodes: int = MAX_NODES, max_states: int = MAX_STATES, strict: bool = False,
            max_seconds: float | None = None) -> PebbleReport:
    """Pebble the N = ``seq_len``, d = ``head_dim`` attention DAG with S = ``red`` every way asked.

    ``strict``: raise (instead of noting it in the row) when a schedule does not fit S.
    The exact search always raises when the instance is beyond its limits or S is below
    the minimum, since then there is no optimum to show.
    """
    for name in schedules:
        require_choice("schedule", name, ALL, IosimError)
    require_positive_int("S (red pebbles)", red, IosimError)
    played = [s for s in schedules if s != "optimal"]
    if played and seq_len * seq_len * head_dim > MAX_PLAYED:
        raise IosimError(f"N²·d = {seq_len * seq_len * head_dim:,} is too large to play move by move "
                         f"(at most {MAX_PLAYED:,}: the DAG has a node per scalar)")
    if "optimal" in schedules:               # before building the DAG: a node per scalar
        require_nodes(seq_len, head_dim, max_nodes, hint="Give --schedule standard, fa1 or fa2 to play the loop "
                                                          "orders only")
    dag = attention_dag(seq_len, head_dim)
    need = require_red(dag, red)
    rows = [_optimal_row(dag, red, max_nodes, max_states, max_seconds) if name == "optimal"
            else _schedule_row(dag, name, red, block, strict) for name in schedules]
    N, d = seq_len, head_dim
    return PebbleReport(N, d, red, len(dag), dag.num_edges, need, 4 * N * d, N * N * d * d / red,
                        d <= red <= N * d, tuple(rows))


def _counts(p: Pebbling) -> dict:
    return dict(pebbling=p, io=p.io, loads=p.loads, stores=p.stores, peak_red=p.peak_red, recomputes=p.recomputes,
                loads_by_value=p.loads_by_value, stores_by_value=p.stores_by_value)


def _schedule_row(dag: AttentionDag, name: str, red: int, block: int | None, strict: bool) -> Row:
    try:
        chosen, pebbling = fit(dag, name, red, block)
    except DoesNotFit as exc:
        if strict:
            raise
        return Row(name, None, note=str(exc).replace(f"{name} ", "", 1))
    elements, by_tensor = iosim_count(name, dag.seq_len, dag.head_dim, chosen)
    return Row(name, block=chosen, passes=math.ceil(dag.seq_len / chosen), iosim_elements=elements,
               iosim_by_value=by_tensor, **_counts(pebbling))


def _optimal_row(dag: AttentionDag, red: int, max_nodes: int, max_states: int, max_seconds: float | None) -> Row:
    best = minimum_io(dag, red, max_nodes=max_nodes, max_states=max_states, max_seconds=max_seconds)
    search = dict(expanded=best.expanded, generated=best.generated, seconds=round(best.seconds, 3),
                  lower_bound=best.lower_bound)
    return Row("optimal", search=search, **_counts(best.pebbling))


def iosim_count(name: str, seq_len: int, head_dim: int, block: int) -> tuple[int, dict]:
    """iosim simulate's HBM elements for one head, with the pebbling's block, and per tensor."""
    problem = Problem(seq_len=seq_len, head_dim=head_dim)
    if name == "standard":
        blocks, gemm = (block, seq_len), "tiled"
    elif name == "fa1":
        blocks, gemm = (1, block), None
    else:
        blocks, gemm = (block, 1), None
    r = simulate("toy", name, problem, blocks=blocks, options=Options(sram_bytes=1 << 30, gemm=gemm))
    return r.hbm.total_elements, {t: [c.read_elements, c.write_elements] for t, c in r.tensors.items()}


def render(report: PebbleReport) -> str:
    """The report as a plain-text table."""
    r = report
    lines = [
        f"red-blue pebbling of attention, N = {r.seq_len}, d = {r.head_dim}, S = {r.red} red pebbles",
        f"DAG: {r.nodes} nodes, {r.edges} edges (one node per scalar, dot products and sums as chains); "
        f"any pebbling needs S ≥ {r.min_red}",
        f"compulsory IO 4Nd = {r.compulsory} (every input loaded once, every output stored once); "
        f"Proposition 3 scale N²d²/S = {r.prop3_scale:.3g}"
        + ("" if r.in_regime else f" (outside Theorem 2's regime d ≤ S ≤ Nd = {r.head_dim}..{r.seq_len * r.head_dim})"),
        "",
    ]
    header = ("schedule", "block", "IO", "loads", "stores", "peak red", "recomputes", "IO / N²d²/S", "iosim HBM elems")
    table = [header]
    for row in r.rows:
        if row.io is None:
            table.append((row.schedule, "—", "—", "", "", "", "", "", row.note))
            continue
        blk = f"{_BLOCK[row.schedule]}={row.block}" if row.block else "—"
        table.append((row.schedule, blk, str(row.io), str(row.loads), str(row.stores), str(row.peak_red),
                      str(row.recomputes), f"{row.io / r.prop3_scale:.2f}",
                      "—" if row.iosim_elements is None else str(row.iosim_elements)))
    widths = [max(len(t[c]) for t in table if c < len(t)) for c in range(len(header))]
    for t in table:
        lines.append("  ".join(cell.ljust(widths[c]) if c < len(t) - 1 else cell for c, cell in enumerate(t)).rstrip())
    for row in r.rows:
        if row.search:
            s = row.search
            lines.append("")
            lines.append(f"optimal: exact A* search, {s['expanded']:,} states expanded, {s['generated']:,} seen, "
                         f"{s['seconds']:.2f} s; start lower bound {s['lower_bound']}")
    return "\n".join(lines)


def render_moves(pebbling: Pebbling) -> str:
    """One move per line, numbered, with the red count after it."""
    out, red = [], 0
    for n, (kind, node) in enumerate(pebbling.moves, 1):
        red += {"load": 1, "compute": 1, "delete": -1}.get(kind, 0)
        io = "  IO" if kind in ("load", "store") else ""
        out.append(f"{n:4d}  {kind:<8} {node:<12} red={red}{io}")
    return "\n".join(out)


def to_json(report: PebbleReport) -> str:
    """The report as JSON, its contract versioned (``schema_version``)."""
    return json.dumps({"schema_version": 1, **report.to_dict()}, indent=2)


__all__ = ["compare", "PebbleReport", "Row", "render", "render_moves", "iosim_count", "ALL", "MAX_PLAYED"]
