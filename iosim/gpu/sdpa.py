"""PyTorch's FlashAttention-2 SDPA kernels under Nsight Compute, beside iosim's predictions.

:func:`measure` runs one forward and one backward of ``scaled_dot_product_attention``
(flash backend, fp16) under ``ncu --clock-control none`` and returns each kernel launch's
metrics; :func:`compare` puts them beside the ``flash-attn-2`` preset's predictions with
the L2 model and the kernel time model: global-load bytes, L2 reads from the SMs, DRAM
bytes read and written, and time. ``iosim validate --vendor torch-sdpa`` prints the result;
benchmarks/sdpa_ncu.py and sdpa_compare.py do the same over a grid.

Bytes by instruction class are ncu's SASS counts (what the executed instructions asked
for, summed over threads): loads = LD + LDGSTS (``cp.async``), stores = ST, atomics =
RED + ATOM; iosim counts dQaccum's read-modify-write in the main backward kernel as one
atomic of its bytes.
"""

from __future__ import annotations

import json
import os

from ..errors import DependencyError, IosimError
from ..run import Options, simulate
from ..kernels.plan import plan
from ..kernels.tile_tables import kernel_tile
from ..workload.layouts import sdpa_padded
from ..workload.problem import Problem
from .ncu import profile as ncu_profile
from .ncu import raw_exists, read_launches, read_raw
from .sectors import backward_excess, forward_excess, stats_excess

#: ncu's kernel name -> iosim's kernel label in the flash-attn-2 preset
KERNEL_LABELS = {
    "flash_fwd_kernel": "main",
    "flash_fwd_splitkv_kernel": "splitkv",
    "flash_fwd_splitkv_combine_kernel": "combine",
    "flash_bwd_dot_do_o_kernel": "dot_do_o",
    "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel": "dq_dk_dv",
    "flash_bwd_convert_dq_kernel": "convert_dq",
}
#: issue 6's metrics, and the SASS byte counts by instruction class
METRICS = [
    "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",
    "smsp__sass_data_bytes_mem_global_op_ld.sum",
    "smsp__sass_data_bytes_mem_global_op_ldgsts.sum",
    "smsp__sass_data_bytes_mem_global_op_st.sum",
    "smsp__sass_data_bytes_mem_global_op_red.sum",
    "smsp__sass_data_bytes_mem_global_op_atom.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__time_duration.sum",
]
#: issue 6's targets: forward loads exact, backward within 5 %, DRAM reads within 10 %,
#: time within 25 % for N >= 2,048
TARGETS = {"loads_backward": 0.05, "dram_read": 0.10, "time": 0.25, "time_min_seq_len": 2048}


def label(kernel_name: str) -> str:
    name = kernel_name.replace("void ", "").split("<")[0].split("(")[0].strip()
    return KERNEL_LABELS.get(name, name)


def require_torch(vendor: str = "torch-sdpa") -> None:
    """Raise DependencyError unless PyTorch with a CUDA device is importable (``vendor``: the
    ``--vendor`` named in the message)."""
    what = "iosim's Triton kernel through PyTorch" if vendor == "triton" else "PyTorch's kernels"
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - ImportError, or a torch that cannot load CUDA
        raise DependencyError(f"--vendor {vendor} runs {what}, and PyTorch is not importable ({exc}); "
                              "install a CUDA build of torch on a machine with an NVIDIA GPU") from None
    if not torch.cuda.is_available():
        raise DependencyError(f"--vendor {vendor} needs a CUDA GPU, and PyTorch sees none")


def measure(problem, seed: int = 0) -> list[dict]:
    """One launch dict per kernel, in launch order: name, grid, block, metrics."""
    spec = json.dumps(config_of(problem) | {"seed": seed})
    done = ncu_profile("iosim.gpu.sdpa_target", spec, "regex:flash", METRICS)
    if not done.ok:
        raise IosimError(f"ncu on PyTorch's SDPA failed (exit {done.returncode}):\n{(done.stderr + done.stdout)[-3000:]}")
    return read_launches(done.log)


def group_by_config(launches: list[dict]) -> list[list[dict]]:
    """Split a run of several configs into one list of launches per config: each config ran
    one forward (its first launch is ``main`` or ``splitkv``) then one backward."""
    groups: list[list[dict]] = []
    for launch in launches:
        if label(launch["name"]) in ("main", "splitkv") or not groups:
            groups.append([])
        groups[-1].append(launch)
    return groups


