"""benchmarks/cupy_tiles_compare.py and benchmarks/tile_rank.py on a small fabricated CSV: a
unit test of the scripts' arithmetic, not a result (no measurement is involved)."""

import csv
import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "benchmarks")


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


compare = _load("cupy_tiles_compare")
tiles = _load("cupy_tiles")
rank = sys.modules["tile_rank"]


def _fabricate(folder, times):
    with open(os.path.join(folder, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(tiles.FIELDS)
        for (br, bc), t in times.items():
            w.writerow([256, 64, 1, 2, False, "fp16", br, bc, 2 * br, 0, t, t, 10, "" if t else "skipped: time budget"])


def test_judge_pick_and_rho_on_fabricated_times(tmp_path):
    _fabricate(tmp_path, {(64, 64): "0.00100", (128, 64): "0.00104", (16, 16): "0.00300", (32, 32): ""})
    measured = rank.load_measured(str(tmp_path), compare.CONFIG_FIELDS)
    times = measured[(256, 64, 1, 2, False)]
    assert set(times) == {(64, 64), (128, 64), (16, 16)}   # the skipped row is left out
    j = rank.judge(times, {(64, 64): 2.0, (128, 64): 1.0, (16, 16): 3.0})
    assert j["pick"] == (128, 64) and j["best"] == (64, 64)
    assert j["pick_over_best"] == pytest.approx(1.04) and j["within_5pct"] and j["rho"] == pytest.approx(0.5)
    s = rank.summary([j] * 11 + [{**j, "within_5pct": False, "rho": 1.0}])
    assert s["pick_within_5pct"] == 11 and s["target_pick"] and not s["target_rho"]


def test_compare_predicts_every_tile_with_the_model(tmp_path):
    _fabricate(tmp_path, {(64, 64): "0.00001", (16, 16): "0.00003"})
    out = subprocess.run([sys.executable, os.path.join(BENCH, "cupy_tiles_compare.py"), str(tmp_path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.load(open(tmp_path / "compare.json"))
    shape = result["shapes"][0]
    assert shape["configs"] == 2 and all(v > 0 for v in shape["predicted_s"].values())
    assert set(result["tiles"]["(256, 64, 1, 2, False)"]) == {"64x64", "16x16"}


def test_bad_folder_is_one_line_and_exit_2(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(BENCH, "cupy_tiles_compare.py"), str(tmp_path / "none")],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1


def test_shapes_are_scaled_below_the_cap_only():
    assert len(tiles.SHAPES) == 12 and len(tiles.TILES) == 16
    for (n, d, b, h, causal), orig in zip(tiles.SHAPES, tiles.TRITON_SHAPES):
        assert (n, d, causal) == (orig[0], orig[1], orig[4]) and b * h <= orig[2] * orig[3]
        work = 4 * n * n * d * b * h / (2 if causal else 1)
        assert work <= tiles.WORK_CAP or b * h == 8
        if b * h < orig[2] * orig[3]:
            assert 2 * work > tiles.WORK_CAP
