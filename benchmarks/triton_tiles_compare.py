"""Compare the ``triton-fa2`` preset's predictions with benchmarks/triton_tiles.py's measured
CSV (runs here, no GPU; docs/triton.md):

    python3 benchmarks/triton_tiles_compare.py DIR [--plot FILE.png] [--cache/--no-cache]

Per shape: the model's pick (explore's best among the measured configurations) against the
measured best (within 5 %?), Spearman's rho of predicted against measured time over the
configurations; then the issue's targets: pick within 5 % on >= 11 of 12 shapes, median rho >= 0.8.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tile_rank  # noqa: E402
from tile_rank import compare, judge, load_measured, ranks, spearman, summary  # noqa: E402,F401

CONFIG_FIELDS = ("block_m", "block_n", "num_warps", "num_stages")


def read_measured(path: str) -> dict:
    """shape -> {(BLOCK_M, BLOCK_N, num_warps, num_stages): median seconds} of the timed rows."""
    return tile_rank.read_measured(path, CONFIG_FIELDS)


def predict_shape(shape, configs, cache) -> dict:
    from iosim import Problem
    from iosim.studies.explore.triton_configs import explore_triton
    n, d, b, h, causal = shape
    r = explore_triton("h200", Problem(seq_len=n, head_dim=d, batch=b, heads=h, causal=causal, dtype="fp16"),
                       configs=list(configs), cache=cache)
    return {c.config.key(): c.predicted_s for c in r.candidates if c.feasible}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="the folder triton_tiles.py wrote (results.csv)")
    ap.add_argument("--plot", help="predicted against measured time per configuration (.png)")
    ap.add_argument("--cache", action=argparse.BooleanOptionalAction, default=None)
    args = ap.parse_args()
    measured = load_measured(args.dir, CONFIG_FIELDS)
    compare(measured, lambda shape, times: predict_shape(shape, times, args.cache), args.dir, args.plot,
            "triton-fa2: predicted vs measured, every configuration")
    return 0


if __name__ == "__main__":
    sys.exit(main())
