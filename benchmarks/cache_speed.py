"""Speed of the L2 model (issue 13's targets): FA2's forward pass with the flash-attn-2
preset's tiles (128 × 64 at d = 128) on the H200 profile, N = 16,384 with 16 heads in
≤ 50 ms, N = 131,072 in ≤ 1 s, and B = 32 × H = 64 heads about as fast as 16; a causal and
a forward+backward case for reference. Each case is the whole `simulate` call (counting,
recording, the L2 model, the time model); median of ``--repeats`` runs after a warm-up.
``--long``: instead, the long causal plays whose two partitions take several turns
(docs/performance.md, session 50), one run each, no warm-up (16-40 s each on the 2-core
development machine).

Run:  python benchmarks/cache_speed.py [--repeats 3] [--long]
"""

from __future__ import annotations

import argparse
import statistics
import time

from machine import machine  # benchmarks/machine.py (this script's folder is on sys.path)

from iosim import Options, Problem, load_profile, simulate

CASES = [
    ("fa2 fwd N=16384 d=128 16 heads", "≤ 50 ms", Problem(seq_len=16384, head_dim=128, heads=16), "forward"),
    ("fa2 fwd N=131072 d=128 16 heads", "≤ 1 s", Problem(seq_len=131072, head_dim=128, heads=16), "forward"),
    ("fa2 fwd N=8192 d=128 16 heads", "—", Problem(seq_len=8192, head_dim=128, heads=16), "forward"),
    ("fa2 fwd N=8192 d=128 B=32 × H=64", "≈ 16 heads", Problem(seq_len=8192, head_dim=128, batch=32, heads=64),
     "forward"),
    ("fa2 fwd N=16384 d=128 16 heads, causal", "—", Problem(seq_len=16384, head_dim=128, heads=16, causal=True),
     "forward"),
    ("fa2 fwd+bwd N=4096 d=128 B=4 × H=32", "—", Problem(seq_len=4096, head_dim=128, batch=4, heads=32),
     "forward+backward"),
    # GQA backwards whose dK, dV rows share lines (docs/validation/2026-12-04-lines.md)
    ("fa2 bwd N=32768 d=72 B=2 × H=16 on 4", "—", Problem(seq_len=32768, head_dim=72, batch=2, heads=16, kv_heads=4),
     "backward"),
    ("fa2 bwd decode N_kv=12345 d=40 B=8 × H=32 on 8", "—",
     Problem(seq_len_q=1, seq_len_kv=12345, head_dim=40, batch=8, heads=32, kv_heads=8), "backward"),
    # (B, N, H, d) rows read at 8 offsets in a line, the most classes (docs/validation/2026-12-07-s52-device.md)
    ("fa2 fwd+bwd N=16384 d=40 B=4 × H=3, (B, N, H, d)", "—",
     Problem(seq_len=16384, head_dim=40, batch=4, heads=3, layout="bnhd"), "forward+backward"),
]

#: long causal forwards played whole, each partition several turns (name, problem, Options.cache):
#: the default run just under the default budget, and the ``--cache`` one just past it
LONG_CASES = [
    ("fa2 fwd N=63000 d=128 8 heads, causal (default)", Problem(seq_len=63000, head_dim=128, heads=8, causal=True),
     "auto"),
    ("fa2 fwd N=65536 d=128 8 heads, causal (--cache)", Problem(seq_len=65536, head_dim=128, heads=8, causal=True),
     True),
]


def long_plays(profile) -> None:
    print("| case | time | DRAM read (B) |")
    print("|---|---|---|")
    for name, problem, cache in LONG_CASES:
        start = time.perf_counter()
        r = simulate(profile, "fa2", problem, passes="forward", options=Options(cache=cache, kernel="flash-attn-2"))
        print(f"| {name} | {time.perf_counter() - start:.1f} s | {r.cache.total.dram_read_bytes:,} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--long", action="store_true", help="time the long causal plays instead")
    args = ap.parse_args()
    profile = load_profile("h200")
    print(machine(load=None))
    if args.long:
        return long_plays(profile)
    print("| case | target | median time | DRAM read (B) | L2 hit rate |")
    print("|---|---|---|---|---|")
    for name, target, problem, passes in CASES:
        times = []
        for _ in range(args.repeats + 1):
            start = time.perf_counter()
            r = simulate(profile, "fa2", problem, passes=passes, options=Options(cache=True, kernel="flash-attn-2"))
            times.append(time.perf_counter() - start)
        s = r.cache.total
        took = statistics.median(times[1:])
        shown = f"{1000 * took:.0f} ms" if took < 1 else f"{took:.2f} s"
        print(f"| {name} | {target} | {shown} | {s.dram_read_bytes:,} | {100 * s.hit_rate:.1f}% |", flush=True)


if __name__ == "__main__":
    main()
