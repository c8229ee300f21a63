"""Does a thread block with fewer than 4 warps leave sub-partitions of its SM idle?
(device machine only)

An SM has four sub-partitions (SMSPs), each with its own tensor cores, special-function
unit and fp32 pipes; a warp runs on one of them. iosim's CuPy kernel with B_r = 32 (2 warps a
block) runs 1.3–1.8× slower than with B_r = 64 (4 warps) at equal work per row
(docs/validation/2026-12-01-cupy-tiles.md), and the kernel time model assumes every SM runs
at its whole rate whatever its blocks' warps. This measures the tensor-core (`mma.sync`)
and `ex2` throughput of the whole GPU with blocks of w = 1, 2, 4, 8 warps at the same
number of resident warps per SM (4, 8, 16), one wave of blocks: if a block's warps went to
sub-partitions by their index in the block, blocks of 1 or 2 warps would reach 1/4 or 1/2
of the rate whatever their number.

Run:  PYTHONPATH=$PWD python3 benchmarks/microbench_warps.py --out DIR   (writes DIR/warps.json)
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cupy as cp  # noqa: E402

from microbench_rates import SOURCE, timed  # noqa: E402

WARPS_PER_BLOCK = (1, 2, 4, 8)
WARPS_PER_SM = (4, 8, 16)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    module = cp.RawModule(code=SOURCE, options=("-arch=sm_90", "--std=c++17"))
    mma, ex2 = module.get_function("mma_loop"), module.get_function("ex2_loop")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    out = cp.zeros(1, dtype=cp.float32)
    iters, rows = 4000, []
    for per_sm in WARPS_PER_SM:
        for w in WARPS_PER_BLOCK:
            blocks = sms * per_sm // w
            t_mma = timed(lambda: mma((blocks,), (32 * w,), (out, cp.int32(iters))))
            t_ex2 = timed(lambda: ex2((blocks,), (32 * w,), (out, cp.int32(iters))))
            row = {"warps_per_sm": per_sm, "warps_per_block": w, "blocks": blocks,
                   "mma_flop_per_s": blocks * w * iters * 4 * 2 * 16 * 8 * 16 / t_mma,
                   "ex2_op_per_s": blocks * w * 32 * iters * 4 / t_ex2}
            rows.append(row)
            print(f"{per_sm:2d} warps/SM, {w} warps/block: mma {row['mma_flop_per_s'] / 1e12:7.1f} TFLOP/s, "
                  f"ex2 {row['ex2_op_per_s'] / 1e12:6.2f} Top/s", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "warps.json"), "w") as f:
        json.dump({"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "sm_count": sms,
                   "iters": iters, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
