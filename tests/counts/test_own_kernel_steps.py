"""iosim's own kernels' measured steps (docs/triton.md, "Measured steps"; docs/gpu.md): the
shipped tables are what the committed timings give, the triton-fa2 preset, its time model and
the CuPy kernel's use them on the GPU they were measured on and say when they do not, and the
arithmetic is the documented one."""

import dataclasses
import json
import math
import os
import sys
from importlib import resources

import pytest

from iosim import Options, Problem, load_profile, simulate
from iosim.kernels.triton_preset import TritonConfig, triton_tile
from iosim.kernels.measured_steps import MeasuredStep, measured_step
from iosim.models import triton_time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = os.path.join(ROOT, "docs", "validation", "2026-12-02-triton-steps")
CUPY_STEPS = os.path.join(ROOT, "docs", "validation", "2026-12-02-cupy-steps")
H200 = load_profile("h200")
UNITS = ("tensor cores", "shared memory", "exp", "fp32")


def _steps_table():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import steps_table
    finally:
        sys.path.pop(0)
    return steps_table


@pytest.mark.parametrize("kernel,folders,name,count", [
    # every configuration that fits (run3: the 256-row ones at N = 8,448 and 16,896, whole waves),
    # less three 256-row ones that spill (past run3's time budget)
    ("triton-fa2", [STEPS] + [os.path.join(STEPS, r) for r in ("run1", "run3", "run4")], "triton_steps_h200.json", 459),
    ("cupy-fa2-mma", [CUPY_STEPS], "cupy_fa2_steps_h200.json", 32),                          # 16 tiles x d = 64, 128
])
def test_the_shipped_tables_are_what_the_committed_timings_give(kernel, folders, name, count):
    steps_table = _steps_table()
    derived = steps_table.table(folders, kernel)
    shipped = json.loads(resources.files("iosim.kernels").joinpath(name).read_text())
    assert json.loads(steps_table.dumps(derived)) == shipped
    assert len(shipped["entries"]) == count and shipped["kernel"] == kernel


def test_lookup_by_gpu_config_and_head_dim():
    m = measured_step("triton-fa2", "h200", (128, 64, 4, 3), 128)
    assert m is not None and m.blocks_per_sm == 1 and m.step_s > 0 and "H200" in m.source
    assert measured_step("triton-fa2", "h100-sxm", (128, 64, 4, 3), 128) is None     # another GPU
    assert measured_step("triton-fa2", "h200", (128, 64, 4, 3), 256) is None         # head dim not measured
    assert measured_step("cupy-fa2-mma", "h200", (128, 64, 4, 3), 128) is None       # another kernel's key
    tile = triton_tile(TritonConfig(128, 64, 4, 3), 128, "fp16", H200)
    assert tile.measured == m and tile.registers == m.registers        # the compiled kernel's registers
    assert triton_time.blocks_per_sm(tile, H200) == m.blocks_per_sm    # CUDA's occupancy


def test_round_step_between_the_lone_and_the_full_round():
    m = MeasuredStep(4, 4e-6, 1e-6, 5e-6, 1e-6, None, 100, 0, 1, "test")
    assert m.round_step(4, 0.5) == 4e-6 and m.round_step(9, 0.5) == 4e-6
    assert m.round_step(1, 0.5) == 1e-6
    assert m.round_step(3, 0.5) == pytest.approx(1e-6 + 3e-6 * 2 / 3, rel=1e-15)
    unmeasured = dataclasses.replace(m, lone_step_s=None)
    assert unmeasured.round_step(2, 0.6) == pytest.approx(2.4e-6, rel=1e-15)   # the analytic ratio


def _run(profile, problem, config):
    return simulate(profile, "fa2", problem, options=Options(kernel="triton-fa2", kernel_config=config, cache=False))


