"""Where does the GPU put a launch's thread blocks past the first wave? (device machine only)

docs/validation/2026-12-02-block-cost.md found flash-attn 2's forward taking 0.9 of a
paired wave for 132 blocks past full pairs (396 and 660 blocks of two an SM), where the
kernel time model's two-slot schedule runs them alone, one an SM. This asks the hardware
directly: a kernel that holds exactly two blocks an SM (128 threads, 100 KiB of dynamic
shared memory each) and whose blocks all do the same work — independent FMA chains, so
two blocks on one SM share its fp32 units and each runs at about half speed — records,
per block, the SM it ran on (``%smid``) and its first and last ``%globaltimer`` reading.
Launched with 132·k/2 blocks for k = 2 … 10 (one to five blocks an SM).

Run:  python3 benchmarks/microbench_dispatch.py --out DIR      (writes DIR/dispatch.json)
"""

from __future__ import annotations

import argparse
import json
import os

import cupy as cp

SOURCE = r"""
extern "C" __global__ void __launch_bounds__(128) probe(unsigned long long* t0, unsigned long long* t1,
                                                         unsigned* sm, float* sink, int iters) {
    extern __shared__ float pad[];
    unsigned long long start, stop;
    unsigned smid;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    float a[8];
    #pragma unroll
    for (int k = 0; k < 8; ++k) a[k] = threadIdx.x * 1e-3f + k;
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int k = 0; k < 8; ++k) a[k] = fmaf(a[k], 0.9999f, 1e-4f);
    }
    float s = 0.f;
    #pragma unroll
    for (int k = 0; k < 8; ++k) s += a[k];
    if (threadIdx.x == 0) pad[0] = s;
    __syncthreads();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(stop));
    if (threadIdx.x == 0) {
        t0[blockIdx.x] = start; t1[blockIdx.x] = stop; sm[blockIdx.x] = smid; sink[blockIdx.x] = pad[0];
    }
}
"""
SHARED = 100 * 1024
ITERS = 200_000


def run(kernel, blocks: int) -> dict:
    t0 = cp.zeros(blocks, dtype=cp.uint64)
    t1 = cp.zeros(blocks, dtype=cp.uint64)
    sm = cp.zeros(blocks, dtype=cp.uint32)
    sink = cp.zeros(blocks, dtype=cp.float32)
    args = (t0, t1, sm, sink, cp.int32(ITERS))
    for _ in range(2):   # warm-up
        kernel((blocks,), (128,), args, shared_mem=SHARED)
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    kernel((blocks,), (128,), args, shared_mem=SHARED)
    stop.record()
    stop.synchronize()
    base = int(t0.min())
    return {"blocks": blocks, "event_s": cp.cuda.get_elapsed_time(start, stop) * 1e-3,
            "sm": sm.get().tolist(), "start_ns": (t0.get().astype("int64") - base).tolist(),
            "end_ns": (t1.get().astype("int64") - base).tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    kernel = cp.RawKernel(SOURCE, "probe")
    kernel.max_dynamic_shared_size_bytes = SHARED
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    rows = [run(kernel, sms * k // 2) for k in range(2, 11)]
    for r in rows:
        per_sm = {}
        for s in r["sm"]:
            per_sm[s] = per_sm.get(s, 0) + 1
        print(r["blocks"], f"{r['event_s'] * 1e6:.1f} us", "blocks an SM:", sorted(set(per_sm.values())),
              f"span {max(r['end_ns']) / 1e3:.1f} us", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "dispatch.json"), "w") as f:
        json.dump({"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "sm_count": sms,
                   "shared_bytes": SHARED, "iters": ITERS, "rows": rows}, f)


if __name__ == "__main__":
    main()
