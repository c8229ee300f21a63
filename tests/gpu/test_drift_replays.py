"""Replays of session 29's committed measurements on the H200 (no GPU needed):
docs/validation/2026-12-04-drift-probe.md (iosim's own fa2_mma, block by block),
2026-12-04-l2-hot-room (rewritten lines take the L2's room), 2026-12-04-spill-footprint (the flash
kernels' spill frames, from their SASS) and 2026-12-04-s29-heads (causal forwards over many heads)."""

import json
import pathlib

import numpy as np
import pytest

from conftest import load_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
VALIDATION = ROOT / "docs" / "validation"
MB = 1e6


@pytest.fixture(scope="module")
def probe():
    return load_module("drift_probe", ROOT / "benchmarks" / "drift_probe.py")


@pytest.fixture(scope="module")
def probe_runs(probe):
    from iosim.gpu.ncu import read_launches
    raw = VALIDATION / "2026-12-04-drift-probe"
    launches = read_launches((raw / "drift.csv").read_text())
    assert json.loads((raw / "configs.json").read_text())["configs"] == probe.CONFIGS
    assert len(launches) == len(probe.CONFIGS) == 12
    return list(zip(probe.CONFIGS, launches)), np.load(raw / "stamps.npz")


def test_the_l2_model_of_fa2_mma_with_its_registers_reads_what_the_h200_read(probe, probe_runs):
    """Both walks, causal and dense, 8 to 256 heads: within 1 % of the measured DRAM reads once the
    model holds the compiled kernel's registers (cupy_kernels.occupancy); without them it puts 3
    blocks of 128 × 64 on an SM where the H200 runs 1, and the downward causal walks come out
    1.24-1.76 x over."""
    for spec, launch in probe_runs[0]:
        got = launch["metrics"]["dram__bytes_read.sum"]
        assert probe.predicted(spec) == pytest.approx(got, rel=0.01), spec
        if spec["descending"] and spec["causal"] and spec["heads_total"] > 8:
            assert probe.predicted(spec, registers=False) / got > 1.2, spec


def test_fa2_mma_blocks_start_in_launch_order_and_keep_step(probe, probe_runs):
    """Every block starts after the one before it in launch order, as many run at once as the
    measured occupancy allows, and blocks of equal work past the first waves step within 4 % of
    each other (the coefficient of variation of their step time)."""
    from iosim import load_profile
    from iosim.gpu.cupy_kernels import measured
    h200 = load_profile("h200")
    for i, (spec, _) in enumerate(probe_runs[0]):
        per_sm = measured(h200, probe.config(spec)).blocks_per_sm
        for r in range(probe.REPEATS):
            t = probe.drift_table(probe_runs[1][f"c{i}_r{r}"], spec)
            assert t["start_inversions"] == 0 and t["sms"] == 132, (spec, t)
            assert 132 * per_sm <= t["at_once"] <= 132 * per_sm + 12, (spec, t)
            assert t["step_cv_median"] is None or t["step_cv_median"] < 0.04, (spec, t)


def test_lines_rewritten_all_the_time_take_the_l2s_room():
    """docs/validation/2026-12-04-l2-hot-room.md: D read twice fits with no hot region to 36 MB
    (under 1 MB beyond D); a hot region of H rewritten all the kernel long, global or local,
    raises the second pass's misses with H at every D from 28 MB, and local frames of 8.7 MB
    cost within 3 MB of a global region of 8 MB."""
    hot = load_module("l2_hot_room_ncu", ROOT / "benchmarks" / "l2_hot_room_ncu.py")
    sided = load_module("l2_shared_ncu", ROOT / "benchmarks" / "l2_shared_ncu.py")
    beyond = {}
    for case, got in sided.summary(str(VALIDATION / "2026-12-04-l2-hot-room"), "l2_hot_room.csv"):
        key = (case["mode"], case["size"])
        beyond.setdefault(case["d"] / MB, {})[key] = got["dram__bytes_read.sum"] - case["d"] / MB
    assert len(beyond) == 7 and all(len(v) == len(hot.CASES) // 7 for v in beyond.values())
    for d, by in beyond.items():
        if d <= 36:
            assert by[0, 0] < 1.0, d
        if d >= 28:
            assert by[0, 0] < by[1, 8 * 10 ** 6] < by[1, 16 * 10 ** 6], (d, by)
            assert by[0, 0] < by[2, 8] < by[2, 16] < by[2, 32], (d, by)
            assert abs(by[2, 8] - by[1, 8 * 10 ** 6]) < 3.0, (d, by)


def test_spill_frames_from_the_sass_agree_with_the_local_stores_ncu_counts():
    """docs/validation/2026-12-04-spill-footprint: the d = 96 and 192 forwards' even instantiations
    store nothing to local memory (ncu: no local stores, 2026-12-04-local-memory.md), the d = 128
    even ones store 33 (dense) and 32 (causal) words a thread, at least the 14.5 a step ncu counted
    (7.42 KB a 128-thread block), and the uneven causal d = 128 one 91."""
    spill = load_module("spill_footprint", ROOT / "benchmarks" / "spill_footprint.py")
    rows = json.loads((VALIDATION / "2026-12-04-spill-footprint" / "spills.json").read_text())
    traits = json.loads((ROOT / "iosim" / "kernels" / "flash_code_sm90.json").read_text())["traits"]

    def stored(d, causal, even_mn):
        (r,) = [r for r in rows if r["kernel"] == "main" and r["dtype"] == "fp16" and r["traits"] == traits[f"main/{d}"]
                and r["flags"] == f"0,{int(causal)},0,0,{int(even_mn)},1,0,0"]
        return spill.words(r["stl"])
    assert stored(96, False, True) == 0 and stored(192, False, False) == 0 and stored(192, True, False) == 0
    assert stored(128, False, True) == 33 and stored(128, True, True) == 32 >= 7.42e3 / 128 / 4
    assert stored(128, True, False) == 91


def test_the_heads_grid_repeats_and_the_model_reads_within_its_runs():
    """docs/validation/2026-12-04-s29-heads.md: three runs of the 14 forwards read within 5 % of
    each other, and the L2 model's DRAM reads are within 10 % of the run's on 13 of 14 (the d = 128
    causal forward at B × H = 4 × 32, 0.89-0.92, is the miss)."""
    from iosim.gpu.sdpa import raw_configs
    runs = {}
    for name in ("l2", "r1", "r2"):
        for cfg, _, launches in raw_configs(str(VALIDATION / "2026-12-04-s29-heads" / name)):
            key = (cfg["head_dim"], cfg["seq_len"], cfg["batch"], cfg["heads"], cfg["causal"])
            fwd = [x for x in launches if "flash_fwd_kernel" in x["name"]]
            runs.setdefault(key, []).append(fwd[0]["metrics"]["dram__bytes_read.sum"])
    assert len(runs) == 14 and all(len(v) == 3 for v in runs.values())
    assert all(max(v) / min(v) < 1.05 for v in runs.values())
    compare = load_module("sdpa_compare", ROOT / "benchmarks" / "sdpa_compare.py").compare
    ratios = {(r["head_dim"], r["seq_len"], r["batch"], r["heads"], r["causal"]):
              r["predicted"]["dram_read"] / r["measured"]["dram_read"]
              for r in compare(str(VALIDATION / "2026-12-04-s29-heads" / "r1"), cache=True) if r["kernel"] == "main"}
    assert len(ratios) == 14
    assert [k for k, x in ratios.items() if abs(x - 1) > 0.10] == [(128, 4096, 4, 32, True)]
    assert 0.85 < ratios[128, 4096, 4, 32, True] < 0.90
