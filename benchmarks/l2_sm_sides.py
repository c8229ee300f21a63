"""Which L2 partition each SM reads near, where a line lives, and where thread blocks land
(device machine only): the three facts a two-partition L2 model needs
(docs/validation/2026-12-02-l2-partitions-experiment.md), measured, not chosen.

1. **Sides.** One thread on SM ``a`` walks a random cycle of 4,096 128-byte lines (512 KiB,
   fresh lines each pair, the L2 flushed first) with ``ld.global.cg``, then one thread on SM
   ``b`` walks it again; the mean hop (``%globaltimer`` over the walk: each hop waits on the
   one before) and each hop's ``clock64`` (unreliable: multi-modal even on one side, the
   clock read not ordered after the load; kept for a few SMs only). If the L2 keeps a line near the SMs that read it and at a
   home partition, an SM on ``a``'s side finds every line near (L2-hit latency), and one on
   the other side finds only the lines homed on its side near and the rest over the fabric
   (slower). Per ``b``: the median hop and the fraction of slow hops, for ``a`` = 0 and 1.
2. **Homes** (not answered: see 1.). For a few pairs, every hop's latency by line address.
3. **Launch order.** Every block of a FlashAttention-2-like grid (``--blocks`` blocks of 128
   threads, shared memory for two a SM) records ``%smid`` and its start (``%globaltimer``):
   which SM each block of the launch order runs on.

Run:  python3 benchmarks/l2_sm_sides.py --out DIR        (writes DIR/sides.json, DIR/order.json)
"""

from __future__ import annotations

import argparse
import json
import os

import cupy as cp
import numpy as np

SOURCE = r"""
__device__ unsigned smid() { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); return s; }

extern "C" __global__ void walk(const unsigned* next, unsigned start, int hops, int target, int* claimed,
                                long long* lat, unsigned* sink) {
    __shared__ int go;
    if (threadIdx.x == 0) go = smid() == (unsigned)target && atomicCAS(claimed, 0, 1) == 0;
    __syncthreads();
    if (!go || threadIdx.x != 0) return;
    __shared__ unsigned held[1];
    unsigned i = start;
    unsigned long long g0, g1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    for (int h = 0; h < hops; ++h) {
        long long t0 = clock64();
        unsigned j = __ldcg(next + i);
        held[0] = j;                // the store waits for the load; the clock is read after it
        long long t1 = clock64();
        lat[h] = t1 - t0;
        i = j;
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    lat[hops] = (long long)(g1 - g0);   // the whole walk, ns: every hop waits on the one before
    sink[0] = i + held[0];
}

extern "C" __global__ void where(unsigned* sm, unsigned long long* t, int spin) {
    extern __shared__ char pad[];
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    if (threadIdx.x == 0) { sm[blockIdx.x] = smid(); t[blockIdx.x] = t0; pad[0] = 0; }
    long long c = clock64();
    while (clock64() - c < spin) { }
}
"""

LINE = 128 // 4          # a 128-byte line in unsigned words
LINES = 4096


def cycle(rng, base: int) -> np.ndarray:
    """next[] for a random cycle over LINES lines starting at word ``base`` (one word a line used)."""
    order = rng.permutation(LINES)
    nxt = np.zeros(LINES * LINE, np.uint32)
    for k in range(LINES):
        nxt[order[k] * LINE] = base + order[(k + 1) % LINES] * LINE
    return nxt, base + order[0] * LINE


def _walk_lines(nxt: np.ndarray, start: int, base: int) -> np.ndarray:
    """The line (index in the pair's region) each hop of a walk from ``start`` reaches."""
    out, i = np.empty(LINES, np.int64), start
    for h in range(LINES):
        i = int(nxt[i - base])
        out[h] = (i - base) // LINE
    return out


def sides(mod, sms: int, rng) -> dict:
    walk = mod.get_function("walk")
    words = LINES * LINE
    pool = cp.zeros(words * (2 * sms + 2), cp.uint32)          # fresh lines for every pair
    lat = cp.zeros(LINES + 1, cp.int64)
    sink, claimed = cp.zeros(1, cp.uint32), cp.zeros(1, cp.int32)
    flush = cp.zeros(64 << 20, cp.int32)                       # 256 MiB: evicts the L2
    grid = (sms * 8,)

    def run(base, start, target):
        claimed.fill(0)
        walk(grid, (32,), (pool, np.uint32(start), np.int32(LINES), np.int32(target), claimed, lat, sink))
        cp.cuda.Device().synchronize()
        if int(claimed.get()[0]) != 1:
            raise SystemExit(f"no block ran on SM {target}")
        got = lat.get()
        return got[:LINES].copy(), float(got[LINES]) / LINES

    out, slot = {}, 0
    for a in (0, 1):
        rows = []
        for b in range(sms):
            base = slot * words
            slot += 1
            nxt, start = cycle(rng, base)
            pool[base:base + words] = cp.asarray(nxt)
            flush.fill(b)                            # the copy left the lines in the L2: evict them
            cold, cold_ns = run(base, start, a)      # SM a brings the lines in from DRAM
            hops, hop_ns = run(base, start, b)       # SM b walks them again
            keep = b % 11 == 0 or b == 1 - a         # every hop, with the line it reached, for a few
            rows.append({"b": b, "median": float(np.median(hops)), "cold_median": float(np.median(cold)),
                         "hop_ns": hop_ns, "cold_hop_ns": cold_ns,
                         "hops": hops.tolist() if keep else None,
                         "lines": _walk_lines(nxt, start, base).tolist() if keep else None})
        out[str(a)] = rows
    return out


def order(mod, sms: int, blocks: int) -> dict:
    where = mod.get_function("where")
    smem = 100 * 1024                                    # two blocks a SM, as the forward kernel
    where.max_dynamic_shared_size_bytes = smem
    sm, t = cp.zeros(blocks, cp.uint32), cp.zeros(blocks, cp.uint64)
    where((blocks,), (128,), (sm, t, np.int32(200_000)), shared_mem=smem)
    cp.cuda.Device().synchronize()
    return {"blocks": blocks, "smem_per_block": smem, "sm": sm.get().tolist(), "start_ns": t.get().tolist()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--blocks", type=int, default=1056)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    mod = cp.RawModule(code=SOURCE)
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms = props["multiProcessorCount"]
    rng = np.random.default_rng(0)
    data = {"gpu": props["name"].decode(), "sms": sms, "lines": LINES, "sides": sides(mod, sms, rng)}
    with open(os.path.join(args.out, "sides.json"), "w") as f:
        json.dump(data, f)
    with open(os.path.join(args.out, "order.json"), "w") as f:
        json.dump(order(mod, sms, args.blocks), f)
    for a, rows in data["sides"].items():
        print(f"a = {a}: mean hop (ns) per b:", " ".join(f"{r['hop_ns']:.0f}" for r in rows))
        print(f"a = {a}: cold mean hop (ns):", " ".join(f"{r['cold_hop_ns']:.0f}" for r in rows[:8]))


if __name__ == "__main__":
    main()
