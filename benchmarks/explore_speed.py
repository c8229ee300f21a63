"""Speed of a large explore sweep with the L2 model on (issue 13, item 5: "a 10⁴-configuration
explore with the L2 model on finishes in ≤ 5 s on 2 cores").

The sweep: FA2's forward on the h100-sxm profile, N = 1,024 … 131,072 (8 powers of two) ×
d = 64, 128, every tile of the tensor-core grid at each point (677 at d = 64, 370 at d = 128:
8,376 configurations), ranked by time with the L2 model (objective ``time``, ``cache=True``),
``--jobs`` processes. Prints the configurations, the L2 replays the ranking took, and the
time (median of ``--repeats``).

Run:  python benchmarks/explore_speed.py [--jobs 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from machine import machine  # benchmarks/machine.py (this script's folder is on sys.path)

from iosim import Problem
from iosim.studies.explore import explore_points

SEQ_LENS = [1 << k for k in range(10, 18)]
HEAD_DIMS = [64, 128]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(machine())
    problems = [Problem(seq_len=n, head_dim=d) for n in SEQ_LENS for d in HEAD_DIMS]
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        results = explore_points("h100-sxm", ["fa2"], problems, objective="time", cache=True, jobs=args.jobs,
                                 progress=False)
        times.append(time.perf_counter() - start)
    configs = sum(len(r.candidates) for r in results)
    replays = sum(sum(c.replayed for c in r.candidates) for r in results)
    print(f"{len(problems)} points, {configs:,} configurations, {replays} L2 replays, --jobs {args.jobs}: "
          f"median {statistics.median(times):.1f} s (min {min(times):.1f}, max {max(times):.1f}); "
          f"{1000 * statistics.median(times) / configs:.2f} ms a configuration")


if __name__ == "__main__":
    main()
