"""Does a stream of lines used once push out lines used more than once in the H200's L2?
(scan resistance; device machine only, the table runs anywhere)

An LRU cache loses a buffer A to any stream C that, with A, exceeds its room, however often
A was used before; caches with an insertion policy that protects re-used lines (RRIP and its
kind) keep A and let C push out its own lines. The flash kernels mix both: the forward re-reads
K and V while Q streams in and O streams out, the backward re-reads Q and dO while dK and dV
stream out. The blocks on side 0 (the SMs near one L2 partition, about 30 MB) read A (10 MB)
once, twice or four times, then read or write C (16-96 MB, each line once), then read A
again; a grid-wide barrier between phases (the kernel of ``l2_policy_ncu.py``). The DRAM
bytes read beyond the first reads of A and a read C are the lines of A lost near and homed on
side 0 (the other half of A is held at its home on side 1): 0 where A was kept, about 5 MB
where it was lost whole.

Run:      PYTHONPATH=$PWD python3 benchmarks/l2_scan_ncu.py --out DIR
Summary:  python benchmarks/l2_scan_ncu.py --summary DIR    (every counter, per case)
Table:    python benchmarks/l2_scan_ncu.py --table DIR      (A's last read: near hits / DRAM beyond)
Writes DIR/l2_scan.csv (raw ncu CSV, one launch per case, in CASES order), DIR/cases.json
and DIR/sides.json.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2_policy_ncu import A, C, METRICS, READ, SOURCE, WRITE  # noqa: E402
from l2_shared_ncu import profile_sided, sided_kernel  # noqa: E402

MB = 10 ** 6
#: name -> phases (buffer, op), all by side 0
SEQUENCES = {
    "once": ((A, READ), (C, READ), (A, READ)),
    "twice": ((A, READ), (A, READ), (C, READ), (A, READ)),
    "four times": ((A, READ),) * 4 + ((C, READ), (A, READ)),
    "twice, C written": ((A, READ), (A, READ), (C, WRITE), (A, READ)),
}
A_BYTES, C_MB = 10 * MB, (16, 24, 32, 48, 96)
CASES = [(name, c * MB) for c in C_MB for name in SEQUENCES]


def run_target() -> None:
    import cupy as cp
    import numpy as np

    kernel, sms, side_dev, sink = sided_kernel(SOURCE, "policy")
    unused = cp.zeros(A_BYTES // 4, dtype=cp.int32)   # the kernel's buffer B, which no phase names
    for name, c in CASES:
        a, cc = cp.zeros(A_BYTES // 4, dtype=cp.int32), cp.zeros(c // 4, dtype=cp.int32)
        phases = cp.asarray(np.array(SEQUENCES[name], np.int32).ravel())
        counters = cp.zeros(3, dtype=cp.uint32)
        kernel((sms * 2,), (256,), (a, unused, cc, cp.uint64(A_BYTES // 16), cp.uint64(c // 16), phases,
                                    cp.int32(len(SEQUENCES[name])), side_dev, counters, sink))
        cp.cuda.Device().synchronize()
        del a, cc


def table(raw_dir: str) -> list[dict]:
    """Per case: A's last read, its near hits (the launch's near hits less the earlier repeated
    reads of A, each of which hits whole: A alone fits) and the DRAM bytes read beyond the
    first reads of A and of a read C, in MB."""
    from l2_shared_ncu import summary

    out = []
    for case, got in summary(raw_dir, "l2_scan.csv"):
        phases = [tuple(p) for p in case["phases"]]
        a_reads, c_read = phases.count((A, READ)), (C, READ) in phases
        a_mb, c_mb = case["a_bytes"] / MB, case["c_bytes"] / MB
        out.append({"sequence": case["sequence"], "c_mb": c_mb,
                    "near_hits": got["lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"] - a_mb * (a_reads - 2),
                    "dram_beyond": got["dram__bytes_read.sum"] - a_mb - (c_mb if c_read else 0)})
    return out


def markdown(raw_dir: str) -> str:
    from l2_shared_ncu import sequence_table
    return sequence_table(table(raw_dir), list(SEQUENCES), "near_hits", "dram_beyond")


def main() -> None:
    if "--table" in sys.argv:
        print(markdown(sys.argv[sys.argv.index("--table") + 1]))
        return
    profile_sided(__file__, __doc__, run_target, "policy", METRICS, "l2_scan.csv",
                  [{"sequence": n, "a_bytes": A_BYTES, "c_bytes": c, "phases": SEQUENCES[n]} for n, c in CASES])


if __name__ == "__main__":
    main()
