"""iosim's Triton FA2 forward kernel under Nsight Compute, beside the ``triton-fa2`` preset
(``iosim validate --vendor triton``; optional: needs Triton, PyTorch and ncu).

:func:`measure` runs :mod:`iosim.gpu.triton_target` under ``ncu --clock-control none
--profile-from-start off``: per configuration a marker kernel, one launch outside the
profiler range (Triton compiles there), one inside; it returns each configuration's
launches after its marker. :func:`compare` puts the launch beside the preset's prediction
for the same (BLOCK_M, BLOCK_N, num_warps, num_stages): the global loads at the L1's tag
stage (``l1tex__t_bytes_pipe_lsu_mem_global_op_ld``, whole 32-byte sectors, plain loads and
the ``cp.async`` copies Triton's software pipeline issues when num_stages ≥ 2) against the
preset's reads of Q, K and V; the stores the instructions executed (``smsp__sass_data_bytes_
mem_global_op_st``) against its writes of O and L; DRAM reads beside the L2 model's; the time
beside the kernel time model's. Targets: loads and stores exact; DRAM reads within 10 %
(marked, not failed), as ``--vendor torch-sdpa`` applies them.

Why the tag stage and not the instructions' own bytes: on the H200 (docs/validation/
2026-12-01-triton-ncu/), the tag-stage bytes equal the preset's reads on all 25 launches,
while ``smsp__sass_data_bytes_mem_global_op_ldgsts`` fell short by 0.003–0.17 % on 8 of them
(the anomaly docs/gpu.md notes for the CuPy kernels' ``cp.async``); the report shows both.
"""

from __future__ import annotations

import json

from ..errors import IosimError
from ..run import Options, simulate
from .ncu import profile as ncu_profile
from .ncu import read_launches
from .sdpa import TARGETS, within

SASS_LD, SASS_LDGSTS = "smsp__sass_data_bytes_mem_global_op_ld.sum", "smsp__sass_data_bytes_mem_global_op_ldgsts.sum"
SASS_ST = "smsp__sass_data_bytes_mem_global_op_st.sum"
XBAR = "l1tex__m_xbar2l1tex_read_bytes.sum"
LSU_LD = "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum"
TMA_ST = "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum"
DRAM_READ, DRAM_WRITE, TIME = "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"
REGISTERS = "launch__registers_per_thread"
#: what :func:`measure` asks ncu for (the loads' candidates beside the ones compared)
METRICS = [SASS_LD, SASS_LDGSTS, SASS_ST, XBAR, LSU_LD, TMA_ST, DRAM_READ, DRAM_WRITE, TIME, REGISTERS]
NCU_OPTIONS = ("--profile-from-start", "off", "--apply-rules", "no")
KERNEL = "_fa2_forward"


def spec_of(problem, config) -> dict:
    """The config :mod:`iosim.gpu.triton_target` runs for ``problem`` and a TritonConfig."""
    return {"seq_len": problem.seq_len_q, "head_dim": problem.head_dim, "batch": problem.batch,
            "heads": problem.heads, "causal": problem.causal, "dtype": problem.dtype,
            "block_m": config.block_m, "block_n": config.block_n, "num_warps": config.num_warps,
            "num_stages": config.num_stages}


def measure(specs: list[dict], ncu: str | None = None) -> list[list[dict]]:
    """Per spec (:func:`spec_of`), the launches ncu profiled after its marker."""
    return launches_of(profile_raw(specs, ncu), len(specs))


def profile_raw(specs: list[dict], ncu: str | None = None) -> str:
    """ncu's metric CSV for the specs (IosimError where ncu failed)."""
    done = ncu_profile("iosim.gpu.triton_target", json.dumps(specs), "regex:.", METRICS, NCU_OPTIONS, ncu=ncu)
    if not done.ok:
        said = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        raise IosimError(f"ncu on iosim's Triton kernel failed (exit {done.returncode}): "
                         f"{said[-1].strip() if said else 'no output'}")
    return done.log


def launches_of(log: str, count: int) -> list[list[dict]]:
    """The launches after each of ``count`` markers in ncu's CSV ``log``."""
    from .cudnn import split_by_marker

    groups, _ = split_by_marker(read_launches(log))
    if len(groups) != count:
        raise IosimError(f"ncu measured {len(groups)} marker launches for {count} configurations")
    return groups


def predict(problem, config, profile, cache: bool = True):
    """The ``triton-fa2`` preset's result for ``problem`` with ``config``."""
    return simulate(profile, "fa2", problem, options=Options(kernel="triton-fa2", kernel_config=config.key(),
                                                             cache=cache))


def compare(problem, config, launches: list[dict], profile, cache: bool = True) -> dict:
    """The one launch of the Triton kernel beside the preset: {checks, predicted, measured,
    within_target}; IosimError where ncu saw other launches."""
    names = [x["name"] for x in launches]
    if len(launches) != 1 or KERNEL not in names[0]:
        raise IosimError(f"expected one launch of {KERNEL}, ncu saw {', '.join(names) or 'none'}")
    m = launches[0]["metrics"]
    missing = [metric for metric in (LSU_LD, SASS_ST, DRAM_READ, TIME) if metric not in m]
    if missing:
        raise IosimError(f"ncu reported no {', '.join(missing)} (this ncu may not know it)")
    result = predict(problem, config, profile, cache)
    kb = result.kernel_bytes("main")
    loads = sum(kb.get(t, (0, 0))[0] for t in ("Q", "K", "V"))
    stores = sum(kb.get(t, (0, 0))[1] for t in ("O", "L"))
    checks = [{"quantity": "loads", "metric": LSU_LD, "predicted": int(loads), "measured": int(m[LSU_LD])},
              {"quantity": "stores", "metric": SASS_ST, "predicted": int(stores), "measured": int(m[SASS_ST])}]
    for c in checks:
        c["ok"] = c["predicted"] == c["measured"]
    stats = result.cache.kernels.get("main") if result.cache is not None else None
    dram = None if stats is None else stats.dram_read_bytes
    measured = {"dram_read": int(m[DRAM_READ]), "dram_write": int(m.get(DRAM_WRITE, 0)), "time_s": m[TIME] * 1e-9,
                "registers": m.get(REGISTERS), "xbar_read": m.get(XBAR),
                "sass_load_bytes": int(m.get(SASS_LD, 0) + m.get(SASS_LDGSTS, 0))}
    return {"name": names[0], "grid": launches[0]["grid"], "block": launches[0]["block"], "checks": checks,
            "predicted": {"dram_read": dram, "time_s": result.time.predicted_s,
                          "time_model": "kernel time model" if result.kernel_times else "roofline (a lower bound)"},
            "measured": measured,
            "within_target": {"loads": checks[0]["ok"], "stores": checks[1]["ok"],
                              "dram_read": within(dram, measured["dram_read"], TARGETS["dram_read"])}}
