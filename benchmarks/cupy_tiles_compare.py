"""Compare the kernel time model's predictions for iosim's CuPy tensor-core FA2 kernel with
benchmarks/cupy_tiles.py's measured CSV (runs here, no GPU; issue 14, item 3):

    python3 benchmarks/cupy_tiles_compare.py DIR [--plot FILE.png] [--cache/--no-cache] [--out DIR2]
    python3 benchmarks/cupy_tiles_compare.py --predict FILE.json --shapes check     # before measuring
    python3 benchmarks/cupy_tiles_compare.py DIR --predictions FILE.json            # judge those

Each (shape, tile) is predicted as ``iosim validate`` predicts the kernel (iosim.gpu.cupy_kernels:
``simulate_config`` with the launch's threads per block, then ``model_time`` with the mma
kernel's warp layout, B_r/16 warps on the rows). As explore does for Triton, each tile is first
counted without the L2 model: where even every requested byte going to DRAM does not bound its
time, that time is exact; otherwise (``--cache``, the default) it is replayed through the L2
model, unless the L2 model refuses the run as too large (the small tiles at long N), where the
no-cache prediction stands and is marked. Per shape: the model's pick against the measured best
(within 5 %?), Spearman's rho; then the issue's targets (pick within 5 % on >= 11 of 12 shapes,
median rho >= 0.8). Writes DIR/compare.json (per tile: measured, predicted, bound, L2 model).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tile_rank import compare, load_measured, read_predictions, write_predictions  # noqa: E402

CONFIG_FIELDS = ("block_q", "block_kv")


def predict_tile(profile, shape, tile, cache: bool) -> dict:
    """``{"predicted_s", "bound", "l2_model"}`` of one tile on one shape (N, d, B, H, causal)."""
    from iosim import Problem
    from iosim.errors import ProblemError
    from iosim.gpu.cupy_kernels import launches, make_config, model_time, simulate_config
    n, d, b, h, causal = shape
    cfg = make_config("fa2", seq_len=n, head_dim=d, heads_total=b * h, dtype="fp16", causal=causal,
                      block_q=tile[0], block_kv=tile[1], impl="mma")
    problem = Problem(seq_len=n, head_dim=d, batch=b, heads=h, causal=causal, dtype="fp16")
    threads = launches(cfg)[0].block

    def model(with_l2: bool) -> dict:
        return model_time(simulate_config(profile, cfg, problem, cache=with_l2, threads_per_block=threads),
                          profile, cfg)

    out = {**model(False), "l2_model": "not needed (not DRAM-bound without it)"}
    if "DRAM" not in out["bound"]:
        return out
    if not cache:
        return {**out, "l2_model": "off (--no-cache)"}
    try:
        return {**model(True), "l2_model": "on"}
    except ProblemError as exc:
        return {**out, "l2_model": f"refused, no-cache prediction kept: {str(exc)[:90]}"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", nargs="?", help="the folder cupy_tiles.py wrote (results.csv)")
    ap.add_argument("--plot", help="predicted against measured time per tile (.png)")
    ap.add_argument("--cache", action=argparse.BooleanOptionalAction, default=True,
                    help="replay DRAM-bound tiles through the L2 model (default on)")
    ap.add_argument("--out", help="where compare.json goes (default: DIR)")
    ap.add_argument("--predict", help="write the model's predictions for --shapes to this JSON, measure nothing")
    ap.add_argument("--shapes", default="check", help="the shape set of cupy_tiles.py to predict")
    ap.add_argument("--predictions", help="judge these committed predictions instead of predicting now")
    args = ap.parse_args()
    if args.predict:
        from cupy_tiles import SHAPE_SETS, TILES
        from iosim import load_profile
        profile = load_profile("h200")
        table = {s: {t: predict_tile(profile, s, t, args.cache)["predicted_s"] for t in TILES}
                 for s in SHAPE_SETS[args.shapes]}
        write_predictions(args.predict, table, {"cache": args.cache})
        return 0
    if args.predictions:
        measured = load_measured(args.dir, CONFIG_FIELDS)
        compare(measured, read_predictions(args.predictions), args.out or args.dir, args.plot,
                "iosim fa2_mma (CuPy): predicted vs measured, every tile")
        return 0
    measured = load_measured(args.dir, CONFIG_FIELDS)
    from iosim import load_profile
    profile = load_profile("h200")
    details: dict = {}

    def predict(shape, times) -> dict:
        rows = {tile: predict_tile(profile, shape, tile, args.cache and profile.cache is not None) for tile in times}
        for tile, r in sorted(rows.items()):
            print(f"  {shape} {tile[0]}x{tile[1]}: measured {times[tile] * 1e3:.3f} ms, predicted "
                  f"{r['predicted_s'] * 1e3:.3f} ms ({r['predicted_s'] / times[tile]:.2f}x), {r['bound']}; "
                  f"L2 model {r['l2_model']}", flush=True)
        details[str(shape)] = {f"{t[0]}x{t[1]}": r for t, r in sorted(rows.items())}
        return {tile: r["predicted_s"] for tile, r in rows.items()}

    compare(measured, predict, args.out or args.dir, args.plot, "iosim fa2_mma (CuPy): predicted vs measured, every tile",
            extra={"model": "iosim.gpu.cupy_kernels.model_time (measured steps where the GPU has them, else the "
                            "kernel time model with warp layout B_r/16)",
                   "cache": args.cache, "tiles": details})
    return 0


if __name__ == "__main__":
    sys.exit(main())
