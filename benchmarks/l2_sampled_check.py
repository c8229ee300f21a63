"""The sampled L2 model (iosim/models/cache/sampled.py) against the exact one, where the exact
one runs: FA2's forward pass with the flash-attn-2 preset on the H200 profile (causal and
dense, N, heads and d over a grid), and every launch of the committed SDPA grids
(``--sdpa``, forward and backward, as benchmarks/l2_stream_check.py enumerates them). For
each kernel: the exact model's DRAM bytes, then the sampled model's at 1 in m chunks for
each m asked (never past the cap that keeps MIN_CHUNKS of the largest chunks in the scaled
cache: the rate the model would use at the least), their relative differences and the
half sample's own estimate of them (``sampled_within``). Writes a CSV and prints the
largest and median differences per m.

    python benchmarks/l2_sampled_check.py [OUT.csv] [--m 4,10,1000000] [--sdpa] [--max-requests N]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time

from iosim import Options, Problem, load_profile
from iosim.models.cache import plan, sampled
from iosim.models.cache.programs import head_programs
from iosim.run.count import count_launch
from iosim.run.kernel_timing import blocks_per_sm as _blocks_per_sm
from iosim.run.setup import prepare


def grid():
    for causal in (False, True):
        for d in (64, 128, 256):
            for n in (4096, 8192, 16384, 32768):
                for heads in (1, 16, 64):
                    yield Problem(seq_len=n, head_dim=d, heads=heads, causal=causal)


def sdpa_problems():
    from l2_stream_check import configs                         # benchmarks/ is on sys.path
    from iosim.gpu.sdpa import problem_of
    seen = set()
    for _, cfg in configs():
        p = problem_of(cfg)
        if p not in seen and p.heads_total * p.seq_len_q <= 600_000:
            seen.add(p)
            yield p


def check(profile, problem, passes: str, ms: list, max_requests: int) -> list[dict]:
    setup = prepare(profile, "fa2", problem, passes=passes, options=Options(kernel="flash-attn-2", cache=True))
    rows = []
    for launch in setup.launches:
        c = count_launch(profile, launch, setup.options, setup.sram_bytes, "count", record=True)
        p = launch.problem
        slots = profile.sm_count * _blocks_per_sm(profile, launch, c.sram.peak_bytes)
        lead = lambda h, p=p: (h % p.heads) % p.group_size == 0       # noqa: E731
        kw = dict(kv_of_q=p.kv_head_of, leads_group=lead, capacity_bytes=profile.cache.capacity_bytes)
        exact_plan = plan(list(c.requests), heads_total=p.heads_total, concurrency={k: slots for k in c.kernels},
                          group_size=p.group_size, **kw)
        if exact_plan.requests > max_requests:
            continue
        t0 = time.perf_counter()
        exact = exact_plan.play()
        t1 = time.perf_counter()
        for kernel, prog in head_programs(list(c.requests), 64).items():
            e = exact.kernels[kernel]
            cap = sampled.modulus(1 << 62, 1, prog, profile.cache.capacity_bytes,
                                  sampled.exact_counts(prog, p.heads_total, p.kv_head_of, lead))
            for m in sorted({min(cap, x) for x in ms}):
                t2 = time.perf_counter()
                got = sampled.play(prog, p.heads_total, slots, m, chunk_rows=64, **kw)
                s = got.stats
                rows.append({"problem": f"N={p.seq_len_q} kv={p.seq_len_kv} d={p.head_dim} H={p.heads_total} "
                                        f"causal={p.causal}", "kernel": kernel, "m": m, "cap": cap,
                             "exact_dram_read": e.dram_read_bytes, "sampled_dram_read": s.dram_read_bytes,
                             "read_err": _rel(s.dram_read_bytes, e.dram_read_bytes),
                             "exact_dram_write": e.dram_write_bytes, "sampled_dram_write": s.dram_write_bytes,
                             "write_err": _rel(s.dram_write_bytes, e.dram_write_bytes),
                             "hit_rate_diff": s.hit_rate - e.hit_rate, "within": got.within,
                             "exact_s": round(t1 - t0, 3), "sampled_s": round(time.perf_counter() - t2, 3)})
                print(rows[-1], flush=True)
    return rows


def _rel(x: int, exact: int) -> float:
    return 0.0 if x == exact else x / exact - 1 if exact else float("inf")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default="l2_sampled_check.csv")
    ap.add_argument("--m", default="4,10,1000000")
    ap.add_argument("--sdpa", action="store_true")
    ap.add_argument("--max-requests", type=int, default=4_000_000)
    args = ap.parse_args(argv)
    profile = load_profile("h200")
    ms = [int(x) for x in args.m.split(",")]
    problems = [(p, "forward+backward") for p in sdpa_problems()] if args.sdpa else [(p, "forward") for p in grid()]
    rows = [r for p, passes in problems for r in check(profile, p, passes, ms, args.max_requests)]
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for m in sorted({r["m"] for r in rows}, key=lambda m: (m == max(r["m"] for r in rows), m)):
        at = [r for r in rows if r["m"] == m]
        for name in ("read_err", "write_err"):
            errs = [abs(r[name]) for r in at]
            print(f"m = {m}: {len(at)} kernels, |{name}| max {max(errs):.4%} median {statistics.median(errs):.4%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
