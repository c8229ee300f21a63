"""``iosim validate --vendor cudnn``: PyTorch's cuDNN fused attention (forward and backward)
under Nsight Compute, each launch beside the ``cudnn`` preset (:mod:`iosim.gpu.cudnn`).

The problem is checked first, as the preset checks it (a Hopper profile, fp16 or bf16,
d ≤ 256, causal only with N_q = N_kv; a forward of one query row, cuDNN's decode kernels, at
head dims that are multiples of 16, with groups of at most 16 query heads, on a 132-SM GPU):
what it refuses is refused here, in one line, exit 2, before PyTorch or ncu is looked for.
Exit 0 when every load count meets its target (the forward's exact, the backward's within
5 %), 1 otherwise; DRAM reads outside 10 % and
stores or reductions that are not exact are marked but do not fail the run.
"""

from __future__ import annotations

import argparse
import json

from ..errors import IosimError
from ..kernels.cudnn_preset import check_problem
from ..run.setup import resolve_profile
from .arguments import problem_from_args


def run(args: argparse.Namespace) -> int:
    from ..gpu import cudnn, sdpa
    from ..gpu.ncu import find_ncu

    problem = problem_from_args(args)
    profile = resolve_profile(args.hw)
    try:
        check_problem(problem, profile)
    except IosimError as exc:
        raise type(exc)(str(exc).replace("kernel='cudnn'", "--vendor cudnn"), field=exc.field) from None
    sdpa.require_torch("cudnn")
    ncu = find_ncu()
    report = report_of(problem, profile, cudnn.measure(problem, seed=args.seed, ncu=ncu))
    print(json.dumps(report, indent=2) if args.format == "json" else format_table(report))
    return 0 if report["ok"] else 1


def report_of(problem, profile, launches: list[dict], cache: bool = True) -> dict:
    """The report of cuDNN's ``launches`` for ``problem`` (what :func:`run` prints)."""
    from ..gpu import cudnn, sdpa

    body = cudnn.compare(problem, launches, profile, cache=cache)
    ok = all(r["within_target"]["loads"] for r in body["launches"])
    return {"vendor": "cudnn", "hw_profile": profile.name,
            "problem": sdpa.config_of(problem) | {"dtype": problem.dtype, "kv_heads": problem.kv_heads,
                                                  "seq_len_kv": problem.seq_len_kv},
            "targets": {"loads_forward": "exact", "loads_backward": sdpa.TARGETS["loads_backward"],
                        "dram_read": sdpa.TARGETS["dram_read"]},
            **body, "ok": ok}


def ratio_cell(predicted, measured) -> str:
    """measured ÷ predicted as a report shows it ("exact" when equal; "-" without both)."""
    if predicted is None or not measured or not predicted:
        return "exact" if predicted == measured else "-"
    return "exact" if predicted == measured else f"{measured / predicted:.5f}"


def bytes_cell(value) -> str:
    return "-" if value is None else f"{value:,}"


def _launch_lines(r: dict) -> list[str]:
    lines = []
    for i, c in enumerate(r["checks"]):
        mark = "" if c["ok"] else " *"
        lines.append(f"{r['kernel'] if i == 0 else '':<18} {c['quantity']:<18} {c['metric'].split('.')[0]:<54} "
                     f"{c['predicted']:>15,} {c['measured']:>15,} {ratio_cell(c['predicted'], c['measured']):>8}{mark}")
    pr, me = r["predicted"], r["measured"]
    dram_mark = " *" if r["within_target"]["dram_read"] is False else ""
    for what, key, mark in (("read", "dram_read", dram_mark), ("write", "dram_write", "")):
        lines.append(f"{'':<18} {'DRAM ' + what:<18} {f'dram__bytes_{what} (iosim: L2 model)':<54} "
                     f"{bytes_cell(pr[key]):>15} {me[key]:>15,} {ratio_cell(pr[key], me[key]):>8}{mark}")
    ms = f"{me['time_s'] * 1e3:.4g} ms"
    model = "-" if pr.get("time_s") is None else f"{pr['time_s'] * 1e3:.4g} ms"
    ratio = "-" if pr.get("time_s") is None or not me["time_s"] else f"{me['time_s'] / pr['time_s']:.3f}"
    lines.append(f"{'':<18} {'time':<18} {'gpu__time_duration':<54} {model:>15} {ms:>15} {ratio:>8}")
    return lines


def format_table(report: dict) -> str:
    p, t = report["problem"], report["time"]
    kv_len = "" if p["seq_len_kv"] == p["seq_len"] else f", N_kv={p['seq_len_kv']}"
    kv_heads = "" if p["kv_heads"] == p["heads"] else f" H_kv={p['kv_heads']}"
    head = f"{'launch':<18} {'quantity':<18} {'ncu metric':<54} {'iosim B':>15} {'ncu B':>15} {'ncu/iosim':>8}"
    lines = [f"PyTorch SDPA (cuDNN) under ncu vs iosim --kernel cudnn on {report['hw_profile']}: "
             f"N={p['seq_len']}{kv_len} d={p['head_dim']} B={p['batch']} H={p['heads']}{kv_heads} {p['dtype']}"
             f"{' causal' if p['causal'] else ''}",
             "(* = outside its target: forward loads exact, backward loads within 5 %, stores and reductions "
             "exact; DRAM read within 10 %, marked only)", "", head, "-" * len(head)]
    for r in report["launches"]:
        lines += _launch_lines(r)
    off = report.get("l2_model_off")
    lines += ["", f"time: ncu {t['measured_s'] * 1e3:.4g} ms over {len(report['launches'])} launches; "
              f"iosim {t['predicted_s'] * 1e3:.4g} ms ({t['bound']})"
              + {"all": ", a lower bound", "part": ", in part a lower bound (the roofline's passes)"}.get(
                  t["lower_bound"], "")]
    lines += [f"  {passes}: {model}" for passes, model in t["models"].items()]
    if off:
        lines.append(f"L2 model off ({off}): no DRAM prediction")
    checks = [c for r in report["launches"] for c in r["checks"]]
    exact = sum(c["predicted"] == c["measured"] for c in checks)
    lines += ["", f"{exact} of {len(checks)} byte counts exact; "
              + ("load counts meet their targets" if report["ok"] else "MISMATCH in the load counts: see above")]
    return "\n".join(lines)
