"""How does the LSU's load counter count 16-byte cp.async with zero-filled lanes? A probe for
cuDNN's decode kernel at head dims that are no multiple of 16 (docs/validation/2026-12-06-cudnn-odd.md).

cuDNN's sm80 decode kernel loads a 128-row tile of K or V, padded to 64 (or 128) columns, with
``LDGSTS.E.BYPASS.128``: a warp's instruction covers 4 consecutive rows × 8 pieces of 16 bytes
(lane t: piece 2 ⌊t / 8⌋ + t mod 2 of row ⌊t / 2⌋ mod 4), every lane on, the pieces past the row's
2d bytes zero-filled (the src-size operand 0). Nsight Compute's source counters reproduce that
layout; the LSU's byte counter (``l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum``) reads more than the
ideal and less than those theoretical sectors. This probe runs the same layout over rows of
``pitch`` bytes, one kernel launch a variant, for ncu to count:

* ``nominal``: zero-filled lanes keep their piece's address (row start + 16 j), as a tile loader
  computes it before the predicate;
* ``rowstart``: zero-filled lanes point at their row's start;
* ``off``: zero-filled lanes do not issue (predicated off);
* ``rowmajor``: lane t takes piece t mod 8 of row ⌊t / 8⌋, zero fills at their nominal address.

    PYTHONPATH=$PWD ncu --csv --metrics METRICS python3 benchmarks/ldgsts_zfill_probe.py --run > out.csv   # on a GPU
    python benchmarks/ldgsts_zfill_probe.py --summary out.csv

The summary prints, per launch, the counter's sectors a warp instruction against iosim's rule
(``iosim.gpu.cudnn_lsu.run_bytes``), and exits 1 where one differs. The second part of ``--run`` puts
every group of 4 rows at one offset from a 512-byte boundary (0, 16, ..., 496), for each pitch.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import os
import sys

VARIANTS = ("nominal", "rowstart", "off", "rowmajor")
#: pitches played with every group of 4 rows at the same offset from a 512-byte boundary (``--run``'s second part)
OFFSET_PITCHES = (80, 112, 144, 176, 208, 240)
#: (pitch: 2d bytes at d = 40, 48, 56, 64, 72, 88; the instruction's first column byte: 128 for a tile's second 64 columns)
PITCHES = ((80, 0), (96, 0), (112, 0), (128, 0), (144, 0), (144, 128), (176, 128))
BLOCKS, REPS, WARPS = 132, 8, 4
METRICS = ("l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
           "smsp__sass_data_bytes_mem_global_op_ldgsts.sum", "smsp__inst_executed_op_ldgsts.sum")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SOURCE = r"""
extern "C" __global__ void probe(const char* __restrict__ g, int pitch, int col0, int variant, long gstride, int base) {
    __shared__ __align__(16) char tile[REPS * 128 * 16];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int it = 0; it < REPS; ++it) {
        const long group = ((long)blockIdx.x * REPS + it) * WARPS + warp;     // 4 rows a warp instruction
        int row, piece;
        if (variant == 3) { row = lane / 8; piece = lane % 8; }
        else { row = (lane / 2) % 4; piece = 2 * (lane / 8) + lane % 2; }
        const long r = group * 4 + row;
        const int valid = col0 + 16 * piece < pitch ? 16 : 0;
        // rows of a group at `pitch`; groups at `gstride` (0: the rows run on, 4 · pitch apart) from `base`
        const char* rs = g + base + (gstride ? group * gstride + row * pitch : r * pitch);
        const char* src = rs + col0 + 16 * piece;
        if (variant == 1 && !valid) src = rs;
        const unsigned dst = (unsigned)__cvta_generic_to_shared(tile + 16 * (threadIdx.x + 128 * it));
        if (variant == 2 && !valid) continue;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(valid));
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}
"""


def run() -> None:
    import cupy as cp
    kernel = cp.RawKernel(SOURCE.replace("REPS", str(REPS)).replace("WARPS", str(WARPS)), "probe")
    rows = BLOCKS * REPS * WARPS * 4
    buf = cp.zeros(rows // 4 * 1024 + 4096, dtype=cp.uint8)        # the groups at 1,024 bytes, the widest
    for variant in range(len(VARIANTS)):
        for pitch, col0 in PITCHES:
            kernel((BLOCKS,), (32 * WARPS,), (buf, cp.int32(pitch), cp.int32(col0), cp.int32(variant), cp.int64(0),
                                              cp.int32(0)))
    for pitch in OFFSET_PITCHES:                  # every group at one offset from a 512-byte boundary
        for base in range(0, 512, 16):
            kernel((BLOCKS,), (32 * WARPS,), (buf, cp.int32(pitch), cp.int32(0), cp.int32(0), cp.int64(1024),
                                              cp.int32(base)))
    cp.cuda.Device().synchronize()


def _rule(pitch: int, col0: int, groups) -> float:
    """iosim's rule (:func:`iosim.gpu.cudnn_lsu.run_bytes`): sectors a warp instruction, averaged over
    the groups of 4 rows starting at the bytes ``groups``."""
    import numpy as np
    from iosim.gpu.cudnn_lsu import run_bytes
    n = min(128, max(0, pitch - col0))
    starts = np.asarray(groups, np.int64)[:, None] + np.arange(4) * pitch + col0
    return float(run_bytes(starts, n).sum()) / 32 / len(groups)


def _launches(path: str) -> list[dict]:
    """Per launch of a ``--run`` under ncu (its CSV, gzipped or not), in order: metric -> value."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        text = f.read().splitlines()
    start = next(i for i, line in enumerate(text) if line.startswith('"ID"'))
    got: dict = {}
    for row in csv.DictReader(io.StringIO("\n".join(text[start:]))):
        if row["Metric Value"] != "n/a":                  # a metric this GPU's ncu does not have
            got.setdefault(int(row["ID"]), {})[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    return [got[k] for k in sorted(got)]


def rows(path: str) -> list[tuple]:
    """(variant, pitch, col0, base or None, measured sectors a warp instruction, the rule's) per launch."""
    launches, warps, out = _launches(path), BLOCKS * REPS * WARPS, []
    runs = [(v, p, c, None) for v in VARIANTS for p, c in PITCHES] + \
           [("nominal", p, 0, b) for p in OFFSET_PITCHES for b in range(0, 512, 16)]
    for (variant, pitch, col0, base), m in zip(runs, launches, strict=True):
        groups = range(0, 4 * pitch * warps, 4 * pitch) if base is None else [base]
        out.append((variant, pitch, col0, base, m[METRICS[0]] / warps / 32, _rule(pitch, col0, list(groups))))
    return out


def summary(path: str) -> int:
    """Print each launch, measured against the rule; the number that differ."""
    off = 0
    print("variant   pitch col0  base  LSU sectors a warp instruction  rule")
    for variant, pitch, col0, base, got, rule in rows(path):
        off += got != rule
        print(f"{variant:9} {pitch:5} {col0:4} {'-' if base is None else base:>5}  {got:30.3f}  {rule:.3f}"
              + ("" if got == rule else "  *"))
    print(f"{off} launches off the rule")
    return off


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="store_true", help="launch every variant (on a GPU, under ncu)")
    ap.add_argument("--summary", help="ncu's CSV of a --run")
    args = ap.parse_args()
    if args.run:
        run()
        return 0
    if args.summary:
        return 1 if summary(args.summary) else 0
    ap.error("give --run or --summary")


if __name__ == "__main__":
    sys.exit(main())