def test_uniform_launch_is_fill_waves_and_rounds_of_measured_steps():
    """N = 2,048, 16 heads, 64×64 with 4 warps, 3 stages, d = 128: 32 blocks a head, 512 in
    all; k blocks an SM (measured); the busiest SM runs ceil(512 / 132) = 4 blocks in rounds."""
    cfg, n = (64, 64, 4, 3), 2048
    r = _run("h200", Problem(seq_len=n, head_dim=128, heads=16), cfg)
    m = measured_step("triton-fa2", "h200", cfg, 128)
    per_sm, k = math.ceil(512 / 132), m.blocks_per_sm
    rounds = [k] * (per_sm // k) + ([per_sm % k] if per_sm % k else [])
    steps = n // 64
    full = m.fill_s + (len(rounds) - 1) * m.wave_s + sum(steps * m.round_step(x, 1.0) for x in rounds)
    t = r.kernel_times["main"]
    assert sum(t.per_resource_s[u] for u in UNITS) == pytest.approx(full, rel=1e-12)
    assert r.options["launches"][0]["time_model"].startswith("kernel time model (steps measured on the NVIDIA H200")


def test_causal_launch_takes_the_causal_kernels_step():
    problem = Problem(seq_len=2048, head_dim=64, heads=8, causal=True)
    cfg = (128, 64, 4, 3)
    tile = triton_tile(TritonConfig(*cfg), 64, "fp16", H200)
    slower = dataclasses.replace(tile, measured=dataclasses.replace(tile.measured,
                                                                    causal_step_s=2 * tile.measured.causal_step_s))
    r = _run("h200", problem, cfg)
    requested, dram, work = _traffic(r)
    base = triton_time.predict(H200, "fp16", tile, requested, dram, work, causal=True)["main"]
    more = triton_time.predict(H200, "fp16", slower, requested, dram, work, causal=True)["main"]
    dense = triton_time.predict(H200, "fp16", slower, requested, dram, work, causal=False)["main"]
    assert base.predicted_s == pytest.approx(r.kernel_times["main"].predicted_s, rel=1e-12)
    assert more.predicted_s > 1.5 * base.predicted_s          # the causal step is the one used
    assert dense.predicted_s < more.predicted_s               # a dense kernel's step is not


def _traffic(result):
    from iosim.run.kernel_timing import kernel_traffic
    return kernel_traffic(result)


def test_an_unmeasured_gpu_keeps_the_analytic_steps_and_says_so():
    r = _run("h100-sxm", Problem(seq_len=2048, head_dim=128, heads=16), (128, 64, 4, 3))
    assert r.options["launches"][0]["time_model"].startswith("kernel time model (analytic steps")
    assert triton_tile(TritonConfig(128, 64, 4, 3), 128, "fp16", load_profile("h100-sxm")).measured is None


def test_explore_names_what_timed_its_steps():
    from iosim.studies.explore.triton_configs import explore_triton
    problem = Problem(seq_len=1024, head_dim=64, heads=4)
    configs = [(64, 64, 4, 3), (128, 64, 4, 3)]
    measured = explore_triton("h200", problem, configs=configs, cache=False)
    assert measured.steps.startswith("steps measured on the NVIDIA H200")
    assert measured.to_dict()["candidates"][0]["steps"] == measured.steps
    other = explore_triton("h100-sxm", problem, configs=configs, cache=False)
    assert other.steps == "analytic steps (none measured for this head dim on this GPU)"
    assert other.to_dict()["time_model"].endswith(other.steps)
    unmeasured_d = explore_triton("h200", Problem(seq_len=1024, head_dim=32, heads=4), configs=configs, cache=False)
    assert unmeasured_d.steps == other.steps                   # the H200 table has d = 64 and 128 only


def test_the_cupy_kernel_is_timed_by_its_measured_steps():
    """fa2_mma, 64 x 64 at d = 128 on the H200: the measured steps, said; on the H100 profile its
    warp layout's model, said; the measured time is the documented arithmetic."""
    from iosim.gpu.cupy_kernels import launches, make_config, measured, model_time, simulate_config
    problem = Problem(seq_len=2048, head_dim=128, heads=16)
    cfg = make_config("fa2", seq_len=2048, head_dim=128, heads_total=16, dtype="fp16", causal=False,
                      block_q=64, block_kv=64, impl="mma")
    sim = simulate_config(H200, cfg, problem, cache=False, threads_per_block=launches(cfg)[0].block)
    got = model_time(sim, H200, cfg)
    m = measured(H200, cfg)
    assert got["model"].startswith("kernel time model (steps measured on the NVIDIA H200")
    per_sm, k = math.ceil(512 / 132), m.blocks_per_sm
    rounds = [k] * (per_sm // k) + ([per_sm % k] if per_sm % k else [])
    compute = m.fill_s + (len(rounds) - 1) * m.wave_s + sum(32 * m.round_step(r, r / k) for r in rounds)
    from iosim.models.kernel_time import KernelRates
    floor = KernelRates.from_profile(H200, "fp16").read_write_s    # a kernel that reads, then writes
    assert "compute" in got["bound"] and got["predicted_s"] == pytest.approx(floor + compute, rel=1e-12)
    h100 = load_profile("h100-sxm")
    other = model_time(simulate_config(h100, cfg, problem, cache=False, threads_per_block=launches(cfg)[0].block),
                       h100, cfg)
    assert "no steps measured on this GPU" in other["model"]


def test_unmeasured_configurations_are_not_ranked_beside_measured_ones(monkeypatch):
    """Where a head dim has measured steps on the GPU, a configuration without one (here
    256 x 64, 8 warps, 3 stages at d = 128, taken out of the table: since run3 every
    configuration explore ranks at d = 64 and 128 is measured) is not ranked with an analytic
    time beside the measured ones, and explore says why; simulate still times it, analytic,
    and says so."""
    from iosim.kernels import measured_steps
    from iosim.studies.explore.triton_configs import NOT_MEASURED, explore_triton
    tables = measured_steps._tables("triton-fa2")
    gone = "256,64,8,3,128"
    assert any(gone in entries for _, _, entries in tables)
    less = tuple((p, src, {k: v for k, v in entries.items() if k != gone}) for p, src, entries in tables)
    monkeypatch.setattr(measured_steps, "_tables", lambda kernel: less if kernel == "triton-fa2" else ())
    problem = Problem(seq_len=4096, head_dim=128, heads=4)
    r = explore_triton("h200", problem, configs=[(128, 64, 4, 3), (256, 64, 8, 3)], cache=False)
    (unranked,) = [c for c in r.candidates if not c.feasible]
    assert unranked.config.key() == (256, 64, 8, 3) and unranked.reason == NOT_MEASURED
    assert [c.config.key() for c in r.ranked] == [(128, 64, 4, 3)]
    s = _run("h200", problem, (256, 64, 8, 3))
    assert s.options["launches"][0]["time_model"].startswith("kernel time model (analytic steps")


def test_a_round_costs_the_larger_of_the_long_and_the_short_line():
    """With the short launches' line (a fixed cost a round plus a step), short blocks cost it
    and long ones the long slope's rounds; without it, the long rounds alone."""
    from iosim.models.measured_time import busiest
    m = MeasuredStep(1, 5e-6, 0.0, 0.0, None, None, 255, 0, 1, "test", round_s=10e-6, short_step_s=4.7e-6)
    # 132 blocks of n steps on 132 SMs: one round each
    assert busiest(m, [(2, 132)], 1, 132, False) == pytest.approx(10e-6 + 2 * 4.7e-6, rel=1e-12)
    assert busiest(m, [(200, 132)], 1, 132, False) == pytest.approx(200 * 5e-6, rel=1e-12)
    plain = dataclasses.replace(m, round_s=None, short_step_s=None)
    assert busiest(plain, [(2, 132)], 1, 132, False) == pytest.approx(2 * 5e-6, rel=1e-12)
    # causal: each block's share is the larger line at the causal step's scale
    causal = dataclasses.replace(m, causal_step_s=6e-6)
    assert busiest(causal, [(1, 132)], 1, 132, True) == pytest.approx(10e-6 + 4.7e-6 * 6 / 5, rel=1e-12)
