"""Steps measured on the compiled flash-attn 2 kernels (iosim.kernels.coresidency,
iosim.kernels.combine_kernel): the backward's 8-warp overlap, a lone forward block's step,
and the split-KV combine's chain of dependent loads."""

import math

import pytest

from iosim import Options, Problem, load_profile, simulate
from iosim.kernels import combine_kernel, coresidency
from iosim.kernels.tile_tables import kernel_tile
from iosim.models.combine_time import CHAIN
from iosim.models.kernel_time import BLOCK_WAIT, COMPUTE, KernelRates


def _run(profile="h200", passes="forward", **problem):
    return simulate(load_profile(profile), "fa2", Problem(**problem), passes=passes,
                    options=Options(kernel="flash-attn-2", cache=True))


def _compute(t) -> float:
    return sum(t.per_resource_s.get(k, 0.0) for k in COMPUTE if k != BLOCK_WAIT)


def test_every_h200_backward_tile_has_its_measured_factor():
    p = load_profile("h200")
    for d in (32, 64, 96, 128, 192, 256):
        t = kernel_tile("fa2", d, p, direction="bwd")
        assert t.kernel == coresidency.BACKWARD and t.coresident is not None, d
        assert t.coresident == coresidency.BACKWARD_FACTORS[(t.block_q, t.block_kv, t.warps, t.kernel_head_dim)]


def test_the_backward_steps_at_its_measured_factor(monkeypatch):
    """The 8-warp backward's compute is r × the serial sum (r = 0.867 at d = 128); the blocks'
    own waits are not scaled; and a profile without measured rates keeps the serial sum."""
    problem = dict(seq_len=4096, head_dim=128, heads=8)
    t = _run(passes="forward+backward", **problem).kernel_times["dq_dk_dv"]
    assert "two warps a sub-partition at 0.87 a step" in t.bound
    monkeypatch.setattr(coresidency, "BACKWARD_FACTORS", {})
    serial = _run(passes="forward+backward", **problem).kernel_times["dq_dk_dv"]
    assert _compute(t) == pytest.approx(0.867 * _compute(serial), rel=1e-9)
    assert t.per_resource_s[BLOCK_WAIT] == pytest.approx(serial.per_resource_s[BLOCK_WAIT], rel=1e-12)
    h100 = _run("h100-pcie", passes="forward+backward", **problem).kernel_times["dq_dk_dv"]
    assert "sub-partition" not in h100.bound


@pytest.mark.parametrize("d, factor", [(32, 1 / 0.742), (128, 1 / 0.994)])
def test_a_lone_forward_block_steps_at_its_measured_step(monkeypatch, d, factor):
    """132 one-block heads (one block an SM): the forward's compute is the measured lone step
    over the serial sum (d = 32: 1.35×) times the serial sum."""
    problem = dict(seq_len_q=128, seq_len_kv=4096, seq_len=4096, head_dim=d, heads=132)
    t = _run(**problem).kernel_times["main"]
    monkeypatch.setattr(coresidency, "STEP_FACTORS", {})
    serial = _run(**problem).kernel_times["main"]
    assert _compute(t) == pytest.approx(factor * _compute(serial), rel=1e-9)
    assert t.predicted_s > serial.predicted_s


def test_no_step_factor_off_the_measured_rates(monkeypatch):
    """The factors were measured with the H200's rates: a profile of vendor peaks keeps the
    serial sum (the factor travels with the tile, and is not applied there)."""
    problem = dict(seq_len=2048, head_dim=32, heads=16)
    assert kernel_tile("fa2", 32, load_profile("h100-pcie")).step_factor == pytest.approx(1 / 0.742)
    with_factor = _run("h100-pcie", **problem).kernel_times["main"]
    monkeypatch.setattr(coresidency, "STEP_FACTORS", {})
    assert _run("h100-pcie", **problem).kernel_times["main"] == with_factor


