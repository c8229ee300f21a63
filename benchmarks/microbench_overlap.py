"""How much do two co-resident thread blocks overlap? (device machine only)

flash-attn 2's forward kernel runs two thread blocks per SM (4 warps each; ncu's
``sm__warps_active`` reads 8 warps an SM), and iosim's kernel time model adds their steps
as if one ran after the other; the forward is then over-predicted by 1.2-1.4× wherever
blocks share SMs, and predicted within 3 % where the grid leaves one block per SM
(docs/cache.md, "Kernel time"). This measures the step itself, with no global memory:
one thread block of 4 warps runs, ``iters`` times, flash-attn 2's forward step as its
warps run it —

1. ``S = Q Kᵀ``: per 16-wide slice of the reduction, ``ldmatrix`` the warp's Q and K
   fragments from shared memory and issue the ``mma.sync``s (MW × N1 × K1 per warp);
2. the online softmax on the warp's S fragment: row maxima (``fmax``, two quad shuffles),
   the rescale factor (one ``ex2`` a row), ``p = 2^(s·scale − m·scale)`` (an ``fma`` and an
   ``ex2`` per element), the row sums (``fadd``), the output accumulator rescaled
   (``fmul`` per element of O's fragment);
3. ``__syncthreads``; ``O += P V``: P converted to fp16 in registers, V's fragments by
   ``ldmatrix`` (MW × N2 × N1 per warp); ``__syncthreads``

— with the warp tiles of flash-attn 2's forward kernels on the H200 (main and split-KV)
and a few others. Each is timed with 1-4 blocks per SM launched (132·k blocks: one wave
where k blocks fit an SM), and its two phases alone (products only; softmax only) with 1
and 2. ``registers`` and ``local_bytes`` (spills) say how many fit.
Reported per configuration: seconds per block-step at each occupancy. No global memory
is touched in the loop, so what differs between 1 and 2 blocks an SM is only how the
SM's units are shared.

Run:  python3 benchmarks/microbench_overlap.py --out DIR     (writes DIR/overlap.json)
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cupy as cp  # noqa: E402

from microbench_rates import PTX_HELPERS, timed  # noqa: E402

SOURCE = PTX_HELPERS + r"""
__device__ __forceinline__ float ex2(float x) { float y; asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
__device__ __forceinline__ unsigned pack(float a, float b) {
    unsigned r; asm("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(a), "f"(b)); return r;
}

// One 16-wide slice of the reduction: per 16 columns of B, one ldmatrix.x4, then the
// mma.syncs of every A fragment (as flash-attn 2's CUTLASS gemm runs it).
template <int M, int N>
__device__ __forceinline__ void b_pass(float (&acc)[M][N / 8][4], const unsigned (&a)[M][4], unsigned base,
                                       unsigned& slot, unsigned lane) {
    #pragma unroll
    for (int n = 0; n < N / 16; ++n) {
        unsigned b[4];
        ldsm_x4(b, base + ((slot++ & 63u) << 9) + lane * 16);
        #pragma unroll
        for (int m = 0; m < M; ++m) {
            mma16816(acc[m][2 * n], a[m], b[0], b[1]);
            mma16816(acc[m][2 * n + 1], a[m], b[2], b[3]);
        }
    }
}

// MW x N1 x K1: S = Q K^T per warp; MW x N2 x N1: O += P V per warp.
template <int WARPS, int MW, int N1, int K1, int N2, bool GEMM, bool SOFT>
__global__ void __launch_bounds__(32 * WARPS, 1) fa_step(float* out, int iters) {
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    for (int i = threadIdx.x; i < SMEM_WINDOW / 4; i += blockDim.x) ((unsigned*)smem)[i] = 0x2c002c00u ^ (i & 0x00ff00ffu);
    __syncthreads();
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    constexpr int M = MW / 16;
    float acc_o[M][N2 / 8][4] = {};
    float row_max[M][2], row_sum[M][2];
    #pragma unroll
    for (int m = 0; m < M; ++m) { row_max[m][0] = row_max[m][1] = -1.f; row_sum[m][0] = row_sum[m][1] = 0.f; }
    const float scale = 0.125f;
    unsigned slot = warp * 7;
    for (int it = 0; it < iters; ++it) {
        float s[M][N1 / 8][4];
        #pragma unroll
        for (int m = 0; m < M; ++m)
            #pragma unroll
            for (int n = 0; n < N1 / 8; ++n) s[m][n][0] = s[m][n][1] = s[m][n][2] = s[m][n][3] = 0.01f * (n + lane);
        if (GEMM) {
            #pragma unroll
            for (int k = 0; k < K1 / 16; ++k) {
                unsigned a[M][4];
                #pragma unroll
                for (int m = 0; m < M; ++m) ldsm_x4(a[m], base + ((slot++ & 63u) << 9) + lane * 16);
                b_pass<M, N1>(s, a, base, slot, lane);
            }
        }
        if (SOFT) {
            #pragma unroll
            for (int m = 0; m < M; ++m)
                #pragma unroll
                for (int r = 0; r < 2; ++r) {
                    float mx = row_max[m][r];
                    #pragma unroll
                    for (int n = 0; n < N1 / 8; ++n) mx = fmaxf(mx, fmaxf(s[m][n][2 * r], s[m][n][2 * r + 1]));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                    const float corr = ex2((row_max[m][r] - mx) * scale);
                    row_max[m][r] = mx;
                    const float mscaled = mx * scale;
                    float sum = row_sum[m][r] * corr;
                    #pragma unroll
                    for (int n = 0; n < N1 / 8; ++n) {
                        #pragma unroll
                        for (int e = 0; e < 2; ++e) {
                            const float p = ex2(fmaf(s[m][n][2 * r + e], scale, -mscaled));
                            s[m][n][2 * r + e] = p;
                            sum += p;
                        }
                    }
                    row_sum[m][r] = sum;
                    #pragma unroll
                    for (int n = 0; n < N2 / 8; ++n) { acc_o[m][n][2 * r] *= corr; acc_o[m][n][2 * r + 1] *= corr; }
                }
        }
        __syncthreads();
        if (GEMM) {
            #pragma unroll
            for (int k = 0; k < N1 / 16; ++k) {
                unsigned a[M][4];
                #pragma unroll
                for (int m = 0; m < M; ++m) {
                    a[m][0] = pack(s[m][2 * k][0], s[m][2 * k][1]);
                    a[m][1] = pack(s[m][2 * k][2], s[m][2 * k][3]);
                    a[m][2] = pack(s[m][2 * k + 1][0], s[m][2 * k + 1][1]);
                    a[m][3] = pack(s[m][2 * k + 1][2], s[m][2 * k + 1][3]);
                }
                b_pass<M, N2>(acc_o, a, base, slot, lane);
            }
        } else {
            #pragma unroll
            for (int m = 0; m < M; ++m)
                #pragma unroll
                for (int n = 0; n < N1 / 8; ++n) acc_o[m][n % (N2 / 8)][0] += s[m][n][0] + s[m][n][3];
        }
        __syncthreads();
    }
    float t = 0.f;
    #pragma unroll
    for (int m = 0; m < M; ++m) {
        t += row_sum[m][0] + row_sum[m][1];
        #pragma unroll
        for (int n = 0; n < N2 / 8; ++n) t += acc_o[m][n][0] + acc_o[m][n][1] + acc_o[m][n][2] + acc_o[m][n][3];
    }
    if (t == 12345.f) out[0] = t;
}
"""

#: (name, warps, MW, N1, K1, N2): flash-attn 2's forward kernels on the H200 (B_r = warps·MW,
#: B_c = N1, d = K1 = N2; the main kernel as ncu named it, the split-KV kernel's tiles from the
#: launch template), then other warp tiles to see how the factor varies
CONFIGS = [
    ("fa2 d=32 (128x128)", 4, 32, 128, 32, 32),
    ("fa2 d=64 (128x128)", 4, 32, 128, 64, 64),
    ("fa2 d=96 (128x64)", 4, 32, 64, 96, 96),
    ("fa2 d=128 (128x64)", 4, 32, 64, 128, 128),
    ("fa2 d=192 (128x64, 8 warps)", 8, 16, 64, 192, 192),
    ("d=192 (64x64), its 4-warp half", 4, 16, 64, 192, 192),
    ("fa2 d=256 (64x64)", 4, 16, 64, 256, 256),
    ("fa2 splitkv d=32 (64x256)", 4, 16, 256, 32, 32),
    ("fa2 splitkv d=64 (64x256)", 4, 16, 256, 64, 64),
    ("fa2 splitkv d=128 (64x128)", 4, 16, 128, 128, 128),
    ("fa2 splitkv d=256 (64x64)", 4, 16, 64, 256, 256),
    ("d=64 (128x64)", 4, 32, 64, 64, 64),
    ("d=32 (64x64)", 4, 16, 64, 32, 32),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=4000)
    args = ap.parse_args()
    names = {}
    for name, warps, mw, n1, k1, n2 in CONFIGS:
        for gemm, soft in ((True, True), (True, False), (False, True)):
            names[(name, gemm, soft)] = (f"fa_step<{warps}, {mw}, {n1}, {k1}, {n2}, {str(gemm).lower()}, "
                                         f"{str(soft).lower()}>")
    module = cp.RawModule(code=SOURCE, options=("-arch=sm_90", "--std=c++17"), name_expressions=list(names.values()))
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    out = cp.zeros(1, dtype=cp.float32)
    rows = []
    for name, warps, mw, n1, k1, n2 in CONFIGS:
        row = {"config": name, "warps": warps, "mw": mw, "n1": n1, "k1": k1, "n2": n2, "iters": args.iters}
        for (cfg, gemm, soft), expr in names.items():
            if cfg != name:
                continue
            fn = module.get_function(expr)
            label = "step" if gemm and soft else ("gemm" if gemm else "softmax")
            row.setdefault("registers", fn.num_regs)
            row.setdefault("local_bytes", fn.local_size_bytes)
            for ctas in ((1, 2, 3, 4) if gemm and soft else (1, 2)):
                t = timed(lambda: fn((sms * ctas,), (32 * warps,), (out, cp.int32(args.iters)), shared_mem=32768))
                row[f"{label}_c{ctas}_s"] = t / (ctas * args.iters)   # seconds per block-step, per SM
        rows.append(row)
        print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "overlap.json"), "w") as f:
        json.dump({"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "sm_count": sms,
                   "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
