"""Where a launch's L2 reads go with the slots on sides in runs, against the shipped model and the GPU: near
misses, lookups at the home over the fabric, hits there, DRAM (docs/validation/2026-12-07-s55.md).

benchmarks/l2_breakdown.py splits each main kernel's reads so, the model's against Nsight Compute's lookups by
source (a run of ``benchmarks/sdpa_ncu.py --metric-set l2``); benchmarks/l2_sides_sketch.py plays the slots on
the L2's sides in hashed runs of R SMs instead of the model's index halves. This plays the model both ways
and prints, per main kernel, the near misses over the GPU's, the far hits (MB) and the DRAM reads' ratios:

    python benchmarks/l2_sides_breakdown.py docs/validation/2026-12-07-s55/l2-s53-decode128 --hw h100-sxm [--run 16]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import l2_breakdown  # noqa: E402
from iosim.errors import IosimError  # noqa: E402
from l2_sides_sketch import sides_in_runs  # noqa: E402


def both(raw_dir: str, hw: str, run: int) -> list[tuple[dict, dict]]:
    """(the shipped model's row, the sketch's row) per main kernel of the run (l2_breakdown.rows)."""
    shipped = l2_breakdown.rows(raw_dir, hw)
    with sides_in_runs(run):
        sketch = l2_breakdown.rows(raw_dir, hw)
    return list(zip(shipped, sketch))


def near_misses(pairs: list[tuple[dict, dict]]) -> str:
    """A markdown table: per kernel whose model rows have the split, near misses and far hits, model over GPU,
    shipped and in runs, and the DRAM reads' ratios."""
    lines = ["| d | N_kv | B | H (H_kv) | kernel | near misses: shipped | runs | far hits (MB): shipped | runs | GPU "
             "| DRAM: shipped | runs |", "|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for a, b in pairs:
        if "near miss" not in a["model"]:
            continue
        c, g = a["config"], a["measured"]
        lines.append(f"| {c['head_dim']} | {c.get('seq_len_kv', c['seq_len']):,} | {c['batch']} | {c['heads']} "
                     f"({c.get('kv_heads', c['heads'])}) | {a['kernel']} | "
                     f"{a['model']['near miss'] / g['near miss']:.2f} | {b['model']['near miss'] / g['near miss']:.2f}"
                     f" | {a['model']['far hit']:.1f} | {b['model']['far hit']:.1f} | {g['far hit']:.1f} | "
                     f"{a['model']['DRAM'] / g['DRAM']:.2f} | {b['model']['DRAM'] / g['DRAM']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw_dir", help="a benchmarks/sdpa_ncu.py --metric-set l2 run")
    ap.add_argument("--hw", default="h200", help="the profile of the run's GPU (h200, h100-sxm)")
    ap.add_argument("--run", type=int, default=16, help="SMs a run (default 16)")
    a = ap.parse_args()
    if a.run < 1:
        ap.error("--run must be at least 1")
    if not os.path.isfile(os.path.join(a.raw_dir, "sdpa_configs.json")):
        ap.error(f"{a.raw_dir}: no sdpa_configs.json (a benchmarks/sdpa_ncu.py --metric-set l2 run)")
    try:
        pairs = both(a.raw_dir, a.hw, a.run)
    except IosimError as e:
        ap.error(str(e))
    print(near_misses(pairs))


if __name__ == "__main__":
    main()