@pytest.mark.parametrize("d, heads, n_kv", [(64, 4, 8192), (128, 16, 2048), (128, 4, 131072)])
def test_the_combine_is_a_chain_of_dependent_loads(d, heads, n_kv):
    """One wave of combine blocks: the read-then-write floor, the measured log-sum-exp phase,
    one measured load a split, and the bytes it reads at the DRAM rate."""
    r = _run(seq_len_q=1, seq_len_kv=n_kv, seq_len=n_kv, head_dim=d, heads=heads)
    t, splits = r.kernel_times["combine"], r.options["num_splits"]
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    reads = sum(x for x, _ in r.kernel_bytes("combine").values())
    chain = combine_kernel.BASE_S + splits * combine_kernel.SPLIT_S + reads / rates.dram_bytes
    assert t.per_resource_s[CHAIN] == pytest.approx(chain, rel=1e-12)
    assert t.predicted_s == pytest.approx(rates.read_write_s + chain, rel=1e-12)
    assert t.bound.startswith(f"{CHAIN} ({splits} splits;")


def test_the_combine_waits_a_chain_a_wave():
    """More blocks than the SMs hold (kBlockM = 4 rows a block at d = 128; 9 an SM up to 16
    splits) wait the chain once a wave."""
    r = _run(seq_len_q=64, seq_len_kv=4096, seq_len=4096, head_dim=128, heads=96, batch=1)
    splits = r.options["num_splits"]
    blocks = math.ceil(96 * 64 / combine_kernel.block_rows(128))
    waves = math.ceil(blocks / (132 * combine_kernel.blocks_per_sm(splits)))
    t = r.kernel_times["combine"]
    rates = KernelRates.from_profile(load_profile("h200"), "fp16")
    reads = sum(x for x, _ in r.kernel_bytes("combine").values())
    want = waves * (combine_kernel.BASE_S + splits * combine_kernel.SPLIT_S) + reads / rates.dram_bytes
    assert waves >= 2 and t.per_resource_s[CHAIN] == pytest.approx(want, rel=1e-12)


def test_the_combine_keeps_the_memory_model_off_the_measured_rates():
    r = _run("h100-pcie", seq_len_q=1, seq_len_kv=8192, seq_len=8192, head_dim=64, heads=4)
    assert CHAIN not in r.kernel_times["combine"].per_resource_s


def test_combine_block_rows_follow_the_launch_template():
    assert [combine_kernel.block_rows(d) for d in (32, 64, 96, 128, 160, 192, 224, 256)] == [16, 8, 16, 4, 16, 8,
                                                                                              16, 4]
    assert combine_kernel.blocks_per_sm(16) == 9 and combine_kernel.blocks_per_sm(17) == 8


def test_uneven_head_dims_take_their_instantiations_factors():
    """d that is no kernel size runs the kernel's Is_even_K = false instantiation: its own
    measured factors where measured (32, 64, 96, 128, 192/256 backward), the even kernel's where not."""
    p = load_profile("h200")
    for d, kd in ((8, 32), (16, 32), (24, 32), (40, 64), (48, 64), (56, 64), (72, 96), (112, 128), (160, 192),
                  (200, 256), (224, 256), (240, 256)):
        fwd = kernel_tile("fa2", d, p)
        key = (fwd.block_q, fwd.block_kv, fwd.warps, kd)
        assert fwd.coresident == coresidency.UNEVEN_FACTORS[key], d
        assert fwd.step_factor == coresidency.UNEVEN_STEP_FACTORS.get(key, 1.0), d
        even = kernel_tile("fa2", kd, p)
        assert (fwd.coresident, fwd.step_factor) != (even.coresident, even.step_factor), d
    for d, kd in ((16, 32), (40, 64), (72, 96), (112, 128), (160, 192), (224, 256)):
        bwd = kernel_tile("fa2", d, p, direction="bwd")
        assert bwd.coresident == coresidency.UNEVEN_BACKWARD_FACTORS[(bwd.block_q, bwd.block_kv, bwd.warps, kd)], d
    # unmeasured uneven forms keep the even kernel's: the dropout tiles' (none measured uneven)
    assert coresidency.coresident_factor(coresidency.KERNEL, 64, 64, 4, 192, even_k=False) == \
        coresidency.FACTORS[(64, 64, 4, 192)]


