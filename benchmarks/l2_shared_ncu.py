"""Does the H200's L2 hold a line twice when SMs on both sides of the chip read it? (device
machine only)

The two-partition experiment (docs/validation/2026-12-02-l2-partitions-experiment.md)
explains the long causal forwards' DRAM reads by lines cached near the SMs that read them,
so that a line read from both halves of the chip is held twice; the buffer sweep
(docs/validation/2026-12-01-l2-sweep.md) could not test it (each line read by one block).
This controls who reads: the SMs' sides are measured first (``l2_sm_sides.sides``: the SMs
that find SM 0's lines near), then one kernel of two blocks a SM reads a buffer of D bytes
four times (16-byte ``ld.global.cg``), a grid-wide barrier between passes, each pass by the
blocks of one side or of both (``PATTERNS``): every block keeps its rank among the
pass's readers, so a line is read by the same block whenever its side reads.

* ``near``: side 0 reads all four passes (one side, the sweep's case);
* ``alternate``: side 0, side 1, side 0, side 1 (every line read from both sides);
* ``both``: every block, every pass.
* ``together`` (session 55): each side's blocks read the whole buffer in every pass, both sides at
  once and in the same order, as two thread blocks of a kernel on the two sides walk the same K/V
  tiles. Held twice, it fits while D is at most P, as ``alternate``; not held near a second time
  while the home holds it, to 2P. Its sizes run to 64 MB. ``IOSIM_PATTERNS=together`` (a
  comma-separated list of patterns) runs those alone.

ncu reports DRAM bytes read and the L2's lookups by source (the SMs; the other partition
over the fabric). If a line read from both sides is held twice (and filled at its home),
``near`` and ``alternate`` fit while D is at most a partition's capacity P and ``both``
while 3D/4 is; one shared cache would fit all three to 2P. Result (2026-12-03):
docs/validation/2026-12-03-l2-shared.md.

Run:  PYTHONPATH=$PWD python3 benchmarks/l2_shared_ncu.py --out DIR
Its table, from a committed run: python benchmarks/l2_shared_ncu.py --summary DIR
Writes DIR/l2_shared.csv (raw ncu CSV, one launch per case, in CASES order) and DIR/cases.json
(with the measured sides).
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_self_profile import self_profile  # noqa: E402

MB = 10 ** 6
SIZES_MB = (8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48)
#: who reads each pass: a side (0, 1), every block (2), or each side the whole buffer (3)
PATTERNS = {"near": (0, 0, 0, 0), "alternate": (0, 1, 0, 1), "both": (2, 2, 2, 2), "together": (3, 3, 3, 3)}
SIZES_BY_PATTERN = {"together": (24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64)}
CASES = [(name, int(d * MB))
         for name in os.environ.get("IOSIM_PATTERNS", "near,alternate,both").split(",")
         for d in SIZES_BY_PATTERN.get(name, SIZES_MB)]
METRICS = ["dram__bytes_read.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "lts__t_sectors_srcunit_ltcfabric_op_read.sum",
           "lts__t_sectors_srcunit_ltcfabric_op_read_lookup_hit.sum", "gpu__time_duration.sum"]
#: the SM's id and a grid-wide barrier (every block resident), shared with l2_write_near_ncu.py
PRELUDE = r"""
__device__ __forceinline__ unsigned smid() { unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); return s; }

__device__ void grid_barrier(unsigned* arrived, unsigned target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(arrived, 1u);
        while (atomicAdd(arrived, 0u) < target) { }
    }
    __syncthreads();
}
"""
SOURCE = PRELUDE + r"""
extern "C" __global__ void shared_sweep(const int4* __restrict__ buf, unsigned long long n_vec,
                                        const int* __restrict__ side_of_sm, const int* __restrict__ pattern,
                                        int passes, unsigned* counters, int4* __restrict__ sink) {
    // counters: [0] barrier arrivals, [1], [2] blocks on side 0 and 1
    __shared__ unsigned rank_side, rank_all, count[2];
    int side = side_of_sm[smid()];
    if (threadIdx.x == 0) rank_side = atomicAdd(counters + 1 + side, 1u);
    rank_all = blockIdx.x;
    unsigned nb = gridDim.x, barrier = 0;
    grid_barrier(counters, nb * ++barrier);
    if (threadIdx.x == 0) { count[0] = atomicAdd(counters + 1, 0u); count[1] = atomicAdd(counters + 2, 0u); }
    __syncthreads();
    int acc = 0;
    for (int p = 0; p < passes; ++p) {
        int who = pattern[p];
        if (who >= 2 || who == side) {
            unsigned rank = who == 2 ? rank_all : rank_side, readers = who == 2 ? nb : count[side];
            unsigned long long stride = (unsigned long long)readers * blockDim.x;
            for (unsigned long long i = (unsigned long long)rank * blockDim.x + threadIdx.x; i < n_vec; i += stride) {
                int4 v = __ldcg(buf + i);
                acc ^= v.x ^ v.y ^ v.z ^ v.w;
            }
        }
        grid_barrier(counters, nb * ++barrier);
    }
    if (acc == 0x7fffffff) sink[0] = make_int4(acc, 0, 0, 0);
}
"""


def measured_sides(sms: int) -> list[int]:
    """Per SM: 0 when it finds SM 0's freshly read lines near (fast), else 1."""
    import cupy as cp
    import numpy as np
    from l2_sm_sides import SOURCE as WALK, sides

    rows = sides(cp.RawModule(code=WALK), sms, np.random.default_rng(0))["0"]
    hops = np.array([r["hop_ns"] for r in rows])
    return [int(h > (hops.min() + hops.max()) / 2) for h in hops]


