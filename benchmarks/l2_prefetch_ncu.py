"""What a load that misses the L2 reads from DRAM, by the load's kind: a plain load, and cp.async with
and without its L2 prefetch hint (device machine only; the table runs anywhere).

A plain load that misses reads the 64-byte DRAM unit that holds its sector
(docs/validation/2026-12-04-reductions.md). flash-attn 2 loads Q, K, V (and dO in its main backward)
with ``cp.async.cg.shared.global.L2::128B`` (CuTe's ``SM80_CP_ASYNC_CACHEGLOBAL``; SASS
``LDGSTS.E.BYPASS.LTC128B``), whose hint lets the L2 fetch the whole 128-byte line. This kernel reads
one 32-byte sector (two 16-byte chunks, or one) at the start of every ``stride``-th 128-byte line of a
cold 256 MiB buffer (ncu flushes the L2 before each launch), by ``ld.global.cg`` or by ``cp.async.cg``
with no hint or the hint of 64, 128 or 256 bytes, and ncu reports the DRAM bytes read.

Run:      PYTHONPATH=$PWD python3 benchmarks/l2_prefetch_ncu.py --out DIR
Summary:  python benchmarks/l2_prefetch_ncu.py --summary DIR
Writes DIR/l2_prefetch.csv (raw ncu CSV, one launch per case, in CASES order) and DIR/cases.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_shared_ncu import summary as measured  # noqa: E402
from ncu_self_profile import main_or_summary  # noqa: E402

MB = 10 ** 6
LINES = 1 << 21                     # 256 MiB of 128-byte lines
MODES = ["ld.global.cg", "cp.async.cg", "cp.async.cg .L2::64B", "cp.async.cg .L2::128B", "cp.async.cg .L2::256B"]
#: (mode, 16-byte chunks read at the start of each line read, every stride-th line)
CASES = [(m, 2, s) for s in (1, 2, 4) for m in range(len(MODES))] + [(3, 1, 2)]
METRICS = ["dram__bytes_read.sum", "gpu__time_duration.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"]
SOURCE = r"""
#define CP(hint) asm volatile("cp.async.cg.shared.global" hint " [%0], [%1], 16;\n" :: "r"(s), "l"(p) : "memory")
extern "C" __global__ void read_lines(const uint4* __restrict__ y, unsigned long long lines, int stride,
                                      int chunks, int mode, uint4* __restrict__ sink) {
    __shared__ uint4 buf[256];
    unsigned s = (unsigned)__cvta_generic_to_shared(&buf[threadIdx.x]);
    unsigned long long total = lines / stride * chunks;
    unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += step) {
        const uint4* p = y + (t / chunks) * stride * 8 + t % chunks;
        if (mode == 0) acc ^= __ldcg(p).x;
        else if (mode == 1) CP("");
        else if (mode == 2) CP(".L2::64B");
        else if (mode == 3) CP(".L2::128B");
        else CP(".L2::256B");
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    if (acc == 0x12345678u) sink[0] = buf[threadIdx.x];
}
"""


def run_target() -> None:
    import cupy as cp

    kernel = cp.RawKernel(SOURCE, "read_lines")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    y = cp.zeros(LINES * 32, dtype=cp.uint32)
    sink = cp.zeros(4, dtype=cp.uint32)
    for mode, chunks, stride in CASES:
        kernel((sms * 8,), (256,), (y, cp.uint64(LINES), cp.int32(stride), cp.int32(chunks), cp.int32(mode), sink))
        cp.cuda.Device().synchronize()


def summary(raw_dir: str) -> str:
    """Per case: the DRAM bytes over the lines the kernel asked for, and over the read requests (sectors) the L2
    saw, which is the measure of what one request that misses fetches (the L2 saw fewer cp.async requests than
    lines asked for: docs/validation/2026-12-07-line-fetch.md)."""
    lines = ["| load | bytes read at each line's start | every n-th line | lines asked for | L2 read requests | "
             "DRAM read (MB) | bytes a line asked for | bytes an L2 request |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for case, got in measured(raw_dir, "l2_prefetch.csv"):
        n = case["lines"] // case["stride"]
        read, asked = got["dram__bytes_read.sum"], got["lts__t_sectors_srcunit_tex_op_read.sum"] * MB / 32
        lines.append(f"| {MODES[case['mode']]} | {16 * case['chunks']} | {case['stride']} | {n:,} | {asked:,.0f} "
                     f"| {read:.2f} | {read * MB / n:.1f} | {read * MB / asked:.1f} |")
    return "\n".join(lines)


def main() -> None:
    main_or_summary(summary, __file__, __doc__, run_target, "regex:read_lines", METRICS, "l2_prefetch.csv",
                    "cases.json", {"cases": [{"mode": m, "chunks": c, "stride": s, "lines": LINES}
                                             for m, c, s in CASES], "grid": "8 x SMs", "block": 256})


if __name__ == "__main__":
    main()
