"""A dependent load's latency on the GPU, measured by pointer chasing (device machine only).

The kernel time model needs how long one load whose address or use waits on the previous
load takes, where the data sits in the L2 and where it sits in DRAM: the split-KV combine
kernel walks its splits one dependent load after another (docs/cache.md, "Kernel time").
One thread follows ``i = next[i]`` through a random cycle of 128-byte lines (one hop a
line, so no hop shares a sector with the one before) for ``HOPS`` hops and reads
``%globaltimer`` before and after; latency = span ÷ hops.

* ``l2``: a 16 MiB cycle (in the 50 MB L2, past the 256 KiB L1), loads with ``ld.global.cg``
  (cached in the L2 only), after one warm-up walk;
* ``l1_path``: the same with plain loads (``ld.global``: through the L1, which misses);
* ``dram``: a 2 GiB cycle (40× the L2), plain loads, each walk on lines no earlier walk
  touched (it starts where the previous one stopped).

Run:  python3 benchmarks/microbench_latency.py --out DIR      (writes DIR/latency.json)
"""

from __future__ import annotations

import argparse
import json
import os

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void chase(const unsigned* next, unsigned start, int hops, int cg,
                                 unsigned long long* span, unsigned* sink) {
    unsigned i = start;
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    if (cg) {
        for (int h = 0; h < hops; ++h) i = __ldcg(next + i);
    } else {
        for (int h = 0; h < hops; ++h) i = next[i];
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    span[0] = t1 - t0;
    sink[0] = i;
}
"""
LINE_WORDS = 32          # 128-byte lines of 4-byte words
HOPS = 20_000


def cycle(lines: int, seed: int) -> tuple[cp.ndarray, np.ndarray]:
    """A random single cycle over ``lines`` lines (word line·32 holds the next line's first
    word), and the order the cycle visits them."""
    order = np.random.default_rng(seed).permutation(lines).astype(np.uint32)
    nxt = np.empty(lines, dtype=np.uint32)
    nxt[order] = np.roll(order, -1) * LINE_WORDS
    words = cp.zeros(lines * LINE_WORDS, dtype=cp.uint32)
    words[::LINE_WORDS] = cp.asarray(nxt)
    return words, order


def walk(kernel, words, hops: int, cg: bool, start: int = 0) -> float:
    span = cp.zeros(1, dtype=cp.uint64)
    sink = cp.zeros(1, dtype=cp.uint32)
    kernel((1,), (1,), (words, cp.uint32(start * LINE_WORDS), cp.int32(hops), cp.int32(int(cg)), span, sink))
    cp.cuda.Device().synchronize()
    return float(span.get()[0]) / hops


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    kernel = cp.RawKernel(SOURCE, "chase")
    rows = {}
    small, _ = cycle((16 << 20) // 128, 1)
    walk(kernel, small, HOPS, True)   # warm-up: the lines into the L2
    rows["l2_ns"] = [walk(kernel, small, HOPS, True) for _ in range(5)]
    rows["l1_path_ns"] = [walk(kernel, small, HOPS, False) for _ in range(5)]
    del small
    big, order = cycle((2 << 30) // 128, 2)
    rows["dram_ns"] = [walk(kernel, big, HOPS, False, int(order[k * HOPS])) for k in range(5)]
    props = cp.cuda.runtime.getDeviceProperties(0)
    out = {"device": props["name"].decode(), "hops": HOPS, **rows,
           **{k.replace("_ns", "_median_ns"): sorted(v)[len(v) // 2] for k, v in rows.items()}}
    with open(os.path.join(args.out, "latency.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