def test_an_uneven_forward_is_slower_than_the_even_kernels():
    """Same padded work, the uneven instantiation's measured step: d = 40 takes longer than d = 64."""
    t40 = _run(seq_len=4096, head_dim=40, heads=16).kernel_times["main"]
    t64 = _run(seq_len=4096, head_dim=64, heads=16).kernel_times["main"]
    assert t40.predicted_s > 1.05 * t64.predicted_s
    assert "two blocks an SM at 0.70 a step" in t40.bound


def test_split_kv_tiles_hold_two_blocks_an_sm_at_their_measured_overlap():
    """ncu's launch statistics: 244-255 registers a thread, two blocks an SM; each split-KV tile
    steps at its own pair factor, measured on the compiled kernel (docs/validation/2026-12-04-splitkv-step.md),
    its uneven instantiation at its own."""
    p = load_profile("h200")
    for d in (32, 64, 96, 128, 192, 256):
        t = kernel_tile("fa2-splitkv", d, p)
        assert t.kernel == coresidency.SPLITKV and t.registers == 255, d
        assert t.coresident == coresidency.SPLITKV_FACTORS[(t.block_q, t.block_kv, t.warps, d)], d
    for d, kd in ((16, 32), (24, 32), (40, 64), (72, 96), (112, 128), (160, 192), (224, 256)):
        t = kernel_tile("fa2-splitkv", d, p)
        assert t.coresident == coresidency.UNEVEN_SPLITKV_FACTORS[(t.block_q, t.block_kv, t.warps, kd)], d
    r = _run(seq_len_q=1, seq_len_kv=32768, seq_len=32768, head_dim=64, heads=64)
    assert r.options["num_splits"] == 4 and "two blocks an SM at 0.72 a step" in r.kernel_times["splitkv"].bound


def test_the_split_kv_factors_are_the_committed_runs_slopes(monkeypatch):
    """Each split-KV pair factor is the committed runs' measured slope (one K/V head, 264 blocks,
    2-32 key blocks a block) over the model's serial slope, to the table's three decimals (d = 16
    for the 32 kernel's uneven form; d = 24, measured beside it, is not in the table)."""
    import json
    import pathlib

    import numpy as np

    runs = pathlib.Path(__file__).resolve().parents[2] / "docs/validation/2026-12-04-splitkv-step"
    rows = [r for path in (runs / "splitkv_cost.json", runs / "small" / "splitkv_cost.json")
            for r in json.loads(path.read_text())["rows"] if r["kv_heads"] == 1 and r["d"] != 24]
    tables = {True: dict(coresidency.SPLITKV_FACTORS), False: dict(coresidency.UNEVEN_SPLITKV_FACTORS)}
    monkeypatch.setattr(coresidency, "SPLITKV_FACTORS", {})
    monkeypatch.setattr(coresidency, "UNEVEN_SPLITKV_FACTORS", {})
    p = load_profile("h200")
    for d in sorted({r["d"] for r in rows}):
        mine = [r for r in rows if r["d"] == d]
        serial = [_run(seq_len_q=r["n_q"], seq_len_kv=r["n_kv"], head_dim=d, heads=r["heads"],
                       kv_heads=1).kernel_times["splitkv"].predicted_s for r in mine]
        steps = [r["steps"] for r in mine]
        ratio = np.polyfit(steps, [r["median_s"] for r in mine], 1)[0] / np.polyfit(steps, serial, 1)[0]
        t = kernel_tile("fa2-splitkv", d, p)
        key = (t.block_q, t.block_kv, t.warps, t.kernel_head_dim)
        assert tables[d == t.kernel_head_dim][key] == (2, round(ratio, 3)), d


