"""How fast fp32 reductions into one tile go when many thread blocks add into it (device
machine only; the table runs anywhere).

flash-attn 2's backward adds each thread block's dQ into dQaccum with fp32 atomics, a whole
128-row tile a block; in a decode every column block of a (batch, head) adds into the same
tile, and the model's time for those backwards is 0.74-0.87 of the measured at d <= 104
(docs/validation/2026-12-04-red-contention.md). Here G thread blocks of 256 threads each add a
128 x D fp32 tile into tile ``b mod regions``, in an MMA accumulator fragment's order (a warp's
instruction: 8 rows, 16 bytes of one sector in each) or along rows (a line an instruction,
which is what the flash kernels turned out to do): with few regions many blocks add into the
same lines at once; with many, each tile is added by few. ncu reports the time and the L2's
reduction requests.

Run:      PYTHONPATH=$PWD python3 benchmarks/l2_red_contention_ncu.py --out DIR
Summary:  python benchmarks/l2_red_contention_ncu.py --summary DIR
Writes DIR/l2_red_contention.csv (raw ncu CSV, one launch per case, in CASES order) and DIR/cases.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_shared_ncu import summary as measured  # noqa: E402
from ncu_self_profile import main_or_summary  # noqa: E402

BLOCKS = 15040                      # the d = 40 decode's backward: 235 column blocks x 4 x 16
#: (D, regions, pattern): "mma" an accumulator fragment's order, "rows" 32 lanes along one row
CASES = [(64, r, "mma") for r in (1, 2, 4, 16, 64, 256)] + [(64, 1, "rows"), (64, 256, "rows"),
                                                             (128, 1, "mma"), (128, 256, "mma"), (64, 0, "none")]
METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_red.sum",
           "lts__t_requests_srcunit_tex_op_red.sum", "smsp__inst_executed_op_global_red.sum"]
SOURCE = r"""
extern "C" __global__ void red_tiles(float* __restrict__ acc, int d, int regions, int pattern) {
    if (regions == 0) return;
    float* base = acc + (size_t)(blockIdx.x % regions) * 128 * d;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (pattern == 0) {                      // an m16n8 accumulator fragment: 8 rows, 16 B of a sector each
        int r = warp * 16 + lane / 4;
        for (int n = 0; n < d; n += 8) {
            int c = n + 2 * (lane % 4);
            atomicAdd(base + r * d + c, 1.f);
            atomicAdd(base + r * d + c + 1, 1.f);
            atomicAdd(base + (r + 8) * d + c, 1.f);
            atomicAdd(base + (r + 8) * d + c + 1, 1.f);
        }
    } else {                                 // 32 lanes along a row: a line an instruction
        for (int r = warp * 16; r < warp * 16 + 16; ++r)
            for (int c = lane; c < d; c += 32) atomicAdd(base + r * d + c, 1.f);
    }
}
"""


def run_target() -> None:
    import cupy as cp

    kernel = cp.RawKernel(SOURCE, "red_tiles")
    for d, regions, pattern in CASES:
        acc = cp.zeros(max(regions, 1) * 128 * d, dtype=cp.float32)
        kernel((BLOCKS,), (256,), (acc, cp.int32(d), cp.int32(regions), cp.int32(pattern == "rows")))
        cp.cuda.Device().synchronize()
        del acc


def summary(raw_dir: str) -> str:
    lines = ["| D | regions | pattern | time (µs) | reductions (G/s) | red requests (M) | red sectors (M) |",
             "|---:|---:|---|---:|---:|---:|---:|"]
    for case, got in measured(raw_dir, "l2_red_contention.csv"):
        t = got["gpu__time_duration.sum"]
        reds = BLOCKS * 128 * case["d"] if case["regions"] else 0
        req = got.get("lts__t_requests_srcunit_tex_op_red.sum", 0) * 1e6 / 1e6
        sec = got.get("lts__t_sectors_srcunit_tex_op_red.sum", 0) * 1e6 / 32 / 1e6
        lines.append(f"| {case['d']} | {case['regions']} | {case['pattern']} | {t:.1f} | {reds / (t * 1e3):.0f} "
                     f"| {req:.2f} | {sec:.2f} |")
    return "\n".join(lines)


def main() -> None:
    main_or_summary(summary, __file__, __doc__, run_target, "regex:red_tiles", METRICS, "l2_red_contention.csv",
                    "cases.json", {"cases": [{"d": d, "regions": r, "pattern": p} for d, r, p in CASES],
                                   "blocks": BLOCKS, "block": 256})


if __name__ == "__main__":
    main()
