"""Re-derive the measured step factors of iosim.kernels.coresidency from the committed runs (no GPU).

For each measured series (time against key blocks for the forward, against query blocks for the
backward): the measured slope (least squares), the model's slope with every factor off (the
serial sum of a block's steps), their ratio, and the factor the table holds.

    python benchmarks/step_factors.py docs/validation/2026-12-02-uneven-k/first/uneven_cost.json \\
        docs/validation/2026-12-02-uneven-k/wide/uneven_cost.json docs/validation/2026-12-02-bwd-step/bwd_cost.json
    python benchmarks/step_factors.py --splitkv docs/validation/2026-12-04-splitkv-step/splitkv_cost.json

``--splitkv``: the split-KV kernel's pair factor, two blocks an SM (benchmarks/sdpa_splitkv_cost.py):
the measured slope against k key blocks a block over the model's serial slope, per head dim, with
one K/V head (the keys in the L2: the step itself) and, for comparison, one a query head.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np

from iosim import Options, Problem, load_profile, simulate
from iosim.kernels import coresidency


def series(path: str) -> dict:
    """(pass, d, heads, N_kv of the backward) -> [(steps axis, measured µs, Problem)]"""
    out = defaultdict(list)
    for r in json.load(open(path))["rows"]:
        if isinstance(r["median_s"], dict):      # sdpa_bwd_cost.py: the backward, two layouts
            if r.get("layout") != "shared":
                continue   # one key block a head: each block streams its own Q_i, dO_i, not the step taken
            kind, t = "backward", r["median_s"]["dq_dk_dv"]
        else:                                    # sdpa_uneven_cost.py: either pass
            kind, t = r["pass"], r["median_s"]
        backward = kind == "backward"
        problem = Problem(seq_len_q=r["n_q"], seq_len_kv=r["n_kv"], head_dim=r["d"], heads=r["heads"],
                          kv_heads=r.get("kv_heads"))
        out[(kind, r["d"], r["heads"], r["n_kv"] if backward else 0)].append(
            ((r["n_q"] if backward else r["n_kv"]) / 1024, t * 1e6, problem))
    return out


def slope(xs, ys) -> float:
    a = np.vstack([np.ones(len(xs)), xs]).T
    return float(np.linalg.lstsq(a, np.asarray(ys), rcond=None)[0][1])


def serial_slope(points, backward: bool, num_splits: int | None = None) -> float:
    """The model's slope (factors cleared: the serial sum); ``num_splits`` = 1 keeps the main
    kernel where PyTorch's heuristic would split (as flash-attn's variable-length entry does)."""
    profile = load_profile("h200")
    ys = []
    for _, _, p in points:
        r = simulate(profile, "fa2", p, passes="forward+backward" if backward else "forward",
                     options=Options(kernel="flash-attn-2", cache=True, num_splits=num_splits))
        ys.append(r.kernel_times["dq_dk_dv" if backward else "main"].predicted_s * 1e6)
    return slope([x for x, _, _ in points], ys)


def splitkv(path: str) -> None:
    """The split-KV pair factors (``SPLITKV_FACTORS``, ``UNEVEN_SPLITKV_FACTORS``) from a run of
    benchmarks/sdpa_splitkv_cost.py: slopes in µs per key block a block (two blocks an SM)."""
    profile = load_profile("h200")
    runs = defaultdict(list)
    for r in json.load(open(path))["rows"]:
        runs[(r["d"], r["kv_heads"])].append(r)
    print(f"{'d':>4} {'K/V heads':>9}  measured  serial  measured/serial")
    for (d, kv), rows in sorted(runs.items()):
        xs = [r["steps"] for r in rows]
        ys = []
        for r in rows:
            p = Problem(seq_len_q=r["n_q"], seq_len_kv=r["n_kv"], head_dim=d, heads=r["heads"], kv_heads=kv)
            got = simulate(profile, "fa2", p, options=Options(kernel="flash-attn-2", cache=True))
            ys.append(got.kernel_times["splitkv"].predicted_s * 1e6)
        measured, serial = slope(xs, [r["median_s"] * 1e6 for r in rows]), slope(xs, ys)
        print(f"{d:>4} {kv:>9}  {measured:8.2f}  {serial:6.2f}  {measured / serial:.3f}")


def block_slopes(path: str) -> None:
    """The forward kernels' factors from a run of benchmarks/sdpa_block_cost.py (its "slopes" study):
    per head dim, a lone block's step (the 132-block slope over the model's serial one) and r (the
    264-block slope over twice the 132-block one); the launches' K/V heads as the run had them."""
    runs = defaultdict(list)
    for r in json.load(open(path))["rows"]:
        if r["study"] != "slopes" or r["median_s"] is None or any(c["kernel"] == "splitkv" for c in r["calls"]):
            continue   # (d = 256 with 132 blocks: PyTorch splits; sdpa_wide_cost.py measures it)
        p = Problem(seq_len_q=r["n_q"], seq_len_kv=r["n_kv"], head_dim=r["d"], heads=r["heads"],
                    kv_heads=r.get("kv_heads"))
        blocks = r["heads"] * (r["n_q"] // (64 if r["d"] > 192 else 128))
        runs[(r["d"], blocks)].append((r["n_kv"] / 1024, r["median_s"] * 1e6, p))
    print(f"{'d':>4} {'blocks':>6}  measured  serial  measured/serial")
    lone = {}
    for (d, n), points in sorted(runs.items()):
        measured = slope([x for x, _, _ in points], [y for _, y, _ in points])
        serial = serial_slope(points, False)
        pair = f"  r = {measured / (2 * lone[d]):.3f}" if n == 264 and d in lone else ""
        if n == 132:
            lone[d] = measured
        print(f"{d:>4} {n:>6}  {measured:8.2f}  {serial:6.2f}  {measured / serial:.3f}{pair}")


def wide(path: str) -> None:
    """The 256 kernel's factors from a run of benchmarks/sdpa_wide_cost.py: per study, head dim and
    blocks, the measured slope (µs per 1,024 keys) over the model's serial slope; a lone block's
    step factor is the 132-block ratio, r the 264-block SDPA slope over twice the 132-block one."""
    runs = defaultdict(list)
    for r in json.load(open(path))["rows"]:
        p = Problem(seq_len_q=r["n_q"], seq_len_kv=r["n_kv"], head_dim=r["d"], heads=r["heads"],
                    kv_heads=r.get("kv_heads"))
        runs[(r["study"], r["d"], r["blocks"])].append((r["n_kv"] / 1024, r["median_s"] * 1e6, p))
    lone = {d: slope([x for x, _, _ in pts], [y for _, y, _ in pts])
            for (study, d, blocks), pts in runs.items() if study == "varlen" and blocks == 132}
    print(f"{'study':7} {'d':>4} {'blocks':>6}  measured  serial  measured/serial")
    for (study, d, blocks), points in sorted(runs.items()):
        measured = slope([x for x, _, _ in points], [y for _, y, _ in points])
        serial = serial_slope(points, False, num_splits=1)
        pair = f"  r = {measured / (2 * lone[d]):.3f}" if blocks == 264 and d in lone else ""
        print(f"{study:7} {d:>4} {blocks:>6}  {measured:8.2f}  {serial:6.2f}  {measured / serial:.3f}{pair}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--splitkv", action="store_true", help="the runs are sdpa_splitkv_cost.py's")
    ap.add_argument("--wide", action="store_true", help="the runs are sdpa_wide_cost.py's")
    ap.add_argument("--blocks", action="store_true", help="the runs are sdpa_block_cost.py's")
    args = ap.parse_args()
    for name in ("FACTORS", "BACKWARD_FACTORS", "STEP_FACTORS", "UNEVEN_FACTORS", "UNEVEN_BACKWARD_FACTORS",
                 "UNEVEN_STEP_FACTORS", "SPLITKV_FACTORS", "UNEVEN_SPLITKV_FACTORS"):
        getattr(coresidency, name).clear()   # the model's serial sum
    if args.splitkv or args.wide or args.blocks:
        for path in args.runs:
            (splitkv if args.splitkv else wide if args.wide else block_slopes)(path)
        return
    print(f"{'pass':9} {'d':>4} {'blocks':>6}  measured  serial  measured/serial  (two an SM: r = this ÷ lone)")
    for path in args.runs:
        lone = {}
        for (kind, d, heads, _), points in sorted(series(path).items()):
            measured = slope([x for x, _, _ in points], [y for _, y, _ in points])
            serial = serial_slope(points, kind == "backward")
            blocks = heads if kind == "forward" else points[0][2].seq_len_kv // (128 if d <= 128 else 64)
            ratio = measured / serial
            pair = f"  r = {ratio / lone[d]:.3f}" if kind == "forward" and blocks == 264 and d in lone else ""
            if kind == "forward" and blocks == 132:
                lone[d] = ratio
            print(f"{kind:9} {d:>4} {blocks:>6}  {measured:8.2f}  {serial:6.2f}  {ratio:.3f}{pair}")


if __name__ == "__main__":
    main()
