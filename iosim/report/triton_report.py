"""``explore --kernel triton-fa2`` as text or CSV: each point's configurations ranked by the
Triton kernel's time model, the best and its near-ties, and why the rest cannot run."""

from __future__ import annotations

import csv as csv_module
import io

from ..studies.explore.triton_configs import NOT_MEASURED

CSV_FIELDS = ("seq_len", "head_dim", "batch", "heads", "dtype", "causal", "block_m", "block_n", "num_warps",
              "num_stages", "feasible", "reason", "shared_bytes", "registers_per_thread", "mma", "blocks_per_sm",
              "predicted_s", "bound", "steps")


def render_triton(results, top: int = 10, csv: bool = False) -> str:
    """The table (or CSV) of every point's ranking."""
    return _csv(results) if csv else "\n".join(_table(r, top) for r in results)


def _table(r, top: int) -> str:
    p = r.problem
    lines = [f"triton-fa2 on {r.profile}: N={p.seq_len_q:,} d={p.head_dim} B={p.batch} H={p.heads} {p.dtype}"
             f"{' causal' if p.causal else ''}; time model {'with' if r.cache else 'without'} the L2 model, {r.steps}",
             f"{'rank':>4}  {'config':<18} {'mma':>3} {'blk/SM':>6} {'smem B':>9} {'regs':>4} {'time':>10}  bound"]
    for i, c in enumerate(r.ranked[:top], 1):
        lines.append(f"{i:>4}  {c.config.label():<18} {'v' + str(c.mma):>3} {c.blocks_per_sm:>6} "
                     f"{c.shared_bytes:>9,} {c.registers:>4} {c.predicted_s * 1e3:>7.3f} ms  {c.bound}")
    ties = r.near_ties
    lines.append(f"best {r.best.config.label()}; near-ties within {r.tie:.1%}: {len(ties)} "
                 f"({', '.join(c.config.label() for c in ties[:6])}{', …' if len(ties) > 6 else ''})")
    unmeasured = [c for c in r.candidates if c.reason == NOT_MEASURED]
    skipped = [c for c in r.candidates if not c.feasible and c.reason != NOT_MEASURED]
    if skipped:
        lines.append(f"{len(skipped)} configuration(s) cannot run, e.g. {skipped[0].config.label()}: {skipped[0].reason}")
    if unmeasured:
        lines.append(f"{len(unmeasured)} configuration(s) not ranked, e.g. {unmeasured[0].config.label()}: "
                     f"{NOT_MEASURED.removeprefix('not ranked: ')}")
    return "\n".join(lines) + "\n"


def _csv(results) -> str:
    buf = io.StringIO()
    w = csv_module.writer(buf)
    w.writerow(CSV_FIELDS)
    for r in results:
        p = r.problem
        for c in r.candidates:
            d = c.to_dict()
            w.writerow([p.seq_len_q, p.head_dim, p.batch, p.heads, p.dtype, p.causal] +
                       [d[k] for k in CSV_FIELDS[6:]])
    return buf.getvalue()


__all__ = ["render_triton"]
