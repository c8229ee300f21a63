"""How the H200's L2 keeps a working set a little larger than itself (device machine only).

iosim's L2 model is one fully associative LRU. An LRU has a cliff: a buffer swept over and
over in the same order hits every time while it fits and misses every time once it is one
chunk larger. The long causal FlashAttention-2 runs whose DRAM reads iosim under-predicts
(docs/validation/2026-12-01-l2-partitions.md) sit near that size. This measures what the
real L2 does there: a kernel sweeps a buffer of D bytes ``passes`` times in the same order
(grid-stride, 16-byte ``ld.global.cg`` loads that bypass L1), and ncu reports the DRAM
bytes read. The warm passes' hit fraction is 1 − (DRAM read − D) / ((passes − 1)·D).

Run:  PYTHONPATH=$PWD python3 benchmarks/l2_sweep_ncu.py --out DIR
Writes DIR/l2_sweep.csv (raw ncu CSV, one launch per size, in SIZES order) and DIR/sizes.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_self_profile import self_profile  # noqa: E402

MB = 10 ** 6
#: buffer sizes (bytes): around the 50 MB L2 (and its 25 MB partitions) and well past it
SIZES = [int(x * MB) for x in (8, 16, 24, 30, 36, 40, 44, 48, 52, 56, 60, 66, 72, 80, 100, 140)]
PASSES = 4
METRICS = ["dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "lts__t_sectors_srcunit_ltcfabric_op_read.sum",
           "gpu__time_duration.sum"]
SOURCE = r"""
extern "C" __global__ void l2_sweep(const int4* __restrict__ buf, unsigned long long n_vec, int passes,
                                    int4* __restrict__ sink) {
    int acc = 0;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (int p = 0; p < passes; ++p)
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_vec; i += stride) {
            int4 v = __ldcg(buf + i);
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    if (acc == 0x7fffffff) sink[0] = make_int4(acc, 0, 0, 0);   // keeps the loads; never true for zeros
}
"""


def run_target() -> None:
    import cupy as cp

    kernel = cp.RawKernel(SOURCE, "l2_sweep")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    sink = cp.zeros(4, dtype=cp.int32)
    for size in SIZES:
        buf = cp.zeros(size // 4, dtype=cp.int32)
        kernel((sms * 4,), (256,), (buf, cp.uint64(size // 16), cp.int32(PASSES), sink))
        cp.cuda.Device().synchronize()
        del buf


def main() -> None:
    self_profile(__file__, __doc__, run_target, "regex:l2_sweep", METRICS, "l2_sweep.csv", "sizes.json",
                 {"sizes": SIZES, "passes": PASSES, "grid": "4 x SMs", "block": 256})


if __name__ == "__main__":
    main()
