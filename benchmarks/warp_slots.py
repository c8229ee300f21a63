"""Which hardware warp slots the thread blocks of a long grid land on (device machine only).

A thread's local memory (where a kernel spills registers) is addressed by the SM and the
hardware warp slot the thread runs in, not by the block: the bytes a kernel's spills occupy
in the L2 are the frames of the slots its blocks use. This launches a grid of many short
blocks of 128 threads, with enough shared memory that an SM holds two at a time (as the
flash forwards run), and records each warp's SM (``%smid``) and slot (``%warpid``).

Run:  python3 benchmarks/warp_slots.py --out DIR     (writes DIR/warp_slots.json and prints it)
"""

from __future__ import annotations

import argparse
import json
import os

SOURCE = r"""
extern "C" __global__ void where(unsigned* out, int spin) {
    extern __shared__ float pad[];
    unsigned sm, warp;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(warp));
    if ((threadIdx.x & 31) == 0) {
        out[2 * (blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32)] = sm;
        out[2 * (blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32) + 1] = warp;
    }
    pad[threadIdx.x] = (float)sm;
    long long t0 = clock64();
    while (clock64() - t0 < spin) { }
}
"""


def main() -> None:
    import cupy as cp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    kernel = cp.RawKernel(SOURCE, "where")
    dev = cp.cuda.Device()
    sms, smem = dev.attributes["MultiProcessorCount"], 100 * 1024
    kernel.max_dynamic_shared_size_bytes = smem
    result = {"sms": sms, "threads": 128, "shared_bytes": smem, "cases": []}
    for waves, spin in ((50, 20000), (50, 0)):
        blocks = sms * 2 * waves
        out = cp.zeros(2 * blocks * 4, dtype=cp.uint32)
        kernel((blocks,), (128,), (out, cp.int32(spin)), shared_mem=smem)
        dev.synchronize()
        pairs = out.get().reshape(-1, 2)
        slots = {}
        for sm, warp in pairs.tolist():
            slots.setdefault(sm, set()).add(warp)
        counts = sorted(len(v) for v in slots.values())
        result["cases"].append({"blocks": blocks, "spin_cycles": spin, "sms_seen": len(slots),
                                "slots_per_sm_min": counts[0], "slots_per_sm_max": counts[-1],
                                "slots_of_sm0": sorted(slots.get(0, ()))})
    os.makedirs(args.out, exist_ok=True)
    json.dump(result, open(os.path.join(args.out, "warp_slots.json"), "w"), indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
