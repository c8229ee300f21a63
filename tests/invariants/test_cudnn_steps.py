"""benchmarks/cudnn_steps.py's launches and benchmarks/cudnn_steps_table.py's arithmetic (no GPU needed): the timed
launches are whole waves of the persistent kernels' tiles, and the table gives back the steps of timings that a known
model of them made."""

import csv

import pytest

from conftest import load_module
from iosim import Options, Problem, simulate
from iosim.kernels import cudnn_preset, cudnn_steps
from iosim.models import cudnn_time

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
STEPS = load_module("cudnn_steps", ROOT / "benchmarks" / "cudnn_steps.py")
TABLE = load_module("cudnn_steps_table", ROOT / "benchmarks" / "cudnn_steps_table.py")


def test_every_launch_is_whole_waves_of_tiles():
    """B·H·N/128 tiles = 132 · waves at both lengths, every kernel head dim of the Hopper kernels, dense and causal."""
    launches = STEPS.launches()
    assert len(launches) == 4 * len(STEPS.CONFIGS)
    for d, dtype, causal, n, bh, waves in launches:
        assert n % 128 == 0 and bh * n // 128 == 132 * waves
        assert cudnn_preset.persistent_grid(bh * n // 128, 132) == 132
    assert {(d, causal) for d, _, causal, *_ in launches} == {(d, c) for d in (64, 128, 192, 256) for c in (False, True)}
    assert {(d, dtype) for d, dtype, *_ in launches if dtype == "bfloat16"} == {(128, "bfloat16")}


@pytest.mark.parametrize("kernel", ["fprop", "bprop"])
def test_the_table_gives_back_a_known_models_steps(tmp_path, kernel):
    """Timings written from a model of the kernels (step 1.1 µs, causal step 1.4 µs, tile 2.5 µs, fill 4 µs) come back
    as those four figures, and every timed launch (those not fitted among them) as the model's time."""
    fit = {"step_s": 1.1e-6, "tile_s": 2.5e-6, "fill_s": 4e-6, "causal_step_s": 1.4e-6}
    path = tmp_path / "steps.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(STEPS.FIELDS)
        for d, dtype, causal, n, bh, waves in STEPS.launches():
            s = TABLE.launch_s(fit, kernel, d, n, bh, causal)
            w.writerow([d, dtype, causal, n, bh, bh * n // 128, waves, f"sdpa_sm90_flash_{kernel}_wgmma_f16", "132x1x1",
                        "384x1x1", f"{s * 1e6:.4f}", f"{s * 1e6:.4f}", 10])
            w.writerow([d, dtype, causal, n, bh, bh * n // 128, waves, "cudnn::convert_dq_to_16bits", "1x1x1",
                        "128x1x1", "3.0", "3.0", 10])
    entries = TABLE.table(TABLE.read(str(path)))
    assert len(entries) == len(STEPS.CONFIGS) // 2
    for e in entries:
        assert e["kernel"] == kernel
        for key, value in fit.items():
            assert e[key] == pytest.approx(value, rel=1e-4), (e["d"], key)
        assert len(e["launches"]) == 8
        for r in e["launches"]:
            assert r["model_s"] == pytest.approx(r["measured_s"], rel=1e-4)


def test_a_causal_fprop_tile_walks_to_its_diagonal_and_a_bprop_tile_from_it():
    """In steps of the tile's walk (fprop: key blocks of 128; bprop: query blocks of 64), in launch order; the bprop
    above d = 128 in two thread blocks a tile."""
    assert TABLE.tile_steps("fprop", 512, True) == [1, 2, 3, 4]
    assert TABLE.tile_steps("bprop", 512, True) == [8, 6, 4, 2]
    assert TABLE.tile_steps("fprop", 512, False) == [4] * 4 and TABLE.tile_steps("bprop", 512, False) == [8] * 4
    assert [TABLE.units(k, d) for k in ("fprop", "bprop") for d in (128, 192)] == [1, 1, 1, 2]


def test_the_committed_h200_runs_take_one_step_cost_a_kernel():
    """Each committed H200 fprop and bprop launch at N >= 2,048 over its busiest SM's steps, as the table's model
    schedules its tiles (launch order, to the least-loaded SM; nothing fitted), one a distinct shape: within 20 % across
    the shapes of a kernel and kernel head dim (dense and causal, fp16 and bf16, 4 to 256 heads), and rising with the
    head dim."""
    groups = TABLE.committed()
    for key, rows in groups.items():
        us = [r[0] for r in rows]
        if len(us) >= 5:
            assert max(us) / min(us) < 1.2, (key, sorted(us))
    for kernel in ("fprop", "bprop"):
        least = [min(r[0] for r in groups[kernel, kd]) for kd in (64, 128, 192, 256)]
        assert least == sorted(least), (kernel, least)
    assert {key: len(rows) for key, rows in groups.items()} == {(k, kd): 7 if kd <= 128 else 1
                                                                for k in ("fprop", "bprop") for kd in (64, 128, 192, 256)}


@pytest.fixture
def known_steps(monkeypatch):
    """A step table of known figures (about the committed runs' steps) for the H200's fprop and bprop at kernel head
    dims 128 and 192 (fp16)."""
    fit = {"step_s": 2.2e-6, "tile_s": 2.5e-6, "fill_s": 4e-6, "causal_step_s": 2.6e-6}
    entries = {f"{k},{kd},fp16": fit for k in ("fprop", "bprop") for kd in (128, 192)}
    monkeypatch.setattr(cudnn_steps, "_tables", lambda: ((frozenset({"h200"}), "known figures", entries),))
    return fit


@pytest.mark.parametrize("d,causal,bh,n,fill_s", [(128, False, 8, 4224, 4e-6), (128, True, 8, 4224, 4e-6),
                                                  (192, False, 3, 2048, 4e-6), (192, True, 5, 3072, 1e-6),
                                                  (128, True, 200, 1024, 0.5e-6)])
def test_the_preset_times_its_launches_as_the_table_models_them(known_steps, d, causal, bh, n, fill_s):
    """iosim's cuDNN time model and the table's model of the timed launches schedule the same units: the fprop's
    and bprop's times (compute-bound here: the fill, the launch's floor as measured, whether above or below the
    profile's empty launch, and the busiest SM) are the table's ``launch_s``, and the launches name the model and
    its source."""
    known_steps["fill_s"] = fill_s                 # the fixture's table holds this very dict
    p = Problem(head_dim=d, seq_len=n, batch=1, heads=bh, causal=causal)
    r = simulate("h200", "fa2", p, passes="forward+backward", options=Options(kernel="cudnn", cache="auto"))
    for kernel, table_kernel in cudnn_time.PERSISTENT.items():
        t = r.kernel_times[kernel]
        assert t.bound.startswith("compute"), (kernel, t.bound)
        assert t.predicted_s == pytest.approx(TABLE.launch_s(known_steps, table_kernel, d, n, bh, causal), rel=1e-12)
    names = [launch["time_model"] for launch in r.options["launches"]]
    assert names == ["cuDNN's steps measured on known figures",
                     "cuDNN's steps measured on known figures; element-wise kernels: the copy rate"], names


def test_no_measured_step_keeps_the_roofline_and_says_so(known_steps):
    """A head dim, dtype or GPU the table has no step for: the roofline, a lower bound, and the launch says why."""
    for d, dtype, profile in ((64, "fp16", "h200"), (128, "bf16", "h200"), (128, "fp16", "h100-sxm")):
        p = Problem(head_dim=d, seq_len=1024, batch=1, heads=4, dtype=dtype)
        r = simulate(profile, "fa2", p, passes="forward", options=Options(kernel="cudnn"))
        assert not r.kernel_times
        assert r.options["launches"][0]["time_model"].startswith("roofline, a lower bound: no kernel time model for "
                                                                 "cuDNN's fprop kernel")


@pytest.mark.parametrize("d,causal,n", [(192, True, 1000), (256, False, 700), (128, True, 1100), (64, True, 900)])
def test_a_count_runs_units_are_the_launch_order(d, causal, n):
    """The units the model schedules from a count run's records are those of the thread blocks in launch order
    (a trace run records them one by one)."""
    p = Problem(head_dim=d, seq_len=n, batch=1, heads=2, causal=causal)
    kd = cudnn_preset.kernel_head_dim(d)
    for kernel, passes in (("main", "forward"), ("dq_dk_dv", "backward")):
        runs = [simulate("h200", "fa2", p, passes=passes, options=Options(kernel="cudnn"), mode=mode).cta_work[kernel]
                for mode in ("count", "trace")]
        halves = kernel == "dq_dk_dv" and kd > 128
        counted, traced = cudnn_time.units_of(kernel, runs[0].blocks, halves), runs[1].blocks
        expand = (lambda units: [s for s, c in units for _ in range(c)])   # noqa: E731
        assert expand(counted) == expand(cudnn_time.units_of(kernel, traced, False)), (kernel, d, causal)


def test_explore_times_every_candidate_tile_by_the_roofline(known_steps):
    """The steps are of cuDNN's own tiles: explore's candidates (its own blocks among them) are all timed by the
    roofline, so that its ranking compares like with like, and it says so."""
    from iosim.studies.explore import explore
    p = Problem(head_dim=128, seq_len=2048, batch=1, heads=8)
    assert simulate("h200", "fa2", p, options=Options(kernel="cudnn")).kernel_times     # the preset itself: timed
    res = explore("h200", "fa2", p, block_q=[64, 128], block_kv=[64, 128], kernel="cudnn", jobs=1, progress=False)
    assert res.time_model.startswith("roofline")
    own = next(c for c in res.candidates if (c.block_q, c.block_kv) == (128, 128))
    assert own.time_max_s < simulate("h200", "fa2", p, options=Options(kernel="cudnn")).time.predicted_s
