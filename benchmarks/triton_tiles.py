"""Time every feasible configuration of iosim's Triton FA2 forward kernel on the GPU (issue 14,
item 3; docs/triton.md). Run on the device:

    PYTHONPATH=$PWD python3 benchmarks/triton_tiles.py --out $OUT/triton-tiles

1. compiles every (config, d, causal) kernel on a process pool (Triton's disk cache keeps them);
2. checks each configuration's numerics first, on a small shape, against a float64 reference;
3. times every configuration on each of the SHAPES below (chosen before any measurement):
   CUDA events, 2 warm-up runs, then the median (and min) of at least 10 runs, the L2 flushed
   before every run (a 256 MiB write: iosim's L2 model starts each kernel with an empty cache).

Writes ``results.csv`` (shape, config, median/min time, shared bytes, registers, spills,
error), ``numerics.csv`` and ``machine.json``. A configuration Triton refuses, or that fails,
is recorded with its error and the script goes on. A time budget (``--budget-s``, default
330 s for the timing) caps the total: configurations not reached are recorded as skipped.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from iosim.kernels.triton_preset import search_space   # noqa: E402  (no GPU needed)

#: (seq_len, head_dim, batch, heads, causal), fixed before any measurement
SHAPES = [
    (1024, 64, 16, 16, False), (1024, 128, 4, 32, True), (2048, 128, 1, 64, False), (2048, 64, 4, 32, True),
    (4096, 64, 4, 32, False), (4096, 128, 1, 16, False), (4096, 128, 16, 16, True), (8192, 64, 1, 64, False),
    (8192, 128, 4, 32, True), (8192, 64, 1, 16, True), (16384, 128, 1, 16, False), (32768, 64, 1, 16, True),
]
#: the prospective check of the measured steps (session 12), fixed before any measurement of
#: them and timed only after iosim's predictions for them were committed
#: (docs/validation/2026-12-02-triton-check/predictions.json): N 1,000-24,576 (two ragged),
#: d 64 and 128, causal and not, B·H 4-256
CHECK_SHAPES = [
    (1536, 64, 8, 32, False), (3072, 128, 2, 24, True), (6144, 64, 2, 16, False), (12288, 128, 1, 8, False),
    (2560, 128, 8, 12, False), (5120, 64, 4, 8, True), (24576, 64, 1, 8, True), (16384, 64, 2, 20, False),
    (1000, 128, 32, 8, False), (7000, 128, 1, 40, True), (4096, 64, 1, 128, True), (10240, 128, 3, 4, False),
]
#: session 13: chosen before measuring, to test the short blocks' fixed cost prospectively over
#: the whole search space (docs/validation/2026-12-02-triton-check2.md)
CHECK2_SHAPES = [
    (1280, 128, 16, 8, False), (2000, 64, 8, 16, True), (3584, 128, 4, 8, False), (4608, 64, 2, 32, False),
    (6000, 128, 2, 8, True), (8192, 64, 1, 24, True), (9216, 128, 1, 12, False), (11000, 64, 1, 8, False),
    (14336, 128, 1, 4, True), (20480, 64, 1, 6, False), (28672, 128, 1, 2, False), (32768, 64, 1, 4, True),
]
SHAPE_SETS = {"first": SHAPES, "check": CHECK_SHAPES, "check2": CHECK2_SHAPES}
FIELDS = ["seq_len", "head_dim", "batch", "heads", "causal", "dtype", "block_m", "block_n", "num_warps",
          "num_stages", "median_s", "min_s", "runs", "shared_bytes", "registers", "spills", "error"]
#: the small space: (BLOCK_M, BLOCK_N, num_warps, num_stages) values timed in one device call
SMALL = ((64, 128), (32, 64, 128), (4, 8), (1, 2, 3))
SMEM_LIMIT = 232448   # H200 per-block opt-in shared memory; larger footprints are refused by Triton anyway


def compile_one(job):
    """Compile (and run once) one kernel on a small shape, in a worker; returns an error or ''."""
    import torch
    from iosim.gpu.triton_attention import fa2_forward
    (bm, bn, w, s), d, causal = job
    try:
        q = torch.randn(1, 1, 256, d, device="cuda", dtype=torch.float16)
        fa2_forward(q, q, q, causal, bm, bn, w, s)
        torch.cuda.synchronize()
        return ""
    except Exception as exc:  # noqa: BLE001 - record and go on
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def numerics(cfg, d, causal, dtype, torch, fa2_forward, reference):
    """Max |error| of O and L against float64 on B=1, H=2, N=256 (N=250 ragged too)."""
    worst_o = worst_l = 0.0
    for n in (256, 250):
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(1, 2, n, d, device="cuda", dtype=dtype, generator=g) for _ in range(3))
        o, lse, compiled = fa2_forward(q, k, v, causal, *cfg)
        o_ref, l_ref = reference(q, k, v, causal)
        worst_o = max(worst_o, (o.double() - o_ref).abs().max().item())
        worst_l = max(worst_l, (lse.double() - l_ref).abs().max().item())
    return worst_o, worst_l, compiled


def time_config(run, flush, torch, min_runs=10, max_runs=50, target_s=0.25):
    """Median and min of CUDA-event times, the L2 flushed before each run."""
    for _ in range(2):
        run()
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    while len(times) < min_runs or (len(times) < max_runs and time.perf_counter() - t0 < target_s):
        flush.zero_()
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times), min(times), len(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=330.0, help="seconds for the timing phase")
    ap.add_argument("--jobs", type=int, default=min(12, os.cpu_count() or 1))
    ap.add_argument("--space", choices=("small", "full"), default="small",
                    help="small: BLOCK_M 64/128, BLOCK_N 32/64/128, 4/8 warps, 1-3 stages (36 configs, what one "
                         "device call of the lent H200 compiles and times); full: the preset's whole search space")
    ap.add_argument("--compile-budget-s", type=float, default=170.0)
    ap.add_argument("--shapes", choices=sorted(SHAPE_SETS), default="first",
                    help="first: the 12 shapes of 2026-12-01; check: the prospective check of the measured steps")
    ap.add_argument("--configs", help="a JSON file whose 'configs' list ([BLOCK_M, BLOCK_N, warps, stages] each) "
                    "is timed instead of --space (e.g. explore's top picks over the whole space)")
    args = ap.parse_args()
    shapes = SHAPE_SETS[args.shapes]
    os.makedirs(args.out, exist_ok=True)
    import torch
    import triton
    from iosim.gpu.triton_attention import fa2_forward, reference
    from iosim.kernels.triton_preset import shared_bytes
    props = torch.cuda.get_device_properties(0)
    machine = {"gpu": props.name, "sm_count": props.multi_processor_count, "torch": torch.__version__,
               "triton": triton.__version__, "cuda": torch.version.cuda, "driver": _driver(),
               "date": time.strftime("%Y-%m-%d %H:%M:%S"), "shapes": shapes, "l2_flush": "256 MiB zero_() before each run",
               "timing": "CUDA events, 2 warm-ups, median of >= 10 runs (up to 50 or 0.25 s)"}
    with open(os.path.join(args.out, "machine.json"), "w") as f:
        json.dump(machine, f, indent=2)
    print(json.dumps(machine), flush=True)
    configs = [c.key() for c in search_space() if shared_bytes(c, 128, "fp16") <= SMEM_LIMIT
               or shared_bytes(c, 64, "fp16") <= SMEM_LIMIT]
    if args.configs:
        with open(args.configs) as f:
            listed = {tuple(c) for c in json.load(f)["configs"]}
        configs = [c for c in configs if c in listed]
    elif args.space == "small":
        configs = [c for c in configs if c[0] in SMALL[0] and c[1] in SMALL[1] and c[2] in SMALL[2] and c[3] in SMALL[3]]
    machine["space"] = f"listed ({args.configs})" if args.configs else args.space
    machine["configs"] = configs
    with open(os.path.join(args.out, "machine.json"), "w") as f:
        json.dump(machine, f, indent=2)
    errors = _compile_all(configs, args.jobs, args.compile_budget_s)
    checked = _check_numerics(configs, errors, args.out, torch, fa2_forward, reference)
    _time_all(configs, errors, checked, args, torch, fa2_forward, shared_bytes, shapes)
    return 0


def _driver() -> str:
    try:
        import subprocess
        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:  # noqa: BLE001
        return "unknown"


def _compile_all(configs, jobs, budget_s, causals=(False, True)) -> dict:
    """(config, d, causal) -> '' or why it did not compile; jobs left after ``budget_s`` seconds
    are recorded as skipped (their workers are stopped)."""
    from concurrent.futures import wait
    from iosim.kernels.triton_preset import TritonConfig, shared_bytes
    todo = [(c, d, causal) for c in configs for d in (64, 128) for causal in causals
            if shared_bytes(TritonConfig(*c), d, "fp16") <= SMEM_LIMIT]
    t0 = time.perf_counter()
    import multiprocessing
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
    futures = {pool.submit(compile_one, job): job for job in todo}
    done, _ = wait(futures, timeout=budget_s)
    errors = {job: (fut.result() if fut in done else "skipped: compile budget") for fut, job in futures.items()}
    for proc in list(getattr(pool, "_processes", {}).values()):
        proc.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    print(f"compiled {len(todo)} kernels in {time.perf_counter() - t0:.0f} s; "
          f"{sum(bool(e) for e in errors.values())} failed or skipped", flush=True)
    return errors


def _check_numerics(configs, errors, out, torch, fa2_forward, reference) -> dict:
    """(config, d, causal) -> error text ('' when within tolerance). fp16: |O| error <= 1e-2,
    |L| <= 1e-3; bf16 (default config only) 4x: 8 fewer mantissa bits than fp16 on P and O."""
    checked = {}
    rows = []
    for (cfg, d, causal), err in errors.items():
        for dtype, tol in ((torch.float16, 1.0),) + (((torch.bfloat16, 4.0),) if cfg == (128, 64, 4, 3) else ()):
            text = err
            e_o = e_l = float("nan")
            if not err:
                try:
                    e_o, e_l, _ = numerics(cfg, d, causal, dtype, torch, fa2_forward, reference)
                    if not (e_o <= 1e-2 * tol and e_l <= 1e-3 * tol):
                        text = f"numerics: max |O err| {e_o:.2e}, max |L err| {e_l:.2e}"
                except Exception as exc:  # noqa: BLE001
                    text = f"{type(exc).__name__}: {str(exc)[:200]}"
            rows.append([*cfg, d, causal, str(dtype).split(".")[-1], e_o, e_l, text])
            if dtype == torch.float16:
                checked[(cfg, d, causal)] = text
    with open(os.path.join(out, "numerics.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["block_m", "block_n", "num_warps", "num_stages", "head_dim", "causal", "dtype", "max_err_o",
                    "max_err_l", "error"])
        w.writerows(rows)
    bad = [r for r in rows if r[-1] and not r[-1].startswith(("OutOfResources", "CompilationError"))]
    print(f"numerics: {len(rows)} checks, {sum(1 for r in rows if not r[-1])} pass; "
          f"{len(bad)} wrong or failed other than refused", flush=True)
    for r in bad[:10]:
        print("  ", r, flush=True)
    return checked


def _time_all(configs, errors, checked, args, torch, fa2_forward, shared_bytes, shapes) -> None:
    from iosim.kernels.triton_preset import TritonConfig
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    deadline = time.perf_counter() + args.budget_s
    path = os.path.join(args.out, "results.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for si, (n, d, b, h, causal) in enumerate(shapes):
            shape_deadline = time.perf_counter() + (deadline - time.perf_counter()) / (len(shapes) - si)
            g = torch.Generator(device="cuda").manual_seed(1)
            q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, generator=g) for _ in range(3))
            order = sorted(configs, key=lambda c: -(c[0] * c[1]))   # large tiles first: small ones are slowest
            done = 0
            for cfg in order:
                smem = shared_bytes(TritonConfig(*cfg), d, "fp16")
                row = [n, d, b, h, causal, "fp16", *cfg, "", "", 0, smem, "", "", ""]
                err = errors.get((cfg, d, causal), f"shared memory {smem:,} B > {SMEM_LIMIT:,} B")
                err = err or checked.get((cfg, d, causal), "")
                if cfg[0] > n:
                    err = "BLOCK_M > N"
                if not err and time.perf_counter() > shape_deadline:
                    err = "skipped: time budget"
                if not err:
                    try:
                        _, _, compiled = fa2_forward(q, k, v, causal, *cfg)
                        med, low, runs = time_config(lambda: fa2_forward(q, k, v, causal, *cfg), flush, torch)
                        row[10:16] = [f"{med:.9f}", f"{low:.9f}", runs, compiled.metadata.shared,
                                      compiled.n_regs, compiled.n_spills]
                        done += 1
                    except Exception as exc:  # noqa: BLE001
                        err = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                        traceback.print_exc(limit=1)
                row[16] = err
                w.writerow(row)
            f.flush()
            print(f"shape {si + 1}/{len(shapes)} N={n} d={d} B={b} H={h} causal={causal}: {done} timed, "
                  f"{time.perf_counter() - deadline + args.budget_s:.0f} s so far", flush=True)


if __name__ == "__main__":
    sys.exit(main())
