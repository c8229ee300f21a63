"""The L2 model in windows (iosim/models/cache/windows.py) against the exact model, kernel by
kernel, on causal runs whose exact plans can still be played.

    python benchmarks/l2_windows_check.py [--budget 4000000] [--quick]

For each problem: the exact model (``plan(...).play()``) and the windowed estimate at
``--budget`` requests (what ``simulate`` gives a launch past every other budget: ``WINDOW_SHARE`` ×
``SAMPLE_REQUESTS``, shared among the launch's kernels), both played as ``simulate`` plays the
profile's L2 (the H200's: two partitions of hashed 16-way sets, each SM's side), every kernel
whose thread blocks have unequal lengths (on the H200 the only ones played in windows; on the
MI300X, whose Infinity Cache sits behind the L2, every kernel). Prints one line per kernel: DRAM
reads and write-backs over the exact model's (and, behind the L2, the reads reaching the Infinity
Cache), the share of the requests counted, the two halves' spread, the shortest warm-up's reach,
and the seconds each took; then the largest errors. Results: docs/cache.md ("The windows' share";
"Any length" has the one-LRU table of session 14).
"""

from __future__ import annotations

import argparse
import time

from iosim import Options, Problem, prepare
from iosim.models.cache import plan, windows
from iosim.models.cache.uniform import uniform_programs
from iosim.run import head_order, kernel_timing, launches
from iosim.run.count import count_launch

P = Problem
GRID = [
    ("forward", "flash-attn-2", P(seq_len=4096, head_dim=64, heads=64, batch=16, kv_heads=8, causal=True)),  # 1,024
    ("forward", "flash-attn-2", P(seq_len=16384, head_dim=128, heads=16, causal=True)),
    ("forward", "flash-attn-2", P(seq_len=32768, head_dim=128, heads=4, causal=True)),
    ("forward", "flash-attn-2", P(seq_len=65536, head_dim=64, heads=2, causal=True)),
    ("forward", "flash-attn-2", P(seq_len=131072, head_dim=128, heads=1, causal=True)),
    ("forward", "flash-attn-2", P(seq_len=8192, head_dim=128, heads=32, kv_heads=8, batch=8, causal=True)),
    ("forward", "triton-fa2", P(seq_len=32768, head_dim=64, heads=4, causal=True)),
    ("forward", None, P(seq_len=32768, head_dim=128, heads=4, causal=True)),
    ("backward", "flash-attn-2", P(seq_len=16384, head_dim=64, heads=8, causal=True)),
    ("backward", "flash-attn-2", P(seq_len=8192, head_dim=128, heads=32, kv_heads=8, batch=8, causal=True)),
    ("backward", "flash-attn-2", P(seq_len=32768, head_dim=256, heads=2, causal=True)),
    ("backward", "flash-attn-2", P(seq_len=65536, head_dim=256, heads=1, causal=True)),
    ("backward", "flash-attn-2", P(seq_len=131072, head_dim=64, heads=2, causal=True)),
    ("forward", None, P(seq_len=32768, head_dim=128, heads=4, causal=True), "mi300x"),
    ("forward", None, P(seq_len=65536, head_dim=64, heads=2, causal=True), "mi300x"),
    ("forward", None, P(seq_len=131072, head_dim=128, heads=1), "mi300x"),
    ("backward", None, P(seq_len=16384, head_dim=128, heads=4, causal=True), "mi300x"),
]


def check(passes: str, kernel: str | None, problem: Problem, budget: int, hw: str = "h200") -> list[dict]:
    setup = prepare(hw, "fa2", problem, passes=passes, options=Options(kernel=kernel, cache=True))
    capacity = setup.profile.cache.capacity_bytes
    outer = tuple((c.name, c.capacity_bytes) for c in reversed(setup.profile.caches[:-1]))
    rows = []
    for launch in setup.launches:
        c = count_launch(setup.profile, launch, setup.options, setup.sram_bytes, "count", None, record=True)
        slots = setup.profile.sm_count * kernel_timing.blocks_per_sm(setup.profile, launch, c.sram.peak_bytes)
        kv_of_q, leads_group, group = head_order.head_order(launch.problem, launch.kernel is not None
                                                            and launch.kernel.batch_fastest)
        requests, heads = list(c.requests), launch.problem.heads_total
        sets = launches.partition_play(setup.profile)              # as simulate plays them: sides, sets
        t = time.perf_counter()
        played = plan(requests, heads_total=heads, capacity_bytes=capacity, group_size=group, kv_of_q=kv_of_q,
                      leads_group=leads_group, concurrency={r.kernel: slots for r in requests},
                      outer_levels=outer, **sets).play()
        exact = played.kernels
        t_exact = time.perf_counter() - t
        uniform = uniform_programs(requests, 64)
        unequal = {k: u for k, u in uniform.items() if outer or (u.lengths != u.lengths[0]).any()}
        t = time.perf_counter()
        got = windows.plan(unequal, {k: slots for k in unequal}, budget, heads=heads, capacity_bytes=capacity,
                           kv_of_q=kv_of_q, leads_group=leads_group, group=group, outer_levels=outer, **sets)[1]()
        t_windows = time.perf_counter() - t
        for k, g in got.items():
            e = exact[k]
            behind = {n: s.read_bytes / max(1, played.outer[k][n].read_bytes) for n, s in (g.outer or {}).items()}
            rows.append({"problem": f"{hw} {passes} {kernel or 'paper'} N={problem.seq_len_q} d={problem.head_dim} "
                                    f"B·H={problem.heads_total} H_k={problem.kv_heads}", "kernel": k,
                         "read": g.stats.dram_read_bytes / e.dram_read_bytes, "behind": behind,
                         "written back": g.stats.dram_write_bytes / e.dram_write_bytes if e.dram_write_bytes
                         else float("nan"),                     # none written back: only dirty left
                         "rate": g.rate, "within": g.within, "warm": g.warm, "exact s": t_exact,
                         "windows s": t_windows})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=4_000_000,
                    help="a kernel's requests in windows (simulate: WINDOW_SHARE × SAMPLE_REQUESTS a launch)")
    ap.add_argument("--quick", action="store_true", help="the first four problems only")
    args = ap.parse_args()
    rows = []
    for case in GRID[:4] if args.quick else GRID:
        for r in check(*case[:3], args.budget, *case[3:]):
            rows.append(r)
            behind = "".join(f" {n} reads {v:.4f}" for n, v in r["behind"].items())
            print(f"{r['problem']:65s} {r['kernel']:9s} read {r['read']:.4f} written back {r['written back']:.4f}{behind} "
                  f"rate {r['rate']:.3f} within {r['within']:.3f} warm {r['warm']:.2f} "
                  f"exact {r['exact s']:.1f} s windows {r['windows s']:.1f} s", flush=True)
    for name in ("read", "written back"):
        worst = max((r for r in rows if r[name] == r[name]), key=lambda r: abs(r[name] - 1))
        print(f"largest {name} error: {worst[name] - 1:+.2%} ({worst['problem']}, {worst['kernel']})")


if __name__ == "__main__":
    main()
