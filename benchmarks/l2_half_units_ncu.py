"""Whole 32-byte sectors written alone in their 64-byte DRAM unit: does the L2's write-back read
the unit first? (device machine only; the table runs anywhere)

A sector written only in part costs a read of its 64-byte DRAM unit when its line is written back
(docs/validation/2026-12-04-half-sectors.md). A sector written whole whose unit's other sector
is not written was not measured. flash-attn 2's written buffers with every head's rows side by
side, (B, N, H, d), have such sectors wherever a head's row of 2d bytes is an odd number of
sectors (d ≡ 16 mod 32): the rows of heads h and h + 1 meet inside a unit, and their thread
blocks write the two halves far apart in launch order.

This kernel stores, in every 128-byte line of a buffer, the 16-byte chunks given (0-7; chunks
2k and 2k + 1 make sector k), by 16-byte stores, the threads of a warp covering consecutive
chunks of consecutive lines so that a sector's two chunks arrive in one request. The buffer is
256 MiB, past the L2, so lines are evicted (written back) within the launch; one case repeats
on 16 MiB, which the L2 keeps. ncu flushes the L2 before each launch and reports its DRAM bytes.

Run:      PYTHONPATH=$PWD python3 benchmarks/l2_half_units_ncu.py --out DIR
Summary:  python benchmarks/l2_half_units_ncu.py --summary DIR
Writes DIR/l2_half_units.csv (raw ncu CSV, one launch per case, in CASES order) and DIR/cases.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_shared_ncu import summary as measured  # noqa: E402
from ncu_self_profile import main_or_summary  # noqa: E402

MB = 10 ** 6
BIG, SMALL = 1 << 21, 1 << 17       # 256 MiB and 16 MiB of 128-byte lines
#: (lines, the 16-byte chunks stored in each line)
CASES = [(BIG, tuple(range(8))), (BIG, (0, 1, 2, 3)), (BIG, (0, 1)), (BIG, (2, 3)), (BIG, (0, 1, 4, 5)),
         (BIG, (0, 1, 2, 3, 4, 5)), (BIG, (0,)), (BIG, (0, 1, 6, 7)), (SMALL, (0, 1))]
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
           *(f"lts__t_sectors_srcunit_tex_op_write_lookup_{x}.sum" for x in ("hit", "miss"))]
SOURCE = r"""
extern "C" __global__ void store_chunks(uint4* __restrict__ y, unsigned long long lines,
                                        const int* __restrict__ chunks, int n_chunks) {
    unsigned long long total = lines * n_chunks;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        unsigned long long line = t / n_chunks;
        unsigned int v = (unsigned int)t;
        y[line * 8 + chunks[t % n_chunks]] = make_uint4(v, v + 1u, v + 2u, v + 3u);
    }
}
"""


def run_target() -> None:
    import cupy as cp

    kernel = cp.RawKernel(SOURCE, "store_chunks")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    for lines, chunks in CASES:
        y = cp.zeros(lines * 32, dtype=cp.uint32)
        c = cp.asarray(chunks, dtype=cp.int32)
        kernel((sms * 8,), (256,), (y, cp.uint64(lines), c, cp.int32(len(chunks))))
        cp.cuda.Device().synchronize()
        del y


def _units(chunks: tuple) -> tuple[int, int]:
    """(whole 64-byte units, units with one whole sector of two) stored in each line."""
    sectors = {c // 2 for c in chunks if c ^ 1 in chunks}
    units = [sum(2 * u + s in sectors for s in (0, 1)) for u in range(2)]
    return units.count(2), units.count(1)


def summary(raw_dir: str) -> str:
    lines = ["| buffer (MiB) | 16-byte chunks stored in each line | whole units a line | half units a line | "
             "DRAM read (MB) | read, bytes a line | DRAM written (MB) | written, bytes a line |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for case, got in measured(raw_dir, "l2_half_units.csv"):
        n = case["lines"]
        read, written = got["dram__bytes_read.sum"], got["dram__bytes_write.sum"]
        whole, half = _units(tuple(case["chunks"]))
        lines.append(f"| {n * 128 >> 20} | {', '.join(map(str, case['chunks']))} | {whole} | {half} | {read:.2f} "
                     f"| {read * MB / n:.1f} | {written:.2f} | {written * MB / n:.1f} |")
    return "\n".join(lines)


def main() -> None:
    main_or_summary(summary, __file__, __doc__, run_target, "regex:store_chunks", METRICS, "l2_half_units.csv",
                    "cases.json", {"cases": [{"lines": n, "chunks": list(c)} for n, c in CASES],
                                   "grid": "8 x SMs", "block": 256})


if __name__ == "__main__":
    main()
