"""Measure PyTorch's fused SDPA kernels (FlashAttention-2, or cuDNN's) with Nsight Compute (device machine only).

Driver:  python3 benchmarks/sdpa_ncu.py --out DIR [--budget-s 420] [--grid counts|wide|...] [--backend flash|cudnn] [--head-dim D: that head dim alone]
         [--metric-set lsu|launch|pipes|l2|local|dram|red|local-l2|clock]
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

``--backend cudnn`` (issue 14, item 4; grid ``cudnn`` by default) enables only
``SDPBackend.CUDNN_ATTENTION`` and writes DIR/cudnn_d{D}.csv, DIR/cudnn_configs.json (each
config with the bytes of its tensors and the loads of simple re-read hypotheses, several tiles
each; no tile is chosen here), DIR/cudnn_status_d{D}.jsonl (per config: ran, or the backend's
error and warnings), DIR/env.txt, nvidia-smi.txt and ncu_metrics.txt (``ncu --query-metrics``).
Every kernel between cudaProfilerStart and cudaProfilerStop is profiled (``--profile-from-start
off``), whatever its name: each config first launches one marker kernel (PyTorch's
``spin_kernel``, in a range of its own), runs once unprofiled (cuDNN builds its plan there),
then once inside the range. Besides the LSU metrics, the candidates for loads issued through the
tensor memory accelerator (L1's crossbar bytes, L2 sectors by source, and every counter this ncu
names ``tma``) are asked for. benchmarks/cudnn_compare.py DIR prints the launches.

The comparison with iosim's predictions runs elsewhere (benchmarks/sdpa_compare.py), so
the device machine needs nothing but PyTorch.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from iosim.gpu.ncu import find_ncu  # noqa: E402
from iosim.gpu.sdpa import METRICS as WANTED_METRICS  # noqa: E402  (issue 6's metrics and the SASS classes)
# ncu's options for cuDNN (only the profiler ranges, LaunchStats, no rules), the marker kernel and
# the profiler range: the package's, which `iosim validate --vendor cudnn` runs with too
from iosim.gpu.cudnn import NCU_OPTIONS as CUDNN_NCU_OPTIONS  # noqa: E402
from iosim.gpu.sdpa_target import MARKER_KERNEL, marker as marker_launch, profiled_range  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_grids import GRIDS, HEAD_DIMS, grid  # noqa: E402  (the grids: benchmarks/sdpa_grids.py)

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

#: where the L2's sectors went, by source (this side's SMs, or the other partition over the
#: fabric) and op, hit or miss; the fills and evictions where this ncu names them
L2_METRICS = [
    "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
    *(f"lts__t_sectors_srcunit_{src}_op_{op}_lookup_{x}.sum" for src in ("tex", "ltcfabric")
      for op in ("read", "write", "red", "atom") for x in ("hit", "miss")),
    "lts__t_sectors_srcunit_ltcfabric.sum", "lts__t_sectors_op_read_lookup_miss.sum",
    "lts__d_sectors_fill_device.sum", "lts__d_sectors_fill_sysmem.sum",
    "lts__t_sectors_srcnode_fbp.sum", "lts__t_sectors_evict.sum", "lts__t_sectors_evict_dirty.sum",
]
#: local memory (the registers a kernel spills): the bytes its instructions ask for, what the
#: L1 sees of them and sends on to the L2, against the global stores and the L2's writes
LOCAL_METRICS = [
    "smsp__sass_data_bytes_mem_local_op_ld.sum", "smsp__sass_data_bytes_mem_local_op_st.sum",
    "smsp__sass_data_bytes_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_hit.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", "l1tex__m_l1tex2xbar_write_bytes.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
    "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
    "launch__registers_per_thread", "launch__grid_size", "launch__block_size",
]
#: the spilled registers' frames against the DRAM reads beyond the inputs: local memory as above,
#: and the L2's read lookups from the SMs (docs/validation/2026-12-04-frames.md)
LOCAL_L2_METRICS = LOCAL_METRICS + [f"lts__t_sectors_srcunit_tex_op_read_lookup_{x}.sum" for x in ("hit", "miss")] + [
    "lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum", "lts__d_sectors_fill_device.sum"]
#: DRAM bytes and the time only: one ncu pass, nothing restored between passes
#: (docs/validation/2026-12-04-ncu-replay.md)
DRAM_METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"]
#: the reductions (dQaccum's fp32 atomics): instructions, the L2's requests and sectors they make
#: (docs/validation/2026-12-04-red-contention.md)
RED_METRICS = ["gpu__time_duration.sum", "smsp__inst_executed_op_global_red.sum",
               "smsp__sass_data_bytes_mem_global_op_red.sum", "lts__t_requests_srcunit_tex_op_red.sum",
               "lts__t_sectors_srcunit_tex_op_red.sum", "launch__grid_size", "launch__block_size"]
#: the SMs' clock while the kernel ran (``--clock-control none`` leaves it to the GPU's boost)
CLOCK_METRICS = ["gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.max",
                 "gpc__cycles_elapsed.max", "dram__cycles_elapsed.avg.per_second"]
METRIC_SETS = {"lsu": WANTED_METRICS, "launch": LAUNCH_METRICS, "pipes": PIPE_METRICS, "l2": L2_METRICS,
               "local": LOCAL_METRICS, "dram": DRAM_METRICS, "red": RED_METRICS,
               "local-l2": LOCAL_L2_METRICS, "clock": CLOCK_METRICS}

#: the tiles of the re-read hypotheses in cudnn_configs.json (B_r for the forward, B_c for the
#: backward); several are listed so the measurement, not this file, picks one
HYPOTHESIS_TILES = (64, 128, 256)


def expected_bytes(cfg: dict, tiles=HYPOTHESIS_TILES) -> dict:
    """The bytes of one config's tensors (fp16/bf16 elements; LSE fp32 per query row and head)
    and the global loads of two simple hypotheses, one entry per tile:

    * ``forward[B_r]``: each block of B_r query rows reads its Q rows once and, per query head,
      the K and V rows it attends to (all N_kv; causal: the first min(i + B_r, N_q, N_kv) for
      the block of rows i to i + B_r);
    * ``backward[B_c]``: each block of B_c key rows reads its K and V rows once per query head,
      and the Q, dO (elements) and LSE, D (fp32) rows of the queries that see it (all N_q;
      causal: the rows from j on, for the block of key rows j to j + B_c).

    Masks at key-row granularity (as if B_c divides B_r); causal masks aligned top-left."""
    b, h, d = cfg["batch"], cfg["heads"], cfg["head_dim"]
    h_kv = cfg.get("kv_heads", h)
    n_q, n_kv = cfg.get("seq_len_q", cfg["seq_len"]), cfg.get("seq_len_kv", cfg["seq_len"])
    row = 2 * d   # bytes of one row of one head (fp16 or bf16)
    q, kv, lse = b * h * n_q * row, b * h_kv * n_kv * row, b * h * n_q * 4
    out = {"Q": q, "K": kv, "V": kv, "O": q, "dO": q, "dQ": q, "dK": kv, "dV": kv, "LSE": lse, "QKV": q + 2 * kv,
           "forward": {}, "backward": {}}
    for t in tiles:
        starts = range(0, n_q, t)
        kv_rows = sum(min(i + t, n_q, n_kv) if cfg["causal"] else n_kv for i in starts)
        out["forward"][t] = q + b * h * kv_rows * 2 * row
        blocks = range(0, n_kv, t)
        q_rows = sum(max(n_q - j, 0) if cfg["causal"] else n_q for j in blocks)
        out["backward"][t] = b * h * (n_kv * 2 * row + q_rows * (2 * row + 8))
    return out


#: what ncu is asked for on cuDNN's launches, beside LAUNCH_METRICS and issue 6's (sdpa.METRICS):
#: the candidates for loads that bypass the LSU (TMA), stores, and L2 sectors by source and op
CUDNN_CANDIDATES = [
    "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum",
    "l1tex__m_xbar2l1tex_read_bytes.sum",
    "l1tex__m_xbar2l1tex_read_sectors.sum",
    "l1tex__m_l1tex2xbar_write_bytes.sum",
    "l1tex__m_l1tex2xbar_write_sectors.sum",
    "lts__t_requests_srcunit_tex.sum",
    "lts__t_requests_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_tex_op_red.sum",
    "lts__t_sectors_srcunit_tex_op_atom.sum",
    "lts__t_sectors_op_read.sum",
    "lts__t_sectors_op_write.sum",
    "lts__t_sectors_op_red.sum",
    "lts__t_sectors_op_atom.sum",
    "sm__ctas_launched.sum",
]
#: a counter whose name has "tma" (or "bulk") as a word: asked for when this ncu lists it
TMA_NAME = re.compile(r"(^|_)(u?tma|bulk)(_|$)")
MAX_TMA_METRICS = 16


def tma_counters(query_text: str) -> list[str]:
    """The counters of ``ncu --query-metrics`` output whose names have a TMA word, as ``.sum``."""
    found = re.findall(r"^(\w+)\s+Counter\b", query_text, flags=re.M)
    return [f"{name}.sum" for name in found if TMA_NAME.search(name)]


def cudnn_metrics(ncu: str, query_text: str) -> tuple[list[str], list[str]]:
    """(metrics to ask for, the TMA counters among them) on this ncu."""
    from iosim.gpu.sdpa import METRICS

    wanted = list(dict.fromkeys(LAUNCH_METRICS + METRICS + CUDNN_CANDIDATES))
    tma = [m for m in tma_counters(query_text) if m not in wanted][:MAX_TMA_METRICS]
    return available_metrics(ncu, wanted, query_text) + tma, tma


def measure_each(configs: list[dict], marker, warm, measured, status_path: str, deadline: float | None) -> None:
    """For each config: ``marker()`` (the launch that opens its group), ``warm(cfg)`` unprofiled,
    then ``measured(cfg)``; one JSON line per config in ``status_path``: ok, or the error and
    the warnings (PyTorch says there why a backend refused a shape). Stops, saying so, once
    ``deadline`` (time.time()) has passed, so that ncu still writes what it measured."""
    with open(status_path, "w") as log:
        for i, cfg in enumerate(configs):
            entry = {"index": i, "config": cfg}
            if deadline is not None and time.time() > deadline:
                log.write(json.dumps({**entry, "ok": False, "skipped": "budget"}) + "\n")
                break
            t0 = time.time()
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                try:
                    marker()
                    warm(cfg)
                    measured(cfg)
                    entry["ok"] = True
                except Exception as exc:  # noqa: BLE001 - the backend refused: record, go on
                    entry.update(ok=False, error=f"{type(exc).__name__}: {exc}"[:4000])
            entry.update(warnings=list(dict.fromkeys(str(w.message)[:2000] for w in seen)),
                         seconds=round(time.time() - t0, 2))
            log.write(json.dumps(entry) + "\n")
            log.flush()


def run_target(head_dim: int, grid_name: str, backend: str = "flash", status: str | None = None,
               deadline: float | None = None) -> None:
    import torch

    from iosim.gpu.sdpa_target import run

    torch.manual_seed(0)
    configs = grid(head_dim, grid_name, backend)
    if backend == "flash":
        for cfg in configs:
            run(cfg)
        return

    measure_each(configs, lambda: marker_launch(torch), run, lambda cfg: run(cfg, region=lambda: profiled_range(torch)),
                 status or os.devnull, deadline)


def run_ncu(ncu: str, kernel_filter: str | None, metrics: list[str], target: list[str], path: str, timeout: float,
            env: dict | None = None, extra: list[str] = (), python: bool = True) -> str:
    """Run ``python TARGET...`` (or, not ``python``, the program TARGET) under ``ncu
    --clock-control none --csv`` (and the options ``extra``) for the kernels matching
    ``kernel_filter`` (None: all); write ncu's CSV to ``path`` (with the target's stderr after
    ``#STDERR`` when it failed, or ``#TIMEOUT`` after what came before a time-out) and return it."""
    names = ["--kernel-name", kernel_filter] if kernel_filter else []
    cmd = [ncu, "--clock-control", "none", *extra, "--csv", "--print-units", "base", *names,
           "--metrics", ",".join(metrics), *([sys.executable] if python else []), *target]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        text = res.stdout + ("\n#STDERR\n" + res.stderr[-4000:] if res.returncode else "")
    except subprocess.TimeoutExpired as exc:
        text = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        text += "\n#TIMEOUT\n"
    open(path, "w").write(text)
    return text


