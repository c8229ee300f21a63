"""The L2 model's cohort stream against the round-robin replay on every committed SDPA grid.

For each configuration measured under Nsight Compute (docs/validation/*sdpa*/), each
launch of the flash-attn-2 preset (forward and backward) is played both ways and the
DRAM bytes compared; the replay is the reference the stream must reproduce within 1 %
(docs/cache.md). Writes a CSV (one row per launch) and prints a summary.

    python benchmarks/l2_stream_check.py [OUT.csv] [--max-heads-n N]

The round robin plays every request in Python: a launch of more than ``--max-heads-n``
(heads × N, default 2^20) is skipped for time, and the summary says how many.
"""

from __future__ import annotations

import argparse
import csv
import glob
import os
import sys
import time

from iosim import Options, load_profile
from iosim.gpu.sdpa import problem_of
from iosim.models.cache import occupancy, replay
from iosim.run.count import count_launch
from iosim.run.setup import prepare

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def configs():
    """(folder, cfg) of every committed SDPA measurement."""
    import json
    for folder in sorted(glob.glob(os.path.join(ROOT, "docs", "validation", "*sdpa*"))):
        path = os.path.join(folder, "sdpa_configs.json")
        if os.path.exists(path):
            with open(path) as f:
                for cfgs in json.load(f)["grid"].values():
                    for cfg in cfgs:
                        yield os.path.basename(folder), cfg


def check(profile, problem) -> list[dict]:
    setup = prepare(profile, "fa2", problem, passes="forward+backward",
                    options=Options(kernel="flash-attn-2", cache=True))
    rows = []
    for launch in setup.launches:
        c = count_launch(profile, launch, setup.options, setup.sram_bytes, "count", record=True)
        p, regs = launch.problem, profile.registers
        slots = occupancy(profile.sm_count, profile.scratchpad.capacity_bytes, c.sram.peak_bytes,
                          launch.threads_per_block, launch.registers_per_thread, regs.capacity_bytes)
        kw = dict(heads_total=p.heads_total, kv_of_q=p.kv_head_of, capacity_bytes=profile.cache.capacity_bytes,
                  leads_group=lambda h: (h % p.heads) % p.group_size == 0,
                  concurrency={k: slots for k in c.kernels}, group_size=p.group_size)
        t0 = time.perf_counter()
        fast = replay(list(c.requests), **kw)
        t1 = time.perf_counter()
        slow = replay(list(c.requests), method="round_robin", **kw)
        t2 = time.perf_counter()
        for kernel, s in slow.kernels.items():
            f = fast.kernels[kernel]
            rows.append({"kernel": kernel, "stream_dram_read": f.dram_read_bytes, "replay_dram_read": s.dram_read_bytes,
                         "stream_dram_write": f.dram_write_bytes, "replay_dram_write": s.dram_write_bytes,
                         "ratio": f.dram_read_bytes / s.dram_read_bytes if s.dram_read_bytes else 1.0,
                         "stream_s": round(t1 - t0, 4), "replay_s": round(t2 - t1, 4)})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default="l2_stream_check.csv")
    ap.add_argument("--max-heads-n", type=int, default=1 << 20)
    args = ap.parse_args(argv)
    profile = load_profile("h200")
    out, skipped, seen = [], 0, set()
    for folder, cfg in configs():
        problem = problem_of(cfg)
        if problem in seen:
            continue
        seen.add(problem)
        if problem.heads_total * max(problem.seq_len_q, problem.seq_len_kv) > args.max_heads_n:
            skipped += 1
            continue
        for row in check(profile, problem):
            out.append({"folder": folder, **{k: cfg.get(k) for k in ("seq_len", "seq_len_q", "seq_len_kv",
                                                                    "head_dim", "batch", "heads", "causal",
                                                                    "dtype")}, **row})
        print(f"{len(out)} launches", file=sys.stderr, end="\r")
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(out[0]))
        writer.writeheader()
        writer.writerows(out)
    worst = max(out, key=lambda r: abs(r["ratio"] - 1))
    exact = sum(r["stream_dram_read"] == r["replay_dram_read"] for r in out)
    print(f"{len(out)} launches of {len(seen) - skipped} configurations ({skipped} skipped, heads × N > "
          f"{args.max_heads_n}): DRAM reads equal on {exact}, worst ratio {worst['ratio']:.5f} "
          f"({worst['kernel']}, N={worst['seq_len']}, d={worst['head_dim']}); stream {sum(r['stream_s'] for r in out):.1f} s, "
          f"replay {sum(r['replay_s'] for r in out):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