def sided_kernel(source: str, name: str):
    """(the kernel, the SM count, each SM's side on the device, a sink): the sides measured
    and written to $IOSIM_SIDES_OUT (set by :func:`profile_sided`)."""
    import cupy as cp
    import numpy as np

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    side = measured_sides(sms)
    with open(os.environ["IOSIM_SIDES_OUT"], "w") as f:
        json.dump(side, f)
    return cp.RawKernel(source, name), sms, cp.asarray(np.array(side, np.int32)), cp.zeros(4, dtype=cp.int32)


def summary(raw_dir: str, csv_name: str) -> list[tuple[dict, dict]]:
    """(case, {metric: MB}) per launch of a committed run (sectors as 32 bytes, the time in
    µs), in ``cases.json``'s order."""
    from iosim.gpu.ncu import read_launches

    with open(os.path.join(raw_dir, "cases.json")) as f:
        cases = json.load(f)["cases"]
    with open(os.path.join(raw_dir, csv_name)) as f:
        launches = read_launches(f.read())
    def scaled(metric: str, value: float) -> float:
        return value * 32 / MB if "sectors" in metric else value / 1e3 if "duration" in metric else value / MB
    return [(case, {m: scaled(m, v) for m, v in launch["metrics"].items()}) for case, launch in zip(cases, launches)]


def sequence_table(found: list[dict], names, first: str, second: str) -> str:
    """A markdown table of ``found`` (rows with ``sequence`` and ``c_mb``): a line per size of C, a column per
    sequence in ``names``, each cell its ``first`` / ``second`` figure."""
    lines = ["| C (MB) | " + " | ".join(names) + " |", "|---:|" + "---:|" * len(names)]
    for c in sorted({r["c_mb"] for r in found}):
        cells = {r["sequence"]: r for r in found if r["c_mb"] == c}
        lines.append(f"| {c:g} | " + " | ".join(f"{cells[n][first]:.1f} / {cells[n][second]:.1f}" for n in names) + " |")
    return "\n".join(lines)


def print_summary(raw_dir: str, csv_name: str) -> None:
    """One line per case: the case, then each metric in MB (time in µs)."""
    for case, got in summary(raw_dir, csv_name):
        print(" ".join(f"{k}={v}" for k, v in case.items() if k != "passes"), "|",
              " ".join(f"{m.split('__', 1)[1].removesuffix('.sum')}={v:.1f}" for m, v in sorted(got.items())))


def profile_sided(script: str, doc: str, run_target, name: str, metrics: list[str], csv_name: str,
                  cases: list[dict]) -> None:
    """:func:`ncu_self_profile.self_profile` of ``script``'s kernel ``name`` on 2 blocks an
    SM, with OUT/sides.json beside the CSV and OUT/cases.json; with ``--summary DIR``, a
    committed run's table instead (:func:`print_summary`)."""
    if "--summary" in sys.argv:
        return print_summary(sys.argv[sys.argv.index("--summary") + 1], csv_name)
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else "."
    os.environ.setdefault("IOSIM_SIDES_OUT", os.path.join(os.path.abspath(out), "sides.json"))
    self_profile(script, doc, run_target, f"regex:{name}", metrics, csv_name, "cases.json",
                 {"cases": cases, "grid": "2 x SMs", "block": 256})


def run_target() -> None:
    import cupy as cp
    import numpy as np

    kernel, sms, side_dev, sink = sided_kernel(SOURCE, "shared_sweep")
    for name, size in CASES:
        buf = cp.zeros(size // 4, dtype=cp.int32)
        counters = cp.zeros(3, dtype=cp.uint32)
        pattern = cp.asarray(np.array(PATTERNS[name], np.int32))
        kernel((sms * 2,), (256,), (buf, cp.uint64(size // 16), side_dev, pattern, cp.int32(len(PATTERNS[name])),
                                    counters, sink))
        cp.cuda.Device().synchronize()
        del buf


def main() -> None:
    unknown = {name for name, _ in CASES} - set(PATTERNS)
    if unknown:
        print(f"l2_shared_ncu: IOSIM_PATTERNS names no pattern {sorted(unknown)} (known: {', '.join(PATTERNS)})",
              file=sys.stderr)
        sys.exit(2)
    profile_sided(__file__, __doc__, run_target, "shared_sweep", METRICS, "l2_shared.csv",
                  [{"pattern": n, "bytes": s, "passes": PATTERNS[n]} for n, s in CASES])


if __name__ == "__main__":
    main()
