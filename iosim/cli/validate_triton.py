"""``iosim validate --vendor triton``: iosim's own Triton FA2 forward kernel under Nsight
Compute, its one launch beside the ``triton-fa2`` preset (:mod:`iosim.gpu.triton_ncu`).

``--kernel-config BM,BN,W,S`` picks (BLOCK_M, BLOCK_N, num_warps, num_stages) (default the
preset's, 128,64,4,3). The problem and the configuration are checked first, as the preset
checks them (MHA with N_q = N_kv, fp16 or bf16, a head dim the kernel is written for, a
configuration Triton can launch on the profile's GPU): what it refuses is refused here, in
one line, exit 2, before PyTorch, Triton or ncu is looked for. Exit 0 when the loads and
stores are exact, 1 otherwise; DRAM reads outside 10 % are marked but do not fail the run.
"""

from __future__ import annotations

import argparse
import json

from ..errors import DependencyError, IosimError, ProblemError
from ..kernels.triton_preset import DEFAULT_CONFIG, HEAD_DIMS, TritonConfig
from ..run.setup import resolve_profile
from .arguments import problem_from_args
from .validate_cudnn import bytes_cell, ratio_cell


def run(args: argparse.Namespace) -> int:
    from ..gpu import sdpa, triton_ncu
    from ..gpu.ncu import find_ncu

    problem, config, profile = checked(args)
    sdpa.require_torch("triton")
    try:
        import triton  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - ImportError, or a Triton that cannot load
        raise DependencyError(f"--vendor triton runs iosim's Triton kernel, and Triton is not importable ({exc}); "
                              "pip install triton (it comes with CUDA builds of PyTorch)") from None
    launches = triton_ncu.measure([triton_ncu.spec_of(problem, config)], ncu=find_ncu())[0]
    report = report_of(problem, config, profile, launches)
    print(json.dumps(report, indent=2) if args.format == "json" else format_table(report))
    return 0 if report["ok"] else 1


def checked(args: argparse.Namespace) -> tuple:
    """(problem, TritonConfig, profile), or the preset's refusal, worded for this command."""
    from ..gpu.triton_ncu import predict

    problem = problem_from_args(args)
    config = TritonConfig.parse(args.kernel_config if args.kernel_config is not None else DEFAULT_CONFIG)
    profile = resolve_profile(args.hw)
    if problem.dtype not in ("fp16", "bf16"):
        raise ProblemError(f"--vendor triton: the kernel takes fp16 or bf16, not {problem.dtype}", field="dtype")
    if problem.head_dim not in HEAD_DIMS:
        raise ProblemError(f"--vendor triton: the kernel takes head dims {', '.join(map(str, HEAD_DIMS))} (tl.arange "
                           f"needs a power of two), not {problem.head_dim}", field="head_dim")
    try:
        predict(problem, config, profile, cache=False)
    except IosimError as exc:
        raise type(exc)(str(exc).replace("kernel='triton-fa2'", "--vendor triton"), field=exc.field) from None
    return problem, config, profile


def report_of(problem, config, profile, launches: list[dict], cache: bool = True) -> dict:
    """The report of the kernel's ``launches`` (what :func:`run` prints)."""
    from ..gpu import triton_ncu

    row = triton_ncu.compare(problem, config, launches, profile, cache=cache)
    return {"vendor": "triton", "hw_profile": profile.name, "problem": triton_ncu.spec_of(problem, config),
            "targets": {"loads": "exact", "stores": "exact", "dram_read": 0.10}, "launch": row,
            "ok": row["within_target"]["loads"] and row["within_target"]["stores"]}


def format_table(report: dict) -> str:
    p, r = report["problem"], report["launch"]
    head = f"{'quantity':<10} {'ncu metric':<50} {'iosim':>15} {'ncu':>15} {'ncu/iosim':>9}"
    lines = [f"iosim's Triton FA2 forward under ncu vs iosim --kernel triton-fa2 on {report['hw_profile']}: "
             f"N={p['seq_len']} d={p['head_dim']} B={p['batch']} H={p['heads']} {p['dtype']}"
             f"{' causal' if p['causal'] else ''}, config {p['block_m']}x{p['block_n']} w{p['num_warps']} "
             f"s{p['num_stages']} (grid {r['grid']})",
             "(* = outside its target: loads and stores exact; DRAM read within 10 %, marked only)", "", head,
             "-" * len(head)]
    for c in r["checks"]:
        lines.append(f"{c['quantity']:<10} {c['metric'].split('.')[0]:<50} {c['predicted']:>15,} "
                     f"{c['measured']:>15,} {ratio_cell(c['predicted'], c['measured']):>9}{'' if c['ok'] else ' *'}")
    pr, me = r["predicted"], r["measured"]
    dram = pr["dram_read"]
    ratio = "-" if not dram else f"{me['dram_read'] / dram:.3f}"
    mark = " *" if r["within_target"]["dram_read"] is False else ""
    lines.append(f"{'DRAM read':<10} {'dram__bytes_read (iosim: L2 model)':<50} {bytes_cell(dram):>15} "
                 f"{me['dram_read']:>15,} {ratio:>9}{mark}")
    lines += [f"{'time':<10} {'gpu__time_duration (iosim: ' + pr['time_model'] + ')':<50} "
              f"{pr['time_s'] * 1e6:>12.1f} µs {me['time_s'] * 1e6:>12.1f} µs",
              "", "loads and stores exact" if report["ok"] else "MISMATCH in the loads or stores: see above"]
    return "\n".join(lines)
