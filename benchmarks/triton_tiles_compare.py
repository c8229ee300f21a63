"""Compare the ``triton-fa2`` preset's predictions with benchmarks/triton_tiles.py's measured
CSV (runs here, no GPU; docs/triton.md):

    python3 benchmarks/triton_tiles_compare.py DIR [--plot FILE.png] [--cache/--no-cache] [--out DIR2]
    python3 benchmarks/triton_tiles_compare.py --predict FILE.json --shapes check   # before measuring
    python3 benchmarks/triton_tiles_compare.py DIR --predictions FILE.json          # judge those

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
from tile_rank import (compare, judge, load_measured, ranks, read_predictions, spearman, summary,  # noqa: E402,F401
                       write_predictions)

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


def predictions(shapes: list, cache, space: str = "small") -> dict:
    """The model's time for every configuration of the benchmark's small space (or of the
    preset's whole search space: what ``explore --kernel triton-fa2`` ranks) on ``shapes``."""
    from triton_tiles import SMALL
    from iosim.kernels.triton_preset import search_space
    configs = [c.key() for c in search_space() if space == "full" or (
        c.block_m in SMALL[0] and c.block_n in SMALL[1] and c.num_warps in SMALL[2] and c.num_stages in SMALL[3])]
    return {s: predict_shape(s, configs, cache) for s in shapes}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", nargs="?", help="the folder triton_tiles.py wrote (results.csv)")
    ap.add_argument("--plot", help="predicted against measured time per configuration (.png)")
    ap.add_argument("--cache", action=argparse.BooleanOptionalAction, default=None)
    ap.add_argument("--out", help="where compare.json goes (default: DIR)")
    ap.add_argument("--predict", help="write the model's predictions for --shapes to this JSON, measure nothing")
    ap.add_argument("--shapes", default="check", help="the shape set of triton_tiles.py to predict")
    ap.add_argument("--predictions", help="judge these committed predictions instead of predicting now")
    ap.add_argument("--space", choices=("small", "full"), default="small",
                    help="(--predict) the configurations to predict: the benchmark's small space or the whole")
    args = ap.parse_args()
    if args.predict:
        from triton_tiles import SHAPE_SETS
        write_predictions(args.predict, predictions(SHAPE_SETS[args.shapes], args.cache, args.space),
                          {"cache": args.cache, "space": args.space})
        return 0
    if not args.dir:
        ap.error("DIR is required unless --predict")
    measured = load_measured(args.dir, CONFIG_FIELDS)
    predict = read_predictions(args.predictions) if args.predictions else \
        (lambda shape, times: predict_shape(shape, times, args.cache))
    compare(measured, predict, args.out or args.dir, args.plot, "triton-fa2: predicted vs measured, every configuration")
    return 0


if __name__ == "__main__":
    sys.exit(main())
