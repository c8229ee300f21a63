"""What a missed sector costs in DRAM reads, for loads and for reductions (device machine only;
the table runs anywhere).

The L2's counters on flash-attn's backwards (docs/validation/2026-12-04-lines.md, "Where the
reads come from") show DRAM reads that no SM read and no reduction missed, about 0.6-1.0 of
the bytes of the reductions' missed sectors (dQaccum's fp32 atomics). Does a missed sector
cost its 32 bytes, or the 64-byte DRAM unit that holds it? This kernel touches, in every
128-byte line of a cold buffer (ncu flushes the L2 before the launch), 1, 2 or 4 of its
sectors, or one sector in two 16-byte halves, by 4-byte loads (``ld.global.cg``) or by fp32
atomic adds whose value is unused (``red.global.add.f32``). ncu reports the DRAM bytes and the
L2's lookups by op.

Run:      PYTHONPATH=$PWD python3 benchmarks/l2_reductions_ncu.py --out DIR
Summary:  python benchmarks/l2_reductions_ncu.py --summary DIR
Writes DIR/l2_reductions.csv (raw ncu CSV, one launch per case, in CASES order) and DIR/cases.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_shared_ncu import summary as measured  # noqa: E402
from ncu_self_profile import main_or_summary  # noqa: E402

MB = 10 ** 6
LINES = 1 << 17                     # 16 MiB of 128-byte lines
#: (op, the byte offsets touched in each line)
CASES = [("load", (0,)), ("load", (0, 32)), ("load", (0, 32, 64, 96)), ("load", (0, 64)),
         ("red", (0,)), ("red", (0, 32)), ("red", (0, 32, 64, 96)), ("red", (0, 64)), ("red", (0, 16))]
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
           *(f"lts__t_sectors_srcunit_{src}_op_{op}_lookup_{x}.sum" for src in ("tex", "ltcfabric")
             for op in ("read", "red") for x in ("hit", "miss"))]
SOURCE = r"""
extern "C" __global__ void touch_lines(float* __restrict__ y, unsigned long long lines, const int* __restrict__ offsets,
                                       int n_offsets, int reduce, float* __restrict__ sink) {
    unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    float acc = 0.f;
    for (unsigned long long i = tid; i < lines; i += stride)
        for (int k = 0; k < n_offsets; ++k) {
            float* p = y + i * 32 + offsets[k] / 4;
            if (reduce) atomicAdd(p, 1.f); else acc += __ldcg(p);
        }
    if (acc == 1234.5f) sink[0] = acc;
}
"""


def run_target() -> None:
    import cupy as cp

    kernel = cp.RawKernel(SOURCE, "touch_lines")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    sink = cp.zeros(1, dtype=cp.float32)
    for op, offsets in CASES:
        y = cp.zeros(LINES * 32, dtype=cp.float32)
        off = cp.asarray(offsets, dtype=cp.int32)
        kernel((sms * 8,), (256,), (y, cp.uint64(LINES), off, cp.int32(len(offsets)), cp.int32(op == "red"), sink))
        cp.cuda.Device().synchronize()
        del y


def summary(raw_dir: str) -> str:
    lines = ["| op | bytes touched in each line | sectors a line | DRAM read (MB) | bytes a line | "
             "missed sectors (MB) | DRAM read ÷ missed |", "|---|---|---:|---:|---:|---:|---:|"]
    for case, got in measured(raw_dir, "l2_reductions.csv"):
        op = "read" if case["op"] == "load" else "red"
        missed = sum(got.get(f"lts__t_sectors_srcunit_{s}_op_{op}_lookup_miss.sum", 0) for s in ("tex", "ltcfabric"))
        read = got["dram__bytes_read.sum"]
        sectors = len({o // 32 for o in case["offsets"]})
        lines.append(f"| {case['op']} | {', '.join(f'{o}-{o + 3}' for o in case['offsets'])} | {sectors} | {read:.2f} "
                     f"| {read * MB / case['lines']:.1f} | {missed:.2f} | {read / max(missed, 1e-9):.2f} |")
    return "\n".join(lines)


def main() -> None:
    main_or_summary(summary, __file__, __doc__, run_target, "regex:touch_lines", METRICS, "l2_reductions.csv",
                    "cases.json", {"cases": [{"op": op, "offsets": list(o), "lines": LINES} for op, o in CASES],
                                   "grid": "8 x SMs", "block": 256})


if __name__ == "__main__":
    main()
