"""Numeric mode on a busy machine: the BLAS on one thread (what iosim does) against the BLAS's
own thread count (issue 15: a threaded OpenBLAS made a run 50× slower when other processes
kept the cores busy).

Run:  python benchmarks/numeric_threads.py [--busy K] [--repeats 3]

``--busy K`` starts K processes that spin on the CPU for the whole run (default: one per
core), so the BLAS's threads must wait for a core, as on a shared machine.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import statistics
import time

from threadpoolctl import threadpool_info, threadpool_limits

from iosim import Problem, simulate
from iosim.run import launches


def spin(stop) -> None:
    while not stop.is_set():
        pass


def run_once() -> float:
    start = time.perf_counter()
    simulate("fa-paper-a100", "fa2", Problem(seq_len=4096, head_dim=64), blocks=(64, 64), mode="numeric")
    return time.perf_counter() - start


def alternate(repeats: int) -> tuple[float, float]:
    """Median times (BLAS on one thread, BLAS on its default threads), the two interleaved
    run by run so that the machine's drift falls on both alike."""
    one, default = [], []
    pinned = launches.threadpool_limits
    for _ in range(repeats):
        one.append(run_once())
        launches.threadpool_limits = lambda **_: threadpool_limits(limits=None)   # the BLAS's own count
        try:
            default.append(run_once())
        finally:
            launches.threadpool_limits = pinned
    return statistics.median(one), statistics.median(default)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--busy", type=int, default=os.cpu_count())
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    blas = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs; BLAS threads by default: {blas}; "
          f"{args.busy} busy processes")
    stop = multiprocessing.Event()
    workers = [multiprocessing.Process(target=spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for w in workers:
        w.start()
    try:
        run_once()                                                # warm-up
        one, default = alternate(args.repeats)
    finally:
        stop.set()
        for w in workers:
            w.join()
    print("| FA2 numeric, N = 4,096, d = 64, 64 × 64 | median |")
    print("|---|---|")
    print(f"| BLAS on one thread (iosim) | {one:.2f} s |")
    print(f"| BLAS on its default threads | {default:.2f} s |")


if __name__ == "__main__":
    main()
