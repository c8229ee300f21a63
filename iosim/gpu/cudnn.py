"""cuDNN's fused attention (PyTorch's ``SDPBackend.CUDNN_ATTENTION``) under Nsight Compute,
beside the ``cudnn`` preset's predictions (``iosim validate --vendor cudnn``).

:func:`measure` runs one forward and one backward as benchmarks/sdpa_ncu.py ``--backend cudnn``
measured them (docs/validation/2026-12-01-cudnn/): ``ncu --clock-control none
--profile-from-start off``, a marker kernel in a profiler range of its own, one unprofiled
run (cuDNN builds its plan there), then one run inside a profiler range; it returns the
launches after the marker. :func:`compare` puts each launch beside the preset, quantity by
quantity: the Hopper kernels' loads (TMA loads, plain loads and the tile scheduler's atomics)
against the L1's crossbar bytes ``l1tex__m_xbar2l1tex_read_bytes``, the element-wise kernels'
against the SASS load bytes, stores (SASS), TMA stores and TMA reductions
(``l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_{st,red}``); DRAM bytes beside the L2
model's; the launches' time beside the roofline of the whole run, a lower bound (the preset
has no kernel time model). At a head dim that is no multiple of 16 the Hopper kernels' TMA boxes
carry more than their rows' bytes (:mod:`.cudnn_tma`), and the decode kernel's LSU counts more
(:mod:`.cudnn_lsu`). benchmarks/cudnn_compare.py ``--preset`` runs the same comparison over the
committed measurement.

Targets (issue 6's, as ``--vendor torch-sdpa`` applies them): the forward's loads exact, the
backward's within 5 %; DRAM reads within 10 % (marked, not failed). Stores and reductions are
marked where they are not exact.
"""

from __future__ import annotations

import json

import numpy as np

from ..errors import IosimError, ProblemError
from ..kernels.cudnn_preset import (REDUCE_ELEMENTS, SCHEDULER_SECTOR, convert_dq_elements, cudnn_tiles,
                                    persistent_grid, scheduler_bytes)
from ..run import Options, simulate
from .cudnn_lsu import LSU_LD, LSU_ST, decode_checks
from .cudnn_tma import bprop_load_excess, dkdv_store_excess, fprop_excess
from .ncu import profile as ncu_profile
from .ncu import read_launches
from .sdpa import TARGETS, config_of, within
from .sdpa_target import MARKER_KERNEL

XBAR = "l1tex__m_xbar2l1tex_read_bytes.sum"
SASS_LD, SASS_ST = "smsp__sass_data_bytes_mem_global_op_ld.sum", "smsp__sass_data_bytes_mem_global_op_st.sum"
TMA_ST = "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum"
TMA_RED = "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_red.sum"
DRAM_READ, DRAM_WRITE, TIME = "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"
#: what :func:`measure` asks ncu for (the LSU's bytes for the decode forward's kernels)
METRICS = [XBAR, SASS_LD, SASS_ST, TMA_ST, TMA_RED, LSU_LD, LSU_ST, DRAM_READ, DRAM_WRITE, TIME]
#: ncu's options for cuDNN's launches: only the profiler ranges, the launch statistics section
#: (cluster sizes among them), no rule analysis, demangled names
NCU_OPTIONS = ["--profile-from-start", "off", "--section", "LaunchStats", "--apply-rules", "no",
               "--print-kernel-base", "demangled"]
#: a part of cuDNN's kernel name -> its label here
KERNELS = (("sm80_flash_fprop", "decode"), ("lean_reduction", "reduction"), ("flash_fprop", "fprop"),
           ("compute_dot_do_o", "dot_do_o"), ("flash_bprop", "bprop"), ("convert_dq_to_16bits", "convert_dq"),
           ("fmha_reduce_head", "reduce_head"))
#: cuDNN's forward kernels' labels (the rest are the backward's)
FORWARD_KERNELS = ("fprop", "decode", "reduction")


def label(name: str) -> str:
    """The label of one of cuDNN's kernels (the name itself where it is none of them)."""
    return next((short for part, short in KERNELS if part in name), name)


def split_by_marker(launches: list[dict], marker: str = MARKER_KERNEL) -> tuple[list[list[dict]], list[dict]]:
    """The launches after each marker launch (one group per config), and any before the first."""
    groups, before = [], []
    for launch in launches:
        if marker in launch["name"]:
            groups.append([])
        else:
            (groups[-1] if groups else before).append(launch)
    return groups, before


def measure(problem, seed: int = 0, ncu: str | None = None) -> list[dict]:
    """cuDNN's launches for ``problem`` (forward, then backward), each {name, grid, block, metrics}."""
    spec = json.dumps(config_of(problem) | {"backend": "cudnn", "ranges": True, "seed": seed})
    done = ncu_profile("iosim.gpu.sdpa_target", spec, "regex:.", METRICS, tuple(NCU_OPTIONS), ncu=ncu)
    if not done.ok:
        said = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        raise IosimError(f"ncu on PyTorch's cuDNN SDPA failed (exit {done.returncode}): "
                         f"{said[-1].strip() if said else 'no output'}")
    groups, _ = split_by_marker(read_launches(done.log))
    if len(groups) != 1 or not groups[0]:
        raise IosimError(f"ncu measured {len(groups)} marker launches and {sum(map(len, groups))} launches "
                         "after them; expected one marker and cuDNN's launches")
    return groups[0]