def available_metrics(ncu: str, wanted: list[str], query_text: str | None = None) -> list[str]:
    text = query_text if query_text is not None else query_metrics(ncu)
    names = set(re.findall(r"^(\S+)", text, flags=re.M))
    return [m for m in wanted if m.split(".")[0] in names or m.startswith("launch__")]


def query_metrics(ncu: str) -> str:
    return subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True).stdout


def write_env(out: str, ncu: str) -> None:
    """env.txt (GPU, driver, PyTorch, CUDA, cuDNN, ncu, Python) and nvidia-smi.txt in ``out``."""
    def text(cmd):
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            return done.stdout.strip() or f"{cmd[0]}: " + (done.stderr.strip().splitlines() or ["no output"])[-1]
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{cmd[0]}: {exc}"

    torch_line = "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, " \
                 "'cudnn', torch.backends.cudnn.version())"
    lines = [text(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem",
                   "--format=csv,noheader"]),
             text([sys.executable, "-c", torch_line]),
             (text([ncu, "--version"]).splitlines() or ["ncu: no version"])[-1],
             f"python {sys.version.split()[0]}"]
    open(os.path.join(out, "env.txt"), "w").write("\n".join(lines) + "\n")
    open(os.path.join(out, "nvidia-smi.txt"), "w").write(text(["nvidia-smi"]) + "\n")


