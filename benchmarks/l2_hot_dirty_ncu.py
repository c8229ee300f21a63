"""Does the H200's L2 write lines that are rewritten over and over (a kernel's spilled
registers) back to DRAM more than once? (device machine only; the table runs anywhere)

The d = 64 and d = 128 flash forwards store 3-7 KB of spilled registers a key-block step,
each store written through to the L2 (docs/validation/2026-12-04-local-memory.md): a small
region rewritten for the whole kernel, beside O written once. Some of those forwards write
1.3-1.8 x their O to DRAM. This kernel writes, in ``rounds`` rounds: all of a hot region H
(the same lines every round), 1/rounds of an output W (each line once), and reads
1/rounds of a source S (each line once, ``ld.global.cg``: what streams through the L2). ncu
reports the DRAM bytes written within the kernel (the L2 is flushed before). An L2 that keeps
its most recently used lines writes about W when S evicts the output (and 0 when H + W
stays under its dirty cap of about 29.6 MB, docs/validation/2026-12-02-l2-writeback.md);
writes that grow with the rounds are the hot lines written back more than once.

Run:      PYTHONPATH=$PWD python3 benchmarks/l2_hot_dirty_ncu.py --out DIR
Summary:  python benchmarks/l2_hot_dirty_ncu.py --summary DIR
Writes DIR/l2_hot_dirty.csv (raw ncu CSV, one launch per case, in CASES order) and DIR/cases.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_shared_ncu import summary as measured  # noqa: E402
from ncu_self_profile import main_or_summary  # noqa: E402

MB = 10 ** 6
#: (hot bytes H, output bytes W, source bytes S, rounds)
CASES = ([(h * MB, w * MB, s * MB, 64) for s in (0, 256) for w in (8, 24) for h in (0, 2, 8, 16)]
         + [(8 * MB, 24 * MB, 256 * MB, r) for r in (16, 256)] + [(2 * MB, 8 * MB, 256 * MB, r) for r in (16, 256)])
METRICS = ["dram__bytes_write.sum", "dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
           "gpu__time_duration.sum"]
SOURCE = r"""
extern "C" __global__ void hot_dirty(int4* __restrict__ hot, unsigned long long n_hot, int4* __restrict__ out,
                                     unsigned long long n_out, const int4* __restrict__ src, unsigned long long n_src,
                                     int rounds, int4* __restrict__ sink) {
    unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long per_out = (n_out + rounds - 1) / rounds, per_src = (n_src + rounds - 1) / rounds;
    int acc = 0;
    for (int r = 0; r < rounds; ++r) {
        for (unsigned long long i = tid; i < n_hot; i += stride) hot[i] = make_int4(r, (int)i, 0, 1);
        unsigned long long lo = r * per_out, hi = min(n_out, lo + per_out);
        for (unsigned long long i = lo + tid; i < hi; i += stride) out[i] = make_int4((int)i, r, 2, 3);
        lo = r * per_src; hi = min(n_src, lo + per_src);
        for (unsigned long long i = lo + tid; i < hi; i += stride) { int4 v = __ldcg(src + i); acc ^= v.x ^ v.w; }
    }
    if (acc == 0x5eed1234) sink[0] = make_int4(acc, 0, 0, 0);
}
"""


def run_target() -> None:
    import cupy as cp

    kernel = cp.RawKernel(SOURCE, "hot_dirty")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    sink = cp.zeros(4, dtype=cp.int32)
    src = cp.ones(max(s for _, _, s, _ in CASES) // 4, dtype=cp.int32)
    for hot_b, out_b, src_b, rounds in CASES:
        hot, out = cp.empty(max(hot_b, 16) // 4, dtype=cp.int32), cp.empty(out_b // 4, dtype=cp.int32)
        kernel((sms * 4,), (256,), (hot, cp.uint64(hot_b // 16), out, cp.uint64(out_b // 16), src,
                                    cp.uint64(src_b // 16), cp.int32(rounds), sink))
        cp.cuda.Device().synchronize()
        del hot, out


def summary(raw_dir: str) -> str:
    lines = ["| H (MB) | W (MB) | S (MB) | rounds | L2 writes (MB) | DRAM written (MB) | DRAM read (MB) |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for case, got in measured(raw_dir, "l2_hot_dirty.csv"):
        lines.append(f"| {case['hot'] / MB:g} | {case['out'] / MB:g} | {case['src'] / MB:g} | {case['rounds']} "
                     f"| {got.get('lts__t_sectors_srcunit_tex_op_write.sum', 0):.1f} "
                     f"| {got['dram__bytes_write.sum']:.2f} | {got['dram__bytes_read.sum']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    main_or_summary(summary, __file__, __doc__, run_target, "regex:hot_dirty", METRICS, "l2_hot_dirty.csv",
                    "cases.json", {"cases": [{"hot": h, "out": w, "src": s, "rounds": r} for h, w, s, r in CASES],
                                   "grid": "4 x SMs", "block": 256})


if __name__ == "__main__":
    main()