def test_the_32_kernels_uneven_factors_are_the_committed_runs_slopes(monkeypatch):
    """d = 16 on the 32 kernel (docs/validation/2026-12-02-uneven-k/small/, session 26): the lone
    step, the pair factor and the backward's factor are the measured slopes over the model's serial
    ones (benchmarks/step_factors.py's own functions), to the tables' digits."""
    import pathlib

    from conftest import load_module

    root = pathlib.Path(__file__).resolve().parents[2]
    factors = load_module("step_factors", root / "benchmarks" / "step_factors.py")
    key, bwd_key = (128, 128, 4, 32), (128, 128, 8, 32)
    want = (coresidency.UNEVEN_STEP_FACTORS[key], coresidency.UNEVEN_FACTORS[key],
            coresidency.UNEVEN_BACKWARD_FACTORS[bwd_key])
    for name in ("FACTORS", "STEP_FACTORS", "BACKWARD_FACTORS", "UNEVEN_FACTORS", "UNEVEN_STEP_FACTORS",
                 "UNEVEN_BACKWARD_FACTORS"):
        monkeypatch.setattr(coresidency, name, {})
    runs = factors.series(str(root / "docs/validation/2026-12-02-uneven-k/small/uneven_cost.json"))
    got = {}
    for (kind, d, heads, _), points in runs.items():
        if d == 16:
            measured = factors.slope([x for x, _, _ in points], [y for _, y, _ in points])
            got[(kind, heads)] = (measured, factors.serial_slope(points, kind == "backward"))
    lone, pair, backward = got[("forward", 132)], got[("forward", 264)], got[("backward", 1)]
    assert round(lone[0], 2) / round(lone[1], 2) == want[0]
    assert want[1] == (2, round(round(pair[0], 2) / (2 * round(lone[0], 2)), 3))
    assert want[2] == (1, round(backward[0] / backward[1], 3))


def test_the_256_kernels_factors_are_the_committed_runs_slopes(monkeypatch):
    """The 256 kernel's forward (session 27, docs/validation/2026-12-04-wide-step/): the lone step
    is flash-attn's variable-length entry's 132-block slope over the model's serial one, the pair
    factor SDPA's 264-block slope over twice the lone one; even (d = 256) and uneven (d = 224), to
    the tables' digits, through benchmarks/step_factors.py's own functions."""
    import json
    import pathlib

    from conftest import load_module

    root = pathlib.Path(__file__).resolve().parents[2]
    factors = load_module("step_factors", root / "benchmarks" / "step_factors.py")
    key = (64, 64, 4, 256)
    want = {256: (coresidency.STEP_FACTORS[key], coresidency.FACTORS[key]),
            224: (coresidency.UNEVEN_STEP_FACTORS[key], coresidency.UNEVEN_FACTORS[key])}
    for name in ("FACTORS", "STEP_FACTORS", "UNEVEN_FACTORS", "UNEVEN_STEP_FACTORS"):
        monkeypatch.setattr(coresidency, name, {})
    rows = json.loads((root / "docs/validation/2026-12-04-wide-step/wide_cost.json").read_text())["rows"]
    for d, (step, pair) in want.items():
        def points(study, blocks):
            return [(r["n_kv"] / 1024, r["median_s"] * 1e6,
                     Problem(seq_len_q=r["n_q"], seq_len_kv=r["n_kv"], head_dim=d, heads=r["heads"]))
                    for r in rows if (r["study"], r["d"], r["blocks"]) == (study, d, blocks)]
        lone, two = points("varlen", 132), points("sdpa", 264)
        measured = [round(factors.slope([x for x, _, _ in pts], [y for _, y, _ in pts]), 2) for pts in (lone, two)]
        serial = round(factors.serial_slope(lone, False, num_splits=1), 2)
        assert step == measured[0] / serial, d
        assert pair == (2, round(measured[1] / (2 * measured[0]), 3)), d


