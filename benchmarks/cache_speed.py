"""Speed of the L2 model: an fa2 forward of N = 16,384, d = 128, 16 heads in under 10 s on
the 2-core development machine (issue 6), and many heads at about the cost of a few
(issue 13: B = 32 × H = 64 heads extended from a few periods of the launch pattern,
iosim/models/cache/periodic.py).

Run:  python benchmarks/cache_speed.py
"""

from __future__ import annotations

import os
import platform
import time

from iosim import Options, Problem, load_profile, simulate


def main() -> None:
    profile = load_profile("h200")
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs")
    cases = [
        ("fa2 forward N=16384 d=128 16 heads, 128×64", "< 10 s", dict(
            problem=Problem(seq_len=16384, head_dim=128, heads=16), blocks=(128, 64))),
        ("fa2 forward same, causal", "—", dict(
            problem=Problem(seq_len=16384, head_dim=128, heads=16, causal=True), blocks=(128, 64))),
        ("fa2 forward N=8192 d=128 16 heads, 128×64", "—", dict(
            problem=Problem(seq_len=8192, head_dim=128, heads=16), blocks=(128, 64))),
        ("fa2 forward N=8192 d=128 32×64 heads, 128×64", "≈ 16 heads", dict(
            problem=Problem(seq_len=8192, head_dim=128, batch=32, heads=64), blocks=(128, 64))),
        ("flash-attn-2 kernel fwd+bwd N=4096 d=128 4×32 heads", "—", dict(
            problem=Problem(seq_len=4096, head_dim=128, batch=4, heads=32), kernel="flash-attn-2",
            passes="forward+backward")),
    ]
    print("| case | target | time | DRAM read (B) | L2 hit rate |")
    print("|---|---|---|---|---|")
    for name, target, kw in cases:
        start = time.perf_counter()
        r = simulate(profile, "fa2", kw["problem"], passes=kw.get("passes", "forward"), blocks=kw.get("blocks"),
                     options=Options(cache=True, kernel=kw.get("kernel")))
        took = time.perf_counter() - start
        s = r.cache.total
        print(f"| {name} | {target} | {took:.2f} s | {s.dram_read_bytes:,} | {100 * s.hit_rate:.1f}% |", flush=True)


if __name__ == "__main__":
    main()
