"""Speed of iosim's counting and numeric modes (issue 2's targets).

Targets: counting mode evaluates fa2 at N = 131,072, d = 128, B_r = 128, B_c = 64 in
under 0.5 s, and the same with --batch 8 --heads 32 in about the same time, forward and
backward; numeric mode runs N = 4,096, d = 64 in under 10 s. Issue 13 (item 4): causal
counting at N = 1,048,576 in at most 10 ms, forward and backward, FA1 and FA2 (the L2
model off, as ``simulate`` has it by default).

Run:  python benchmarks/counting_speed.py      (prints a Markdown table)
Each case runs ``repeats`` times after one warm-up; the table shows the median.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time

import numpy as np

from iosim import Options, Problem, load_profile, simulate


def timed(fn, repeats: int = 5) -> float:
    fn()  # warm-up: imports, first-call caches
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cases(profile):
    big = dict(seq_len=131_072, head_dim=128)
    yield "count fa2 N=131072 d=128 128×64", "< 0.5 s", lambda: simulate(profile, "fa2", Problem(**big), blocks=(128, 64))
    yield "count fa2 same, batch 8 × heads 32", "≈ the above", lambda: simulate(profile, "fa2", Problem(**big, batch=8, heads=32), blocks=(128, 64))
    yield "count fa2 same, causal", "—", lambda: simulate(profile, "fa2", Problem(**big, causal=True), blocks=(128, 64))
    yield "count fa1 same, causal", "—", lambda: simulate(profile, "fa1", Problem(**big, causal=True), blocks=(128, 64))
    yield "count fa1 N=131072 paper blocks", "—", lambda: simulate(profile, "fa1", Problem(**big))
    for algo in ("fa1", "fa2"):
        yield f"count {algo} backward N=131072 d=128 128×64", "< 0.5 s", lambda a=algo: simulate(profile, a, Problem(**big), blocks=(128, 64), passes="backward")
        yield f"count {algo} backward same, batch 8 × heads 32", "≈ the above", lambda a=algo: simulate(profile, a, Problem(**big, batch=8, heads=32), blocks=(128, 64), passes="backward")
    yield "count fa2 backward same, causal", "—", lambda: simulate(profile, "fa2", Problem(**big, causal=True), blocks=(128, 64), passes="backward")
    yield "count flash-attn-2 kernel fwd+bwd N=131072 d=128", "—", lambda: simulate(profile, "fa2", Problem(**big), passes="forward+backward", options=Options(kernel="flash-attn-2"))
    # Issue 13, item 4: causal counting at constant cost (affine groups of query blocks).
    million = dict(seq_len=1_048_576, head_dim=128, causal=True)
    for algo in ("fa2", "fa1"):
        for passes in ("forward", "backward"):
            yield f"count {algo} {passes} N=1048576 d=128 128×64, causal", "≤ 10 ms", lambda a=algo, p=passes: simulate(profile, a, Problem(**million), blocks=(128, 64), passes=p)
    yield "count fa2 forward N=1048576 causal, batch 8 × heads 32", "≤ 10 ms", lambda: simulate(profile, "fa2", Problem(**million, batch=8, heads=32), blocks=(128, 64))
    yield "flash-attn-2 kernel fwd+bwd N=131072 causal, B·H=256 (kernel time model)", "—", lambda: simulate(profile, "fa2", Problem(seq_len=131_072, head_dim=128, causal=True, batch=8, heads=32), passes="forward+backward", options=Options(kernel="flash-attn-2"))
    small = Problem(seq_len=4096, head_dim=64)
    for algo in ("standard", "fa1", "fa2"):
        yield f"numeric {algo} N=4096 d=64 (paper blocks)", "< 10 s", lambda a=algo: simulate(profile, a, small, mode="numeric")


def main() -> None:
    profile = load_profile("h100-sxm")
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, numpy {np.__version__}")
    print()
    print("| case | target | median time |")
    print("|---|---|---|")
    for name, target, fn in cases(profile):
        repeats = 1 if name.startswith("numeric") else 5
        print(f"| {name} | {target} | {timed(fn, repeats):.4f} s |", flush=True)


if __name__ == "__main__":
    main()
