"""Speed of the L2 model (issue 6: an fa2 forward of N = 16,384, d = 128, 16 heads in
under 10 s on the 2-core development machine).

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
        ("fa2 forward N=16384 d=128 16 heads, 128×64", dict(algorithm="fa2", problem=Problem(
            seq_len=16384, head_dim=128, heads=16), block_q=128, block_kv=64)),
        ("fa2 forward same, causal", dict(algorithm="fa2", problem=Problem(
            seq_len=16384, head_dim=128, heads=16, causal=True), block_q=128, block_kv=64)),
        ("flash-attn-2 kernel fwd+bwd N=4096 d=128 4×32 heads", dict(algorithm="fa2", problem=Problem(
            seq_len=4096, head_dim=128, batch=4, heads=32), kernel="flash-attn-2", passes="forward+backward")),
    ]
    print("| case | target | time | DRAM read (B) | L2 hit rate |")
    print("|---|---|---|---|---|")
    for name, kw in cases:
        start = time.perf_counter()
        r = simulate(profile, kw.pop("algorithm"), kw.pop("problem"), **kw, options=Options(cache=True))
        took = time.perf_counter() - start
        s = r.cache.total
        target = "< 10 s" if name.startswith("fa2 forward N=16384") else "—"
        print(f"| {name} | {target} | {took:.2f} s | {s.dram_read_bytes:,} | {100 * s.hit_rate:.1f}% |", flush=True)


if __name__ == "__main__":
    main()