def plan(args, ncu: str) -> dict:
    """What the driver runs: the metrics, the kernel filter, ncu's extra options, the files'
    prefix and the grid per head dim (written to {prefix}_configs.json)."""
    head_dims = GRIDS[args.grid].get("head_dims", HEAD_DIMS)
    if getattr(args, "head_dim", None):      # that head dim alone
        if args.head_dim not in head_dims:
            sys.exit(f"--head-dim {args.head_dim}: grid {args.grid} has head dims {', '.join(map(str, head_dims))}")
        head_dims = [args.head_dim]
    grids = {d: grid(d, args.grid, args.backend) for d in head_dims}
    if args.backend == "flash":
        wanted = METRIC_SETS[getattr(args, "metric_set", None) or (args.grid if args.grid in METRIC_SETS else "lsu")]
        meta = {"metrics": available_metrics(ncu, wanted), "grid_name": args.grid, "grid": grids}
        return dict(meta=meta, prefix="sdpa", kernel_filter="regex:flash", extra=[])
    query = query_metrics(ncu)
    open(os.path.join(args.out, "ncu_metrics.txt"), "w").write(query)
    metrics, tma = cudnn_metrics(ncu, query)
    for configs in grids.values():
        for cfg in configs:
            cfg["expected"] = expected_bytes(cfg)
    meta = {"backend": args.backend, "metrics": metrics, "tma_metrics": tma, "marker": MARKER_KERNEL,
            "grid_name": args.grid, "grid": grids}
    return dict(meta=meta, prefix=args.backend, kernel_filter=None, extra=CUDNN_NCU_OPTIONS)


