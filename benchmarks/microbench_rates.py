"""Measure the rates a kernel time model needs, on the device machine (CuPy).

    python3 benchmarks/microbench_rates.py --out DIR

Writes DIR/rates.json: achieved throughput of
  * ``mma_sync_fp16``: tensor-core ``mma.sync.aligned.m16n8k16`` with fp16 inputs and fp32
    accumulation — the instruction FlashAttention-2's kernels use (2·16·8·16 FLOP each);
  * ``ex2``: ``ex2.approx.f32`` on the special-function units (ops/s);
  * ``fp32_fma``: fp32 fused multiply-adds (2 FLOP each);
  * ``dram_read``: bytes/s streaming 4 GiB once with 16-byte loads;
  * ``l2_read``: bytes/s re-reading a 16 MiB buffer (fits the L2) many times; loads use
    ``__ldcg`` (cache-global) so the SMs' L1 does not serve the re-reads;
  * ``ldmatrix``: shared-memory bytes/s of ``ldmatrix.sync.aligned.m8n8.x4`` (the load that
    feeds ``mma.sync`` its operands), bank-conflict free;
  * ``warp_gemm``: the matrix-product phase of FlashAttention-2's kernels as their warps
    run it — per 16-wide slice of the reduction, ``ldmatrix`` the warp's A and B fragments
    from shared memory (A stays in registers where the kernel keeps it there, as P does in
    the forward pass) and issue the ``mma.sync``s — for every warp tile (M/warps_m ×
    N/warps_n × K) the flash-attn 2 kernels of the validation grid use, with their warps
    per thread block, at 1 and 2 thread blocks per SM. Reported as FLOP/s over the GPU;
  * ``dram_latency_s``: one dependent load chain over 1 GiB (random lines), per load.
``--ncu-floor`` instead launches an empty kernel 20 times (run it under ``ncu`` to read
``gpu__time_duration``: a kernel launch's time floor on that profiler).
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

#: the ldmatrix and mma.sync wrappers every matrix-product microbenchmark uses (microbench_overlap.py too)
PTX_HELPERS = r"""
#define SMEM_WINDOW 32768
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
"""

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

extern "C" __global__ void empty_kernel() {}

extern "C" __global__ void chase(const long long* next, long long steps, long long* out) {
    long long i = 0;
    for (long long s = 0; s < steps; ++s) i = __ldcg(next + i);
    out[0] = i;
}

""" + PTX_HELPERS + r"""

extern "C" __global__ void ldmatrix_loop(float* out, int iters) {
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    for (int i = threadIdx.x; i < SMEM_WINDOW / 4; i += blockDim.x) ((unsigned*)smem)[i] = i;
    __syncthreads();
    unsigned acc = 0, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            unsigned r[4];
            // 32 lanes x 16 B = 512 contiguous bytes: every bank once per 8-row matrix
            ldsm_x4(r, base + (((i * 8 + k + warp) * 512) % SMEM_WINDOW) + lane * 16);
            acc ^= r[0] ^ r[1] ^ r[2] ^ r[3];
        }
    }
    if (acc == 12345u) out[0] = acc;
}

// One warp's share of a thread block's matrix product C[MW x NW] += A[MW x K] B[K x NW], the
// way flash-attn 2's CUTLASS gemm runs it: per 16-wide slice of K, ldmatrix the A fragments
// (unless A lives in registers) and, per 16 columns of B, one ldmatrix.x4 then the mma.syncs.
template <int MW, int NW, int K, bool A_IN_REGS>
__global__ void warp_gemm(float* out, int iters) {
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    for (int i = threadIdx.x; i < SMEM_WINDOW / 4; i += blockDim.x) ((unsigned*)smem)[i] = 0x3c003c00u ^ i;
    __syncthreads();
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float acc[MW / 16][NW / 8][4] = {};
    unsigned areg[MW / 16][4];
    #pragma unroll
    for (int m = 0; m < MW / 16; ++m)
        #pragma unroll
        for (int j = 0; j < 4; ++j) areg[m][j] = 0x3c003c00u ^ (lane + m + j);
    unsigned slot = warp * 7;
    for (int it = 0; it < iters; ++it) {
        #pragma unroll 2
        for (int k = 0; k < K / 16; ++k) {
            unsigned a[MW / 16][4];
            #pragma unroll
            for (int m = 0; m < MW / 16; ++m) {
                if (A_IN_REGS) {
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) a[m][j] = areg[m][j];
                } else {
                    ldsm_x4(a[m], base + ((slot++ & 63u) << 9) + lane * 16);  // 64 x 512 B = the window
                }
            }
            #pragma unroll
            for (int n = 0; n < NW / 16; ++n) {
                unsigned b[4];
                ldsm_x4(b, base + ((slot++ & 63u) << 9) + lane * 16);
                #pragma unroll
                for (int m = 0; m < MW / 16; ++m) {
                    mma16816(acc[m][2 * n], a[m], b[0], b[1]);
                    mma16816(acc[m][2 * n + 1], a[m], b[2], b[3]);
                }
            }
        }
    }
    float s = 0.f;
    #pragma unroll
    for (int m = 0; m < MW / 16; ++m)
        #pragma unroll
        for (int n = 0; n < NW / 8; ++n) s += acc[m][n][0] + acc[m][n][1] + acc[m][n][2] + acc[m][n][3];
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


# The warp tiles of flash-attn 2's kernels on an H100/H200 (kernel traits as ncu names them in
# docs/validation/2026-11-29-sdpa-flash-attn-2*/): (M/warps_m, N/warps_n, K, A in registers, warps).
# Forward, 4 warps stacked along the query rows: S = Q K^T (MW = B_r/4, NW = B_c, K = d) and
# O += P V (MW = B_r/4, NW = d, K = B_c, P in registers). Backward, 8 warps in
# AtomLayoutMSdP / AtomLayoutNdKV / AtomLayoutMdQ grids: S and dP (B_r x B_c x d), dV and dK
# (B_c x d x B_r), dQ (B_r x d x B_c). iosim.models.kernel_time derives the same shapes from the presets.
def warp_tiles() -> set:
    tiles = set()
    fwd = {32: [(128, 128), (64, 256)], 64: [(128, 128), (64, 256)], 128: [(128, 64), (64, 128)], 256: [(64, 64)]}
    for d, shapes in fwd.items():
        for br, bc in shapes:
            tiles.add((br // 4, bc, d, False, 4))
            tiles.add((br // 4, d, bc, True, 4))
    bwd = {32: (128, 128, 4, 4, 4), 64: (128, 128, 4, 4, 4), 128: (64, 128, 2, 4, 2), 256: (64, 64, 4, 2, 2)}
    for d, (br, bc, a_sdp, a_dkv, a_dq) in bwd.items():
        tiles.add((br // a_sdp, bc // (8 // a_sdp), d, False, 8))
        tiles.add((bc // a_dkv, d // (8 // a_dkv), br, False, 8))
        tiles.add((br // a_dq, d // (8 // a_dq), bc, False, 8))
    return tiles


def tile_key(mw: int, nw: int, k: int, a_in_regs: bool, warps: int, ctas_per_sm: int) -> str:
    return f"{mw}x{nw}x{k}{'_areg' if a_in_regs else ''}_w{warps}_c{ctas_per_sm}"


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


def parse_args() -> argparse.Namespace:
    """The command line: the output folder, or --ncu-floor."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--ncu-floor", action="store_true", help="launch an empty kernel 20 times and exit")
    return parser.parse_args()


