"""How fast a large sweep runs: ``python benchmarks/sweep_speed.py``.

The target (issue 3): 10,000 configurations, N up to 131,072, in under 10 s on the
project's 2-core machine. A configuration is one (algorithm, N, d, M) point simulated by
:func:`iosim.studies.bounds.check_bounds`, end to end: sweep, simulate, judge every claim.

Grid: algorithms standard, fa1, fa2 × N = 256 … 131,072 (10 powers of two) × d = 32, 64,
128, 256 × ``--steps`` values of M evenly spaced in log M over Theorem 2's whole regime
[d, N·d] (84 by default, so 3 × 10 × 4 × 84 ≈ 10,000; a few coincide at small N and are
dropped). Small M means small blocks and many loop iterations, so the grid covers the
slow end of the regime as often as the fast one.

It also times one simulation call on its own (the per-call floor) and one
``iosim explore`` grid, and prints the machine. Results are recorded in
docs/bounds-and-explore.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iosim import Options, Problem, load_profile, simulate  # noqa: E402
from iosim.studies.bounds import check_bounds  # noqa: E402
from iosim.studies.explore import explore  # noqa: E402
from iosim.studies.progress import default_jobs  # noqa: E402

SEQ_LENS = [2 ** k for k in range(8, 18)]           # 256 … 131,072
HEAD_DIMS = [32, 64, 128, 256]
ALGORITHMS = ["standard", "fa1", "fa2"]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs ({default_jobs()} usable), Python {platform.python_version()}"


def time_sweep(profile, steps: int, jobs: int | None) -> tuple[float, int, int]:
    t = time.perf_counter()
    report = check_bounds(profile, ALGORITHMS, seq_lens=SEQ_LENS, head_dims=HEAD_DIMS, sram_steps=steps,
                          jobs=jobs, progress=False)
    return time.perf_counter() - t, len(report.points), report.runs


def time_calls(profile, repeat: int = 200) -> dict:
    """Seconds per simulate() call at a few shapes (median of ``repeat``)."""
    out = {}
    for label, algo, N, d, M in [("fa2, N=8,192, d=128, paper blocks (T_r=64)", "fa2", 8192, 128, 98304),
                                 ("fa2, N=131,072, d=128, paper blocks (T_r=1,024)", "fa2", 131072, 128, 98304),
                                 ("fa1, N=131,072, d=64, M=4d (T_c=131,072)", "fa1", 131072, 64, 256),
                                 ("standard, N=131,072, d=128", "standard", 131072, 128, 98304)]:
        problem = Problem(seq_len=N, head_dim=d)
        n = repeat if N * d // M < 10_000 else 10
        times = []
        for _ in range(n):
            t = time.perf_counter()
            simulate(profile, algo, problem, options=Options(sram_bytes=2 * M))
            times.append(time.perf_counter() - t)
        out[label] = statistics.median(times)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=84, help="M values per (N, d) (default 84: ~10,000 points)")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: one per core)")
    ap.add_argument("--hw", default="h100-sxm")
    args = ap.parse_args(argv)
    profile = load_profile(args.hw)
    print(f"machine: {machine()}")
    for label, s in time_calls(profile).items():
        print(f"one simulate() call, {label}: {s * 1e3:.3f} ms")
    for jobs in ([1, args.jobs or default_jobs()] if (args.jobs or default_jobs()) > 1 else [1]):
        secs, n, runs = time_sweep(profile, args.steps, jobs)
        verdict = "PASS" if n >= 10_000 and secs < 10 else ("(fewer than 10,000 points)" if n < 10_000 else "FAIL")
        print(f"bounds sweep, {n:,} configurations ({runs:,} distinct simulations), jobs={jobs}: {secs:.2f} s "
              f"({secs / n * 1e3:.3f} ms per configuration) {verdict}")
    for d in (64, 128):
        t = time.perf_counter()
        res = explore(profile, "fa2", Problem(seq_len=8192, head_dim=d), progress=False)
        print(f"explore fa2 on {args.hw}, N=8,192, d={d}: {len(res.candidates):,} candidates in "
              f"{time.perf_counter() - t:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
