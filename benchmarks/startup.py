"""Start-up time of the command line (issue 15: `iosim --help` and `iosim profiles` in ≤ 0.2 s).

Each command runs as a fresh process ``--repeats`` times; the minimum and median wall times
are printed as a Markdown table.

Run:  python benchmarks/startup.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from machine import machine  # benchmarks/machine.py (this script's folder is on sys.path)

COMMANDS = (["--help"], ["--version"], ["profiles"], ["simulate", "--hw", "toy", "--algo", "fa2", "-N", "256", "-d", "16"])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=15)
    args = p.parse_args()
    print(machine("; load average {:.2f}"))
    print("| command | min | median |")
    print("|---|---|---|")
    for argv in COMMANDS:
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "iosim", *argv], stdout=subprocess.DEVNULL, check=True)
            times.append(time.perf_counter() - start)
        print(f"| iosim {' '.join(argv)} | {min(times):.3f} s | {statistics.median(times):.3f} s |", flush=True)


if __name__ == "__main__":
    main()