def drive(args) -> None:
    """Each head dim in its own ncu run, each with its share of what is left of the budget."""
    ncu = find_ncu()
    os.makedirs(args.out, exist_ok=True)
    start = time.time()
    if args.backend != "flash":
        write_env(args.out, ncu)
    p = plan(args, ncu)
    meta, prefix = p["meta"], p["prefix"]
    path = os.path.join(args.out, f"{prefix}_configs.json")
    if getattr(args, "head_dim", None) and os.path.exists(path):   # another head dim's run in this folder: keep its
        before = json.load(open(path))
        if (before.get("grid_name"), before.get("metrics")) != (meta.get("grid_name"), meta["metrics"]):
            sys.exit(f"{path}: another grid's or metric set's run; give --head-dim its own --out")
        meta = {**meta, "grid": {**before["grid"], **{str(d): c for d, c in meta["grid"].items()}}}
    json.dump(meta, open(path, "w"), indent=1)
    sizes = {d: len(configs) for d, configs in p["meta"]["grid"].items()}
    for d in list(sizes):
        n, left = sizes.pop(d), args.budget_s - (time.time() - start)
        if left < 30:
            print(f"skipping d={d}: {left:.0f} s of budget left", flush=True)
            continue
        target = [__file__, "--target", "--head-dim", str(d), "--grid", args.grid, "--backend", args.backend]
        if args.backend != "flash":   # its share of the budget, and time for ncu to print what it has
            share = left * n / (n + sum(sizes.values()))
            target += ["--status", os.path.abspath(os.path.join(args.out, f"{prefix}_status_d{d}.jsonl")),
                       "--deadline", str(time.time() + 0.8 * share)]
        t0 = time.time()
        path = os.path.join(args.out, f"{prefix}_d{d}.csv")
        text = run_ncu(ncu, p["kernel_filter"], meta["metrics"], target, path, timeout=left, extra=p["extra"])
        if '"ID"' not in text and args.backend != "flash" and time.time() - t0 < 60:
            # refused at once (a listed TMA counter it cannot collect, an option it lacks): once more,
            # with the fixed metrics and only the profiler ranges, the CSV saying so
            os.replace(path, path + ".refused")
            base = [m for m in meta["metrics"] if m not in meta["tma_metrics"]]
            text = run_ncu(ncu, None, base, target, path, timeout=left - (time.time() - t0),
                           extra=CUDNN_NCU_OPTIONS[:2])
        print(f"d={d}: {time.time() - t0:.0f} s, {text.count(chr(10))} lines", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", action="store_true")
    parser.add_argument("--head-dim", type=int)
    parser.add_argument("--out")
    parser.add_argument("--budget-s", type=float, default=420.0)
    parser.add_argument("--grid", choices=list(GRIDS), help="default: counts (flash), cudnn (cudnn)")
    parser.add_argument("--backend", choices=["flash", "cudnn"], default="flash")
    parser.add_argument("--metric-set", choices=list(METRIC_SETS),
                        help="(flash) what ncu counts; default: the grid's own set (launch, pipes) or lsu")
    parser.add_argument("--status", help="(target) the per-config JSON lines file of a cuDNN run")
    parser.add_argument("--deadline", type=float, help="(target) start no config after this time.time()")
    args = parser.parse_args()
    args.grid = args.grid or ("counts" if args.backend == "flash" else "cudnn")
    if args.target:
        run_target(args.head_dim, args.grid, args.backend, args.status, args.deadline)
        return
    if not args.out:
        parser.error("--out DIR is required")
    drive(args)


if __name__ == "__main__":
    main()