def test_the_backwards_uneven_mn_factors_are_the_committed_runs_slopes(monkeypatch):
    """The backward's Is_even_MN = false instantiation (session 27, docs/validation/2026-12-04-bwd-heads.md):
    one head of 132 key blocks at lengths one short of the tiles, the measured slope over the model's
    serial one, to the table's digits (benchmarks/step_factors.py's functions)."""
    import json
    import pathlib

    from conftest import load_module

    root = pathlib.Path(__file__).resolve().parents[2]
    factors = load_module("step_factors", root / "benchmarks" / "step_factors.py")
    want = dict(coresidency.UNEVEN_MN_BACKWARD_FACTORS)
    for name in ("BACKWARD_FACTORS", "UNEVEN_BACKWARD_FACTORS", "UNEVEN_MN_BACKWARD_FACTORS"):
        monkeypatch.setattr(coresidency, name, {})
    rows = json.loads((root / "docs/validation/2026-12-04-bwd-heads/uneven/bwd_cost.json").read_text())["rows"]
    p = load_profile("h200")
    for d in (32, 64, 96, 128):
        points = [(r["n_q"] / 1024, r["median_s"]["dq_dk_dv"] * 1e6,
                   Problem(seq_len_q=r["n_q"], seq_len_kv=r["n_kv"], head_dim=d, heads=1))
                  for r in rows if r["d"] == d and r["layout"] == "shared-uneven"]
        measured = factors.slope([x for x, _, _ in points], [y for _, y, _ in points])
        t = kernel_tile("fa2", d, p, direction="bwd")
        key = (t.block_q, t.block_kv, t.warps, d)
        assert want[key] == (1, round(measured / factors.serial_slope(points, True), 3)), d


def test_a_backward_of_uneven_lengths_steps_at_its_instantiations_factor():
    """Dense lengths that are no multiple of the tiles at a kernel size: the Is_even_MN = false factor;
    whole tiles, causal launches (measured alike in both instantiations), or a head dim off the kernel
    sizes (its own measured factor already), not."""
    def bound(**kw):
        return _run(passes="forward+backward", **kw).kernel_times["dq_dk_dv"].bound

    assert "at 0.93 a step" in bound(seq_len=2500, head_dim=96, heads=8)
    assert "at 0.83 a step" in bound(seq_len=2560, head_dim=96, heads=8)
    assert "at 0.83 a step" in bound(seq_len=2500, head_dim=96, heads=8, causal=True)   # causal: alike
    assert "at 0.95 a step" in bound(seq_len_q=1, seq_len_kv=3000, seq_len=3000, head_dim=64, heads=8)
    assert "at 0.96 a step" in bound(seq_len=2500, head_dim=72, heads=8)     # Is_even_K false: its own


def test_a_streaming_split_kv_step_waits_for_its_loads_phase_by_phase():
    """With 66 K/V heads every split-KV block streams its keys from DRAM, and a step takes the
    longer of each phase's products and the load behind it (kernel_time._phase_waits): the
    model's slope is within 7 % of the committed run's at every head dim, where the larger of
    compute and DRAM alone fell up to 13 % short (d = 32: 2.61 against 2.95 µs a key block)."""
    import json
    import pathlib

    import numpy as np

    run = pathlib.Path(__file__).resolve().parents[2] / "docs/validation/2026-12-04-splitkv-step/splitkv_cost.json"
    rows = [r for r in json.loads(run.read_text())["rows"] if r["kv_heads"] == 66]
    for d in sorted({r["d"] for r in rows}):
        mine = [r for r in rows if r["d"] == d]
        model = [_run(seq_len_q=r["n_q"], seq_len_kv=r["n_kv"], head_dim=d, heads=r["heads"]).kernel_times["splitkv"]
                 for r in mine]
        steps = [r["steps"] for r in mine]
        ratio = np.polyfit(steps, [t.predicted_s for t in model], 1)[0] / np.polyfit(steps, [r["median_s"] for r in mine], 1)[0]
        assert 0.93 < ratio < 1.07, (d, ratio)
