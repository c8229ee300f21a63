"""Does the H200 write a line to DRAM twice when it holds it dirty near its writer and at
its home? (device machine only)

The flash forward kernels write more to DRAM than they write at all: up to 1.2 × O, and
1.85 × at N = 40,000 causal (docs/validation/2026-12-02-s15-check.md), so some lines reach
DRAM twice. A line written by one half of the chip is held near its writer and at its home
partition (docs/validation/2026-12-03-l2-write-near.md); if both copies are dirty and each
is written back when evicted, a line homed on the other half reaches DRAM twice.

This writes a buffer Y of W bytes from the blocks of one side (``writer`` 0 or 1) or of
both (2; 16-byte stores, each line whole, once), then, after a grid-wide barrier, every
block reads a buffer Z of 256 MB (16-byte ``ld.global.cg``), which evicts all of Y (sides
measured first, as in ``l2_shared_ncu.py``). ncu reports the DRAM bytes written within the
kernel: W if each line is written back once; up to 1.5 W if every line homed on the other
half (about half of them) is written back from both partitions.

Run:  PYTHONPATH=$PWD python3 benchmarks/l2_write_twice_ncu.py --out DIR
Its table, from a committed run: python benchmarks/l2_write_twice_ncu.py --summary DIR
Writes DIR/l2_write_twice.csv (raw ncu CSV, one launch per case, in CASES order),
DIR/cases.json and DIR/sides.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_shared_ncu import PRELUDE, profile_sided, sided_kernel  # noqa: E402

MB = 10 ** 6
FLUSH = 256 * MB
#: (written bytes W, the side that writes: 0, 1 or 2 for both)
CASES = [(w * MB, writer) for writer in (0, 1, 2) for w in (0, 4, 8, 16)]
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
           "gpu__time_duration.sum"]
SOURCE = PRELUDE + r"""
extern "C" __global__ void write_twice(int4* __restrict__ y, unsigned long long n_y, const int4* __restrict__ z,
                                       unsigned long long n_z, const int* __restrict__ side_of_sm, int writer,
                                       unsigned* counters, int4* __restrict__ sink) {
    // counters: [0] barrier arrivals, [1], [2] blocks on side 0 and 1
    __shared__ unsigned rank, count[2];
    int side = side_of_sm[smid()];
    if (threadIdx.x == 0) rank = atomicAdd(counters + 1 + side, 1u);
    unsigned nb = gridDim.x;
    grid_barrier(counters, nb);
    if (threadIdx.x == 0) { count[0] = atomicAdd(counters + 1, 0u); count[1] = atomicAdd(counters + 2, 0u); }
    __syncthreads();
    unsigned my = writer == 2 ? blockIdx.x : rank, writers = writer == 2 ? nb : count[side];
    if (writer == 2 || side == writer) {
        unsigned long long stride = (unsigned long long)writers * blockDim.x;
        for (unsigned long long i = (unsigned long long)my * blockDim.x + threadIdx.x; i < n_y; i += stride)
            y[i] = make_int4((int)i, 1, 2, 3);
    }
    grid_barrier(counters, 2 * nb);
    int acc = 0;
    unsigned long long stride = (unsigned long long)nb * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_z; i += stride) {
        int4 v = __ldcg(z + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x7fffffff) sink[0] = make_int4(acc, 0, 0, 0);
}
"""


def run_target() -> None:
    import cupy as cp

    kernel, sms, side_dev, sink = sided_kernel(SOURCE, "write_twice")
    z = cp.zeros(FLUSH // 4, dtype=cp.int32)
    for w, writer in CASES:
        y = cp.zeros(max(w, 16) // 4, dtype=cp.int32)
        counters = cp.zeros(3, dtype=cp.uint32)
        kernel((sms * 2,), (256,), (y, cp.uint64(w // 16), z, cp.uint64(FLUSH // 16), side_dev, cp.int32(writer),
                                    counters, sink))
        cp.cuda.Device().synchronize()
        del y


def main() -> None:
    profile_sided(__file__, __doc__, run_target, "write_twice", METRICS, "l2_write_twice.csv",
                  [{"write_bytes": w, "writer": s} for w, s in CASES])


if __name__ == "__main__":
    main()