def ncu_floor(module) -> None:
    """Launch the empty kernel 20 times (for ncu to time) and wait for them."""
    for _ in range(20):
        module.get_function("empty_kernel")((1,), (32,), ())
    cp.cuda.Device().synchronize()


def measure_pipes(module, out, sms: int, rates: dict, iters: int) -> None:
    """The mma.sync, ex2 and fp32 FMA rates: 8-warp blocks, 4 an SM, ``iters`` loop trips each."""
    blocks, threads = sms * 4, 256            # 8 warps per block, 4 blocks per SM
    t = timed(lambda: module.get_function("mma_loop")((blocks,), (threads,), (out, cp.int32(iters))))
    rates["mma_sync_fp16_flop_per_s"] = blocks * (threads // 32) * iters * 4 * 2 * 16 * 8 * 16 / t

    t = timed(lambda: module.get_function("ex2_loop")((blocks,), (threads,), (out, cp.int32(iters))))
    rates["ex2_op_per_s"] = blocks * threads * iters * 4 / t

    t = timed(lambda: module.get_function("fma_loop")((blocks,), (threads,), (out, cp.int32(iters))))
    rates["fp32_flop_per_s"] = blocks * threads * iters * 8 * 2 / t


def measure_reads(module, out, sms: int, rates: dict):
    """The DRAM (one pass over 4 GiB) and L2 (200 passes over 16 MiB) read rates; returns the L2 buffer."""
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
    return small


def measure_warp_gemm(module, out, sms: int, tiles: list, names: list, window: int) -> dict:
    """FLOP/s of every warp tile's matrix-product loop at 1 and 2 thread blocks an SM, by :func:`tile_key`."""
    gemm = {}
    for (mw, nw, k, a_regs, warps), name in zip(tiles, names):
        fn = module.get_function(name)
        flop_per_iter = warps * 2 * mw * nw * k
        reps = max(20, int(2e9 // (flop_per_iter * sms)))
        for ctas in (1, 2):
            t = timed(lambda: fn((sms * ctas,), (32 * warps,), (out, cp.int32(reps)), shared_mem=window))
            gemm[tile_key(mw, nw, k, a_regs, warps, ctas)] = sms * ctas * reps * flop_per_iter / t
    return gemm


def measure_dram_latency(module) -> float:
    """Seconds per load of one dependent chain through every 128-byte line of 1 GiB, in random order."""
    lines = 2 ** 30 // 128                                          # one 8-byte index per 128-byte line
    order = cp.random.RandomState(1).permutation(lines).astype(cp.int64)
    chain = cp.zeros(2 ** 30 // 8, dtype=cp.int64)
    chain[order * 16] = cp.roll(order, -1) * 16                    # a single cycle through every line
    steps = 200000
    res = cp.zeros(1, dtype=cp.int64)
    t = timed(lambda: module.get_function("chase")((1,), (1,), (chain, cp.int64(steps), res)), repeats=3)
    latency = t / steps
    del chain
    return latency


def main() -> None:
    args = parse_args()
    tiles = sorted(warp_tiles())
    names = [f"warp_gemm<{mw}, {nw}, {k}, {'true' if a else 'false'}>" for mw, nw, k, a, _ in tiles]
    module = cp.RawModule(code=SOURCE, options=("-arch=sm_90", "--std=c++17"), name_expressions=names)
    if args.ncu_floor:
        ncu_floor(module)
        return
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    out = cp.zeros(1, dtype=cp.float32)
    rates = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "sm_count": sms}

    iters = 20000
    measure_pipes(module, out, sms, rates, iters)
    small = measure_reads(module, out, sms, rates)     # held to the end: the later kernels run with it allocated

    window = 32768
    t = timed(lambda: module.get_function("ldmatrix_loop")((sms * 2,), (256,), (out, cp.int32(iters)),
                                                            shared_mem=window))
    rates["ldmatrix_bytes_per_s"] = sms * 2 * 8 * iters * 8 * 512 / t

    rates["warp_gemm_flop_per_s"] = measure_warp_gemm(module, out, sms, tiles, names, window)
    rates["dram_latency_s"] = measure_dram_latency(module)

    os.makedirs(args.out, exist_ok=True)
    json.dump(rates, open(os.path.join(args.out, "rates.json"), "w"), indent=1)
    print(json.dumps(rates, indent=1))
    del small


if __name__ == "__main__":
    main()
