"""Measure PyTorch's FlashAttention-2 SDPA kernels with Nsight Compute (device machine only).

Driver:  python3 benchmarks/sdpa_ncu.py --out DIR [--budget-s 420] [--grid counts|wide]
  For each head dim, runs this file in ``--target`` mode under
  ``ncu --clock-control none`` and writes DIR/sdpa_d{D}.csv (raw ncu CSV) and
  DIR/sdpa_configs.json (the grid, in launch order). Metrics this ncu does not know are
  dropped (``ncu --query-metrics``), and each head dim is a separate ncu run, so a time-out
  loses one file, not all.
Target:  python3 benchmarks/sdpa_ncu.py --target --head-dim D
  For every config of that head dim: one forward and one backward of
  ``scaled_dot_product_attention`` with only the flash backend enabled, fp16, layout
  (B, H, N, d). No warm-up: hardware counters do not depend on it, and ncu serialises
  and times each kernel on its own.

The comparison with iosim's predictions runs elsewhere (benchmarks/sdpa_compare.py), so
the device machine needs nothing but PyTorch.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from iosim.gpu.ncu import find_ncu  # noqa: E402
from iosim.gpu.sdpa import METRICS as WANTED_METRICS  # noqa: E402  (issue 6's metrics and the SASS classes)

HEAD_DIMS = (32, 64, 128, 256)
#: what the launch itself was given (no replay passes): registers and shared memory per thread
#: block, and which of them limits how many thread blocks an SM holds
LAUNCH_METRICS = [
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_static",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__block_size",
    "launch__grid_size",
    "gpu__time_duration.sum",
]


GRIDS = {
    # issue 5's check of the counts: small enough that every metric pass is quick
    "counts": dict(seq_lens=(1024, 4096, 16384), batch_heads=((1, 4), (4, 32)), max_work=2 ** 31),
    # issue 6's grid for DRAM bytes and time: N to 32,768, batch × heads 1 to 512
    "wide": dict(seq_lens=(2048, 8192, 32768), batch_heads=((1, 1), (1, 16), (8, 64)), max_work=2 ** 34),
    # the kernels' launch resources (LAUNCH_METRICS), one small config per head dim
    "launch": dict(seq_lens=(2048,), batch_heads=((1, 16),), max_work=2 ** 34),
    # how busy the pipes and the warp schedulers are (PIPE_METRICS), for the time model's misses
    "pipes": dict(seq_lens=(8192,), batch_heads=((1, 16),), max_work=2 ** 34),
    # issue 14: head dims that are no kernel size (40, 80, 160) and two that are (96, 192), ragged N
    "unseen": dict(seq_lens=(1000, 2500), batch_heads=((1, 4), (2, 8)), max_work=2 ** 31,
                   head_dims=(40, 80, 96, 160, 192)),
    # issue 14: bf16, unequal lengths (N_q, N_kv) both ways, decode (N_q = 1), and causal ragged N
    "unequal": dict(lengths=((512, 2048), (2048, 512), (1000, 3000), (1, 4096), (7, 777), (3000, 3000)),
                    batch_heads=((1, 8), (4, 16)), max_work=2 ** 31, head_dims=(64, 128), dtypes=("fp16", "bf16")),
    # issue 14's wider grid: GQA and MQA (PyTorch's enable_gqa), long causal runs, decode with
    # and without splits, many small heads, bf16; explicit configs (N_q, N_kv, B, H, H_kv, causal, dtype)
    "gqa-long": dict(head_dims=(64, 128), configs=(
        (4096, 4096, 2, 32, 8, False, "fp16"), (4096, 4096, 2, 32, 8, True, "bf16"),
        (4096, 4096, 1, 16, 1, False, "bf16"), (4096, 4096, 1, 16, 1, True, "fp16"),
        (2048, 2048, 8, 128, 128, False, "fp16"), (1024, 1024, 8, 128, 128, True, "fp16"),
        (16384, 16384, 1, 8, 8, True, "fp16"), (32768, 32768, 1, 4, 4, True, "bf16"),
        (65536, 65536, 1, 2, 2, True, "fp16"),
        (1, 8192, 8, 32, 8, False, "fp16"), (1, 65536, 2, 32, 32, False, "bf16"),
        (1, 2048, 64, 16, 16, False, "fp16"), (16, 4096, 4, 16, 2, False, "fp16"),
    )),
}
#: per-pipe and issue activity, % of the elapsed cycles of the SMs that were active
PIPE_METRICS = [
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "gpu__time_duration.sum",
]


def grid(head_dim: int, name: str = "counts") -> list[dict]:
    """The configs of one head dim, in launch order; N²·B·H is capped to bound ncu's time."""
    g = GRIDS[name]
    if "configs" in g:
        return [_explicit(head_dim, *c) for c in g["configs"]]
    out = []
    lengths = g.get("lengths") or [(n, n) for n in g["seq_lens"]]
    for (n_q, n_kv), (b, h), causal, dtype in itertools.product(lengths, g["batch_heads"], (False, True),
                                                                 g.get("dtypes", ("fp16",))):
        if n_q * n_kv * b * h > g["max_work"] or (causal and n_q != n_kv):
            continue   # (PyTorch's is_causal aligns a non-square mask top-left, flash-attn bottom-right)
        cfg = {"seq_len": n_q, "head_dim": head_dim, "batch": b, "heads": h, "causal": causal}
        if n_q != n_kv:
            cfg.update(seq_len_q=n_q, seq_len_kv=n_kv)
        if dtype != "fp16":
            cfg["dtype"] = dtype
        out.append(cfg)
    return out


