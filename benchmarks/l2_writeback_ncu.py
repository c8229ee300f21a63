"""When the H200's L2 writes dirty lines to DRAM during a kernel (device machine only).

iosim's L2 model writes a dirty chunk back when it is evicted and leaves the rest dirty at
the kernel's end; ncu's ``dram__bytes_write.sum`` of PyTorch's flash forward is 2-10 times
what that predicts (docs/validation/2026-12-02-s15-check.md: 4.8 MB against 16.2 MB at d =
64, N = 24,576), though its output fits the L2 many times over. This measures what the L2
does with written lines it need not evict: a kernel writes D bytes (16-byte stores, every
line whole, once) and then waits ``idle`` µs on the global timer before it ends; ncu
reports the DRAM bytes written within the kernel. With ``phases`` > 1 the writes are spread
evenly over the idle time (write 1/phases of the buffer, wait idle/phases, …).

If the bytes written grow with the idle time, the L2 writes dirty lines back after a delay
(not only on eviction); if they grow with D at a fixed idle time, it limits what it holds
dirty.

Run:  PYTHONPATH=$PWD python3 benchmarks/l2_writeback_ncu.py --out DIR
Writes DIR/l2_writeback.csv (raw ncu CSV, one launch per case, in CASES order) and
DIR/cases.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_self_profile import self_profile  # noqa: E402

MB = 10 ** 6
#: (bytes written, idle µs, phases)
CASES = ([(int(d * MB), idle, 1) for d in (1, 4, 16, 32) for idle in (0, 2, 5, 10, 20, 50, 100, 500, 2000)]
         + [(16 * MB, idle, 16) for idle in (20, 100, 500, 2000)]
         + [(64 * MB, idle, 1) for idle in (0, 100)])
METRICS = ["dram__bytes_write.sum", "dram__bytes_read.sum", "lts__t_sectors_op_write.sum",
           "gpu__time_duration.sum"]
SOURCE = r"""
__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
extern "C" __global__ void write_idle(int4* __restrict__ buf, unsigned long long n_vec,
                                      unsigned long long idle_ns, int phases) {
    __shared__ unsigned long long t0;
    if (threadIdx.x == 0) t0 = now_ns();
    __syncthreads();
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long per = (n_vec + phases - 1) / phases;
    for (int p = 0; p < phases; ++p) {
        unsigned long long lo = p * per, hi = min(n_vec, lo + per);
        for (unsigned long long i = lo + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < hi; i += stride)
            buf[i] = make_int4((int)i, p, 1, 2);
        unsigned long long until = t0 + idle_ns * (p + 1) / phases;
        if (threadIdx.x == 0) while (now_ns() < until) { }
        __syncthreads();
    }
}
"""


def run_target() -> None:
    import cupy as cp

    kernel = cp.RawKernel(SOURCE, "write_idle")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    for size, idle_us, phases in CASES:
        buf = cp.empty(size // 4, dtype=cp.int32)
        kernel((sms * 4,), (256,), (buf, cp.uint64(size // 16), cp.uint64(int(idle_us * 1000)), cp.int32(phases)))
        cp.cuda.Device().synchronize()
        del buf


def main() -> None:
    self_profile(__file__, __doc__, run_target, "regex:write_idle", METRICS, "l2_writeback.csv", "cases.json",
                 {"cases": [{"bytes": s, "idle_us": i, "phases": p} for s, i, p in CASES],
                  "grid": "4 x SMs", "block": 256})


if __name__ == "__main__":
    main()
