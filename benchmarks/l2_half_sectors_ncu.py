"""What the H200's L2 does with a sector written in two halves far apart (device machine only;
the table runs anywhere).

Under GQA flash-attn's backward writes dK and dV per query head into (B, N_kv, H, d) buffers;
at d = 8 (mod 16) each row shares a sector with another query head's row, written later by
other thread blocks, and the decodes' backwards read about 64 bytes of DRAM per half where the
halves are written tens of MB of traffic apart (docs/validation/2026-12-04-partial.md). This
kernel (4 blocks an SM, grid-wide barriers between phases) writes the first 16 bytes of every
sector of a buffer Y (``halves`` bytes of them), then streams R bytes of reads (``ld.global.cg``)
and W bytes of whole-line writes through the L2, then writes the second 16 bytes of every
sector of Y. ncu reports the DRAM bytes read and written within the kernel (the L2 flushed
before): with nothing between the halves, Y's sectors are whole when they leave the L2; with
R or W past the L2's room, the first halves leave it alone. The extra DRAM reads per half,
and whether reads and writes between the halves evict them alike, are what it measures.

Run:      PYTHONPATH=$PWD python3 benchmarks/l2_half_sectors_ncu.py --out DIR
Summary:  python benchmarks/l2_half_sectors_ncu.py --summary DIR
Writes DIR/l2_half_sectors.csv (raw ncu CSV, one launch per case, in CASES order) and DIR/cases.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_shared_ncu import PRELUDE  # noqa: E402
from l2_shared_ncu import summary as measured  # noqa: E402
from ncu_self_profile import main_or_summary  # noqa: E402

MB = 10 ** 6
#: (bytes of first halves, reads R between, whole-line writes W between, second halves written)
CASES = ([(4 * MB, r * MB, 0, 1) for r in (0, 8, 16, 24, 32, 48, 64, 96)]
         + [(4 * MB, 0, w * MB, 1) for w in (8, 16, 24, 32, 48)]
         + [(4 * MB, r * MB, 0, 0) for r in (0, 32, 96)] + [(1 * MB, 96 * MB, 0, 1), (16 * MB, 96 * MB, 0, 1)])
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
           "gpu__time_duration.sum"]
SOURCE = PRELUDE + r"""
extern "C" __global__ void half_sectors(int4* __restrict__ y, unsigned long long sectors, const int4* __restrict__ x,
                                        unsigned long long n_x, int4* __restrict__ z, unsigned long long n_z,
                                        int second, unsigned* arrived, int4* __restrict__ sink) {
    unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = tid; i < sectors; i += stride) y[2 * i] = make_int4((int)i, 1, 2, 3);
    grid_barrier(arrived, gridDim.x);
    int acc = 0;
    for (unsigned long long i = tid; i < n_x; i += stride) { int4 v = __ldcg(x + i); acc ^= v.x ^ v.w; }
    for (unsigned long long i = tid; i < n_z; i += stride) z[i] = make_int4((int)i, 4, 5, 6);
    grid_barrier(arrived, 2 * gridDim.x);
    if (second)
        for (unsigned long long i = tid; i < sectors; i += stride) y[2 * i + 1] = make_int4((int)i, 7, 8, 9);
    if (acc == 0x5eed1234) sink[0] = make_int4(acc, 0, 0, 0);
}
"""


def run_target() -> None:
    import cupy as cp

    kernel = cp.RawKernel(SOURCE, "half_sectors")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    sink = cp.zeros(4, dtype=cp.int32)
    x = cp.ones(max(r for _, r, _, _ in CASES) // 4 + 4, dtype=cp.int32)
    for halves, reads, writes, second in CASES:
        y = cp.zeros(2 * halves // 4, dtype=cp.int32)          # sectors of 32 bytes: halves / 16 of them
        z = cp.empty(max(writes, 16) // 4, dtype=cp.int32)
        arrived = cp.zeros(1, dtype=cp.uint32)
        kernel((sms * 4,), (256,), (y, cp.uint64(halves // 16), x, cp.uint64(reads // 16), z,
                                    cp.uint64(writes // 16), cp.int32(second), arrived, sink))
        cp.cuda.Device().synchronize()
        del y, z


def summary(raw_dir: str) -> str:
    lines = ["| first halves (MB) | reads between (MB) | writes between (MB) | second halves | DRAM read (MB) "
             "| beyond the reads between (MB) | DRAM written (MB) |", "|---:|---:|---:|:---:|---:|---:|---:|"]
    for case, got in measured(raw_dir, "l2_half_sectors.csv"):
        read = got["dram__bytes_read.sum"]
        lines.append(f"| {case['halves'] / MB:g} | {case['reads'] / MB:g} | {case['writes'] / MB:g} "
                     f"| {'y' if case['second'] else ''} | {read:.2f} | {read - case['reads'] / MB:.2f} "
                     f"| {got['dram__bytes_write.sum']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    main_or_summary(summary, __file__, __doc__, run_target, "regex:half_sectors", METRICS, "l2_half_sectors.csv",
                    "cases.json", {"cases": [{"halves": h, "reads": r, "writes": w, "second": s}
                                             for h, r, w, s in CASES], "grid": "4 x SMs", "block": 256})


if __name__ == "__main__":
    main()