def _explicit(head_dim: int, n_q: int, n_kv: int, b: int, h: int, h_kv: int, causal: bool, dtype: str) -> dict:
    cfg = {"seq_len": n_q, "head_dim": head_dim, "batch": b, "heads": h, "causal": causal}
    if n_q != n_kv:
        cfg.update(seq_len_q=n_q, seq_len_kv=n_kv)
    if h_kv != h:
        cfg["kv_heads"] = h_kv
    if dtype != "fp16":
        cfg["dtype"] = dtype
    return cfg


def run_target(head_dim: int, grid_name: str) -> None:
    import torch

    from iosim.gpu.sdpa_target import run

    torch.manual_seed(0)
    for cfg in grid(head_dim, grid_name):
        run(cfg)


def run_ncu(ncu: str, kernel_filter: str, metrics: list[str], target: list[str], path: str, timeout: float,
            env: dict | None = None) -> str:
    """Run ``python TARGET...`` under ``ncu --clock-control none --csv`` for the kernels matching
    ``kernel_filter``; write ncu's CSV to ``path`` (with the target's stderr after ``#STDERR``
    when it failed, or ``#TIMEOUT`` after what came before a time-out) and return it."""
    cmd = [ncu, "--clock-control", "none", "--csv", "--print-units", "base", "--kernel-name", kernel_filter,
           "--metrics", ",".join(metrics), sys.executable, *target]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        text = res.stdout + ("\n#STDERR\n" + res.stderr[-4000:] if res.returncode else "")
    except subprocess.TimeoutExpired as exc:
        text = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        text += "\n#TIMEOUT\n"
    open(path, "w").write(text)
    return text


def available_metrics(ncu: str, wanted: list[str]) -> list[str]:
    text = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True).stdout
    names = set(re.findall(r"^(\S+)", text, flags=re.M))
    return [m for m in wanted if m.split(".")[0] in names or m.startswith("launch__")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", action="store_true")
    parser.add_argument("--head-dim", type=int)
    parser.add_argument("--out")
    parser.add_argument("--budget-s", type=float, default=420.0)
    parser.add_argument("--grid", choices=list(GRIDS), default="counts")
    args = parser.parse_args()
    if args.target:
        run_target(args.head_dim, args.grid)
        return
    ncu = find_ncu()
    wanted = {"launch": LAUNCH_METRICS, "pipes": PIPE_METRICS}.get(args.grid, WANTED_METRICS)
    metrics = available_metrics(ncu, wanted)
    os.makedirs(args.out, exist_ok=True)
    head_dims = GRIDS[args.grid].get("head_dims", HEAD_DIMS)
    json.dump({"metrics": metrics, "grid_name": args.grid, "grid": {d: grid(d, args.grid) for d in head_dims}},
              open(os.path.join(args.out, "sdpa_configs.json"), "w"), indent=1)
    start = time.time()
    for d in head_dims:
        left = args.budget_s - (time.time() - start)
        if left < 30:
            print(f"skipping d={d}: {left:.0f} s of budget left", flush=True)
            continue
        t0 = time.time()
        text = run_ncu(ncu, "regex:flash", metrics, [__file__, "--target", "--head-dim", str(d), "--grid", args.grid],
                       os.path.join(args.out, f"sdpa_d{d}.csv"), timeout=left)
        print(f"d={d}: {time.time() - t0:.0f} s, {text.count(chr(10))} lines", flush=True)


if __name__ == "__main__":
    main()
