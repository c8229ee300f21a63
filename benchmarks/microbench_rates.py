"""Measure the rates a kernel time model needs, on the device machine (CuPy).

    python3 benchmarks/microbench_rates.py --out DIR

Writes DIR/rates.json: achieved throughput of
  * ``mma_sync_fp16``: tensor-core ``mma.sync.aligned.m16n8k16`` with fp16 inputs and fp32
    accumulation — the instruction FlashAttention-2's kernels use (2·16·8·16 FLOP each);
  * ``ex2``: ``ex2.approx.f32`` on the special-function units (ops/s);
  * ``fp32_fma``: fp32 fused multiply-adds (2 FLOP each);
  * ``dram_read``: bytes/s streaming 4 GiB once with 16-byte loads;
  * ``l2_read``: bytes/s re-reading a 16 MiB buffer (fits the L2) many times; loads use
    ``__ldcg`` (cache-global) so the SMs' L1 does not serve the re-reads.
Each is the median of 5 timed runs after one warm-up (CUDA events). These are rates the
instructions reach, not vendor peaks, and they are measured on their own kernels — not
fitted to any validation set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import cupy as cp

SOURCE = r"""
extern "C" __global__ void mma_loop(float* out, int iters) {
    // Four independent accumulators per warp so the tensor pipe is never waiting on one.
    unsigned a0 = threadIdx.x, a1 = a0 ^ 1, a2 = a0 ^ 2, a3 = a0 ^ 3, b0 = a0 * 3, b1 = b0 ^ 5;
    float c[4][4] = {};
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int k = 0; k < 4; ++k) {
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                         "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        }
    }
    float s = 0.f;
    for (int k = 0; k < 4; ++k) for (int j = 0; j < 4; ++j) s += c[k][j];
    if (s == 12345.f) out[0] = s;   // keeps the loop alive
}

extern "C" __global__ void ex2_loop(float* out, int iters) {
    float x0 = threadIdx.x * 1e-3f, x1 = x0 + 0.1f, x2 = x0 + 0.2f, x3 = x0 + 0.3f;
    for (int i = 0; i < iters; ++i) {
        asm volatile("ex2.approx.f32 %0, %0;" : "+f"(x0));
        asm volatile("ex2.approx.f32 %0, %0;" : "+f"(x1));
        asm volatile("ex2.approx.f32 %0, %0;" : "+f"(x2));
        asm volatile("ex2.approx.f32 %0, %0;" : "+f"(x3));
        x0 *= -1e-3f; x1 *= -1e-3f; x2 *= -1e-3f; x3 *= -1e-3f;
    }
    if (x0 + x1 + x2 + x3 == 12345.f) out[0] = x0;
}

extern "C" __global__ void fma_loop(float* out, int iters) {
    float x[8];
    for (int k = 0; k < 8; ++k) x[k] = threadIdx.x + k;
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = fmaf(x[k], 0.999f, 0.001f);
    }
    float s = 0.f;
    for (int k = 0; k < 8; ++k) s += x[k];
    if (s == 12345.f) out[0] = s;
}

extern "C" __global__ void read_loop(const float4* buf, long long n, int passes, float* out) {
    float acc = 0.f;
    for (int p = 0; p < passes; ++p)
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
            float4 v = __ldcg(buf + i);   // cache-global: bypasses L1, so re-reads are served by the L2
            acc += v.x + v.y + v.z + v.w;
        }
    if (acc == 12345.f) out[0] = acc;
}
"""


def timed(fn, repeats: int = 5) -> float:
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    module = cp.RawModule(code=SOURCE, options=("-arch=sm_90",))
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    out = cp.zeros(1, dtype=cp.float32)
    rates = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "sm_count": sms}

    iters = 20000
    blocks, threads = sms * 4, 256            # 8 warps per block, 4 blocks per SM
    t = timed(lambda: module.get_function("mma_loop")((blocks,), (threads,), (out, cp.int32(iters))))
    rates["mma_sync_fp16_flop_per_s"] = blocks * (threads // 32) * iters * 4 * 2 * 16 * 8 * 16 / t

    t = timed(lambda: module.get_function("ex2_loop")((blocks,), (threads,), (out, cp.int32(iters))))
    rates["ex2_op_per_s"] = blocks * threads * iters * 4 / t

    t = timed(lambda: module.get_function("fma_loop")((blocks,), (threads,), (out, cp.int32(iters))))
    rates["fp32_flop_per_s"] = blocks * threads * iters * 8 * 2 / t

    big = cp.ones(4 * 2 ** 30 // 4, dtype=cp.float32)           # 4 GiB, far beyond the L2
    n4 = big.size // 4
    t = timed(lambda: module.get_function("read_loop")((sms * 8,), (512,), (big, cp.int64(n4), cp.int32(1), out)))
    rates["dram_read_bytes_per_s"] = big.nbytes / t
    del big

    small = cp.ones(16 * 2 ** 20 // 4, dtype=cp.float32)       # 16 MiB, fits the L2
    passes = 200
    t = timed(lambda: module.get_function("read_loop")((sms * 8,), (512,),
                                                        (small, cp.int64(small.size // 4), cp.int32(passes), out)))
    rates["l2_read_bytes_per_s"] = small.nbytes * passes / t

    os.makedirs(args.out, exist_ok=True)
    json.dump(rates, open(os.path.join(args.out, "rates.json"), "w"), indent=1)
    print(json.dumps(rates, indent=1))


if __name__ == "__main__":
    main()