def predict(problem, profile, cache: bool = True):
    """(the preset's forward+backward result, why the L2 model is off or None); the L2 model is
    left off where it would play too many accesses."""
    run = lambda c: simulate(profile, "fa2", problem, passes="forward+backward",  # noqa: E731
                             options=Options(kernel="cudnn", cache=c))
    if not cache:
        return run(False), "not asked for"
    try:
        return run(True), None
    except ProblemError as exc:
        if getattr(exc, "field", None) != "cache":
            raise
        return run(False), str(exc).split(":")[0]


def predicted_launches(result, profile) -> list[dict]:
    """The preset's launches in PyTorch's order: kernel, iosim (the preset's kernel), pass, and
    checks [(quantity, kind, metric, bytes)] with kind load, store or reduction."""
    p, sms = result.problem, profile.sm_count
    kb = {k: result.kernel_bytes(k) for k in result.kernels}
    rd = lambda k, *ts: sum(kb[k].get(t, (0, 0))[0] for t in ts)  # noqa: E731
    wr = lambda k, *ts: sum(kb[k].get(t, (0, 0))[1] for t in ts)  # noqa: E731
    heads = p.batch * p.heads
    fwd, bwd = cudnn_tiles(p, profile)                  # tiles of B_r query rows; of B_c keys, each of 1 or 2 blocks
    fwd_tiles = heads * -(-p.seq_len_q // fwd.block_q)
    bwd_tiles = heads * -(-p.seq_len_kv // bwd.block_kv) * bwd.blocks_per_tile
    acc = 4 * heads * (convert_dq_elements(p.seq_len_q, p.head_dim) - p.seq_len_q * p.head_dim)  # overlap, fp32
    if "decode" in kb:      # one query row: cuDNN's sm80 decode kernel and its reduction (iosim.gpu.cudnn_lsu)
        out = decode_checks(p, result.options["num_splits"], rd, wr, SASS_ST)
    else:
        loads, o_store = fprop_excess(p)          # rows that are no whole sectors (cudnn_tma)
        out = [("fprop", "main", [("loads", "load", XBAR, rd("main", "Q", "K", "V") + scheduler_bytes(fwd_tiles, sms)
                                   + loads),
                                  ("O (TMA st)", "store", TMA_ST, wr("main", "O") + o_store),
                                  ("L (st)", "store", SASS_ST, wr("main", "L"))])]
    out += [("dot_do_o", "dot_do_o", [("loads", "load", SASS_LD, rd("dot_do_o", "O", "dO")),
                                     ("stores", "store", SASS_ST, wr("dot_do_o", "D", "dQaccum"))]),
           ("bprop", "dq_dk_dv", [
               ("loads", "load", XBAR, rd("dq_dk_dv", "K", "V", "Q", "dO") + scheduler_bytes(bwd_tiles, sms)
                + stats_xbar_bytes(p, rd("dq_dk_dv", "L", "D"), bwd_tiles, sms) + bprop_load_excess(p, bwd.blocks_per_tile)),
               ("L, D (ld)", "load", SASS_LD, rd("dq_dk_dv", "L", "D") * stats_load_copies(p)),
               ("dK, dV (TMA st)", "store", TMA_ST, wr("dq_dk_dv", "dK", "dV", "dK_expanded", "dV_expanded")
                + dkdv_store_excess(p)),
               ("dQaccum (TMA red)", "reduction", TMA_RED, wr("dq_dk_dv", "dQaccum"))]),
           ("convert_dq", "convert_dq", [("loads", "load", SASS_LD, rd("convert_dq", "dQaccum") + acc),
                                         ("stores", "store", SASS_ST, wr("convert_dq", "dQ") + acc // 2)])]
    if p.group_size > 1:  # the two fmha_reduce_head launches are one kernel of the preset
        reduce, kv = kb["reduce_dkv"], p.batch * p.kv_heads
        over = 2 * kv * (convert_dq_elements(p.seq_len_kv, p.head_dim, REDUCE_ELEMENTS) - p.seq_len_kv * p.head_dim)
        out += [(f"reduce_head {t}", "reduce_dkv", [("loads", "load", SASS_LD, reduce[f"{t}_expanded"][0] + p.group_size * over),
                                                    ("stores", "store", SASS_ST, reduce[t][1] + over)]) for t in ("dK", "dV")]
    return [{"kernel": k, "iosim": i, "pass": "forward" if k in FORWARD_KERNELS else "backward", "checks": c}
            for k, i, c in out]


def stats_xbar_bytes(p, schedule_bytes: int, tiles: int, sm_count: int) -> int:
    """The bprop's loads of L and D through the crossbar: the schedule's bytes, but at one query row
    the sectors each thread block's tiles touch, once (the L1 keeps them for its next tiles). There
    a head's L (and D) is one fp32 value, 8 heads a sector; the persistent grid's block c takes
    tiles c, c + grid, … (a static order; the kernel's counter hands them out as blocks finish,
    so where a block takes several tiles the run's order may differ a little), in order of query
    head, then key tile (read from the decode grids' 244 backward launches, H200 and H100:
    docs/validation/2026-12-06-cudnn-decode-preset.md)."""
    if p.seq_len_q != 1:
        return schedule_bytes
    grid = persistent_grid(tiles, sm_count)
    units = np.arange(tiles)
    sector_of = units // (tiles // (p.batch * p.heads)) // 8
    pairs = np.unique(np.stack([units % grid, sector_of]), axis=1).shape[1]   # distinct (block, sector)
    return 2 * SCHEDULER_SECTOR * pairs


def stats_load_copies(p) -> int:
    """How many times the bprop's instructions load each L and D value: 8 at one query row of
    one batch, else once. Measured on all 14 such launches of the decode grids (H200 and H100,
    d = 32-256, docs/validation/2026-12-06-cudnn-decode-preset.md): 8 × the bytes in the SASS loads, none
    more through the crossbar (the copies share a sector); at B ≥ 2 or N_q ≥ 2 once (every other
    committed launch). Why B = 1 differs was not found."""
    return 8 if p.seq_len_q == 1 and p.batch == 1 else 1


def _check(quantity: str, kind: str, metric: str, predicted: int, measured: int, passes: str) -> dict:
    if kind == "load" and passes == "backward":
        ok = within(predicted, measured, TARGETS["loads_backward"]) if measured else predicted == 0
    else:
        ok = predicted == measured
    return {"quantity": quantity, "kind": kind, "metric": metric, "predicted": int(predicted),
            "measured": int(measured), "ok": ok}


def _dram(result, pred: dict, twice: bool) -> dict:
    """The L2 model's DRAM bytes of one launch's kernel; None without the model, or where the
    preset's kernel is two of cuDNN's launches (``twice``)."""
    stats = None if result.cache is None or twice else result.cache.kernels.get(pred["iosim"])
    return {"read": None if stats is None else stats.dram_read_bytes,
            "write": None if stats is None else stats.dram_write_bytes}


def compare(problem, launches: list[dict], profile, cache: bool = True) -> dict:
    """cuDNN's ``launches`` beside the preset: {launches: one row per launch, time, l2_model_off}.
    IosimError where the launches are not the preset's, in order."""
    result, l2_off = predict(problem, profile, cache)
    predicted = predicted_launches(result, profile)
    got = [label(x["name"]) for x in launches]
    if got != [p["kernel"].split()[0] for p in predicted]:
        raise IosimError(f"cuDNN launched {', '.join(got) or 'nothing'}; the cudnn preset predicts "
                         f"{', '.join(p['kernel'] for p in predicted)}")
    twice = sum(p["iosim"] == "reduce_dkv" for p in predicted) > 1
    rows = []
    for launch, pred in zip(launches, predicted):
        m = launch["metrics"]
        missing = [metric for _, _, metric, _ in pred["checks"] if metric not in m]
        if missing:
            raise IosimError(f"ncu reported no {', '.join(missing)} for {pred['kernel']} (this ncu may not know it)")
        checks = [_check(q, kind, metric, value, m[metric], pred["pass"]) for q, kind, metric, value in pred["checks"]]
        dram = _dram(result, pred, twice and pred["iosim"] == "reduce_dkv")
        measured = {"dram_read": int(m.get(DRAM_READ, 0)), "dram_write": int(m.get(DRAM_WRITE, 0)),
                    "time_s": m.get(TIME, 0.0) * 1e-9}
        timed = result.kernel_times.get(pred["iosim"]) if not twice or pred["iosim"] != "reduce_dkv" else None
        rows.append({"kernel": pred["kernel"], "name": launch["name"], "pass": pred["pass"], "grid": launch["grid"],
                     "checks": checks, "predicted": {"dram_read": dram["read"], "dram_write": dram["write"],
                                                     "time_s": timed.predicted_s if timed else None},
                     "measured": measured,
                     "within_target": {"loads": all(c["ok"] for c in checks if c["kind"] == "load"),
                                       "dram_read": within(dram["read"], measured["dram_read"], TARGETS["dram_read"])}})
    models = {launch["pass"]: launch["time_model"] for launch in result.options["launches"]}
    bounds = [m.startswith("roofline") for m in models.values()]
    time = {"measured_s": sum(r["measured"]["time_s"] for r in rows), "predicted_s": result.time.predicted_s,
            "bound": result.time.bound, "lower_bound": "all" if all(bounds) else "part" if any(bounds) else None,
            "models": models}
    return {"launches": rows, "time": time, "l2_model_off": l2_off}