def raw_configs(raw_dir: str):
    """The configs of a benchmarks/sdpa_ncu.py run saved in ``raw_dir`` (sdpa_configs.json and
    one sdpa_d{D}.csv per head dim), in launch order: ``(cfg, Problem, launches)`` per config.
    A head dim without its CSV (the run's time ran out) is skipped, and where the target failed
    part way (the CSV ends with its ``#STDERR``: a config PyTorch refused) the configs after the
    groups it ran are; IosimError where a CSV's kernel groups do not match its configs otherwise."""
    with open(os.path.join(raw_dir, "sdpa_configs.json")) as f:
        meta = json.load(f)
    for d, configs in meta["grid"].items():
        path = os.path.join(raw_dir, f"sdpa_d{d}.csv")
        if not raw_exists(path):
            continue
        text = read_raw(path)
        groups = group_by_config(read_launches(text))
        failed = "\n#STDERR\n" in text and len(groups) < len(configs)
        if len(groups) != len(configs) and not failed:
            raise IosimError(f"{path}: {len(groups)} kernel groups for {len(configs)} configs")
        for cfg, launches in zip(configs, groups):
            yield cfg, problem_of(cfg), launches


def config_of(problem) -> dict:
    """The config :mod:`iosim.gpu.sdpa_target` runs for ``problem`` (the inverse of :func:`problem_of`)."""
    cfg = {"seq_len": problem.seq_len_q, "head_dim": problem.head_dim, "batch": problem.batch,
           "heads": problem.heads, "causal": problem.causal}
    if not problem.is_square:
        cfg.update(seq_len_q=problem.seq_len_q, seq_len_kv=problem.seq_len_kv)
    if problem.kv_heads != problem.heads:
        cfg["kv_heads"] = problem.kv_heads
    if problem.dtype != "fp16":
        cfg["dtype"] = problem.dtype
    if problem.layout != "bhnd":
        cfg["layout"] = problem.layout
    return cfg


def problem_of(cfg: dict) -> Problem:
    """The Problem of one measured config (unequal lengths, bf16 and (B, N, H, d) inputs where it says so)."""
    square = cfg.get("seq_len")
    return Problem(seq_len_q=cfg.get("seq_len_q", square), seq_len_kv=cfg.get("seq_len_kv", square),
                   head_dim=cfg["head_dim"], batch=cfg["batch"], heads=cfg["heads"], causal=cfg["causal"],
                   dtype=cfg.get("dtype", "fp16"), kv_heads=cfg.get("kv_heads"), layout=cfg.get("layout", "bhnd"))


def predicted_classes(kernel_bytes: dict, kernel: str) -> dict:
    """Bytes by instruction class for one launch, from iosim's per-kernel bytes."""
    loads = stores = atomics = 0
    for tensor, (r, w) in kernel_bytes.items():
        if tensor == "dQaccum" and kernel == "dq_dk_dv":
            atomics += r  # each atomicAdd reads and writes the same bytes once
            continue
        loads += r
        stores += w
    return {"loads": loads, "stores": stores, "atomics": atomics}


def measured_classes(metrics: dict) -> dict:
    get = lambda k: int(metrics.get(k, 0))  # noqa: E731
    return {
        "loads": get("smsp__sass_data_bytes_mem_global_op_ld.sum") + get("smsp__sass_data_bytes_mem_global_op_ldgsts.sum"),
        "stores": get("smsp__sass_data_bytes_mem_global_op_st.sum"),
        "atomics": get("smsp__sass_data_bytes_mem_global_op_red.sum") + get("smsp__sass_data_bytes_mem_global_op_atom.sum"),
        "l1tex_ld": get("l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum"),
        "dram_read": get("dram__bytes_read.sum"),
        "dram_write": get("dram__bytes_write.sum"),
        "l2_read_from_sm": 32 * get("lts__t_sectors_srcunit_tex_op_read.sum"),
        "time_s": metrics.get("gpu__time_duration.sum", 0.0) * 1e-9,
    }


def predicted(result, kernel: str) -> dict:
    """What iosim predicts for one launch of a ``flash-attn-2`` result (cache model on)."""
    out = predicted_classes(result.kernel_bytes(kernel), kernel)
    t = result.kernel_times.get(kernel)
    out.update(time_s=t.predicted_s if t else None, time_bound=t.bound if t else None)
    if result.cache is not None and kernel in result.cache.kernels:
        s = result.cache.kernels[kernel]
        out.update(dram_read=s.dram_read_bytes, dram_write=s.dram_write_bytes, l2_read=s.read_bytes)
    return out


def l1tex_excess(problem, profile, kernel: str = "dq_dk_dv", result=None) -> int:
    """What the L1 tag stage counts beyond iosim's loads in one of the preset's kernels
    (:mod:`iosim.gpu.sectors`): the main backward kernel's L reads in whole sectors; every
    kernel's Q, K, V (and dO) rows read by ``cp.async`` where a row is no whole number of
    sectors (``result``: the preset's run, for the forward launch's tile and splits)."""
    if kernel == "dq_dk_dv":
        tile = kernel_tile("fa2", problem.head_dim, profile, direction="bwd", causal=problem.causal)
        return stats_excess(problem, tile.block_q, tile.block_kv, tile.stats_loads or 1) + \
            backward_excess(problem, tile.block_q, tile.block_kv)
    if kernel not in ("main", "splitkv") or result is None:
        return 0
    launch = result.options["launches"][0]
    return forward_excess(problem, launch["block_q"], launch["block_kv"], launch.get("num_splits", 1))


