"""dot_do_o's DRAM reads beyond O and dO, per query row, beside the 64-byte units its heads share.

flash-attn 2's backward reads O and dO as (B, N_q, H, d) buffers (PyTorch makes them contiguous
so): a row of head h ends, and one of head h + 1 begins, inside a 64-byte DRAM unit wherever
the boundary is no multiple of 64 bytes. Where the L2 lost the unit between the two heads' thread
blocks, it is read twice. This prints, for every committed dot_do_o launch of more than one head
that read at least 20 MB, the measured reads over the rows' bytes, per row, beside that upper
bound (every such unit read twice: 64 bytes × the share of torn boundaries, for O and dO), and the
model's ratio from the rows given (docs/validation/2026-12-06-torn-units.md).

    python benchmarks/torn_units.py docs/validation/2026-12-04-status/rows/*.json \\
        docs/validation/2026-12-06-torn-units/s4[34]-rows-h100.json \\
        --markdown docs/validation/2026-12-06-torn-units/table.md
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from iosim.gpu.sdpa import problem_of  # noqa: E402
from iosim.models.cache.line_reads import UNIT  # noqa: E402
from iosim.workload.layouts import row_bytes, sdpa_padded  # noqa: E402


def torn_share(r: int) -> float:
    """The share of row boundaries k·R (k ≥ 1) that fall inside a 64-byte unit (over 64 rows, a
    whole number of the boundaries' period 64 / gcd(R, 64))."""
    period = UNIT // int(np.gcd(r, UNIT))          # a boundary on a unit's edge every period-th row
    return (UNIT - UNIT // period) / UNIT


def rows_of(path: str) -> list[tuple[str, dict]]:
    name = pathlib.Path(path)
    label = name.parent.name if name.name.startswith("rows-") else name.stem.replace("-rows", "")
    return [(label, r) for r in json.loads(name.read_text())]


def table(paths: list[str], min_bytes: float = 20e6) -> list[dict]:
    out = []
    for path in paths:
        for label, r in rows_of(path):
            m = r["measured"]["dram_read"]
            if r["kernel"] != "dot_do_o" or r["heads"] < 2 or not m or m < min_bytes:
                continue
            n_q, r_bytes = r.get("seq_len_q") or r["seq_len"], row_bytes(sdpa_padded(problem_of(r)))
            rows = r["batch"] * r["heads"] * n_q
            out.append({"run": label, "d": r["head_dim"], "R": r_bytes, "N_q": n_q, "B": r["batch"], "H": r["heads"],
                        "excess_per_row": (m - 2 * rows * r_bytes) / rows,
                        "bound_per_row": 2 * UNIT * torn_share(r_bytes), "model": r["predicted"]["dram_read"] / m})
    return sorted(out, key=lambda x: (x["bound_per_row"], x["excess_per_row"]))


def markdown(rows: list[dict]) -> str:
    """The launches whose rows share units, as a table; those whose rows are whole units, in a line."""
    whole = [x for x in rows if x["bound_per_row"] == 0]
    rows = [x for x in rows if x["bound_per_row"] > 0]
    lines = [f"Rows of whole 64-byte units (R a multiple of 64): {len(whole)} launches, "
             f"{min(x['excess_per_row'] for x in whole):.1f}-{max(x['excess_per_row'] for x in whole):.1f} B a row "
             "beyond O and dO.", "",
             "| run | d | R (B) | N_q | B × H | measured − O − dO, B a row | all torn units twice, B a row "
             "| model / measured |",
             "|---|---:|---:|---:|---|---:|---:|---:|"]
    lines += [f"| {x['run']} | {x['d']} | {x['R']} | {x['N_q']:,} | {x['B']} × {x['H']} | {x['excess_per_row']:.1f} | "
              f"{x['bound_per_row']:.0f} | {x['model']:.3f} |" for x in rows]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+")
    ap.add_argument("--markdown")
    a = ap.parse_args(argv)
    text = markdown(table(a.rows))
    if a.markdown:
        pathlib.Path(a.markdown).write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