def _kernel_head_dim(problem, profile) -> int:
    """kHeadDim of the forward kernels: d rounded up to a compiled size."""
    return kernel_tile("fa2", problem.head_dim, profile).kernel_head_dim or problem.head_dim


def combine_lse_tail(problem, profile) -> int:
    """Bytes the split-KV combine kernel stores past L's real rows, once per launch: it walks
    the B·H·N_q rows of every head as one sequence, kBlockM at a time (4 rows at a kernel head
    dim that is a multiple of 128, 8 at a multiple of 64, else 16), and writes L for every row
    of its last block (PyTorch's LSE is padded: no row check). flash-attn's
    flash_fwd_launch_template.h sets that kBlockM and the grid ⌈B·H·N_q / kBlockM⌉; its
    combine kernel writes ``gLSE`` for every row below kBlockM unless the LSE is unpadded.
    The per-head count cannot place a block that spans heads, so the comparison adds it
    (measured: docs/validation/2026-12-01-sdpa-sectors.md)."""
    head_dim = _kernel_head_dim(problem, profile)
    block = 4 if head_dim % 128 == 0 else 8 if head_dim % 64 == 0 else 16
    return 4 * (-(problem.batch * problem.heads * problem.seq_len_q) % block)


def within(p, m, tol):
    """Whether the prediction ``p`` is within ``tol`` (relative) of the measurement ``m``; None
    where there is no prediction or nothing was measured."""
    return None if p is None or not m else abs(p / m - 1) <= tol


def checks(problem, kernel: str, pred: dict, meas: dict, passes: str) -> dict:
    """Each of issue 6's targets for one launch: True, False, or None where it does not apply.
    Loads meet theirs when the L1 tag stage equals iosim's (in whole sectors where they
    differ), or by the instructions' bytes: exact forward, within 5 % backward (the
    instructions' ``cp.async`` bytes can fall a little short: docs/gpu.md)."""
    tag_exact = meas.get("l1tex_ld") is not None and pred.get("l1tex_loads", pred["loads"]) == meas["l1tex_ld"]
    loads_ok = tag_exact or (pred["loads"] == meas["loads"] if passes == "forward" else
                             within(pred["loads"], meas["loads"], TARGETS["loads_backward"]))
    time_ok = within(pred.get("time_s"), meas["time_s"], TARGETS["time"]) \
        if problem.seq_len_q >= TARGETS["time_min_seq_len"] else None
    return {"loads": loads_ok, "dram_read": within(pred.get("dram_read"), meas["dram_read"], TARGETS["dram_read"]),
            "time": time_ok}


def compare(problem, launches: list[dict], profile, cache: bool = True) -> list[dict]:
    """Rows of predicted against measured, one per launch (PyTorch's launches in order);
    ``cache=False`` skips the L2 model (no DRAM prediction; DRAM time from every request)."""
    result = simulate(profile, "fa2", problem, passes="forward+backward",
                      options=Options(kernel="flash-attn-2", cache=cache))
    forward = {"main", "splitkv", "combine"}
    runs = sdpa_padded(problem)     # the rows the kernels read: d padded to a multiple of 8 (kernels.md §1.1)
    rows = []
    for launch in launches:
        kernel = label(launch["name"])
        if kernel not in result.kernels:
            raise IosimError(f"PyTorch launched {launch['name']!r}, which the flash-attn-2 preset does not predict "
                             f"(preset launches: {', '.join(result.kernels)})")
        pred, meas = predicted(result, kernel), measured_classes(launch["metrics"])
        pred["l1tex_loads"] = pred["loads"] + l1tex_excess(runs, profile, kernel, result)
        if kernel == "combine":
            pred["stores"] += combine_lse_tail(problem, profile)
        passes = "forward" if kernel in forward else "backward"
        rows.append({"kernel": kernel, "pass": passes, "grid": launch["grid"], "predicted": pred, "measured": meas,
                     "within_target": checks(problem, kernel, pred, meas, passes)})
    return rows


def launch_notes(problem, profile) -> dict:
    """pass -> {"l2_note": ..., "time_note": ...}: what the flash-attn-2 preset says of each of its
    launches for ``problem`` where its L2 or time model is known not to be exact
    (docs/known-limits.md); passes without a note are left out."""
    out = {}
    for launch in plan("flash-attn-2", "fa2", problem, profile, "forward+backward"):
        notes = {k: v for k, v in (("l2_note", launch.l2_note), ("time_note", launch.time_note)) if v}
        if notes:
            out[launch.passes] = notes
    return out
