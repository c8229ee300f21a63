"""benchmarks/triton_tiles_compare.py's arithmetic on a small fabricated CSV: a unit test of
the script, not a result (no measurement is involved)."""

import csv
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("triton_tiles_compare",
                                              os.path.join(ROOT, "benchmarks", "triton_tiles_compare.py"))
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)


def test_spearman_known_values():
    assert compare.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert compare.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert compare.ranks([5, 1, 5]) == [2.5, 1.0, 2.5]
    # one swap among four: rho = 1 - 6·2/(4·15) = 0.8
    assert compare.spearman([1, 2, 3, 4], [1, 2, 4, 3]) == pytest.approx(0.8)


def test_judge_and_summary(tmp_path):
    path = tmp_path / "results.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["seq_len", "head_dim", "batch", "heads", "causal", "block_m", "block_n", "num_warps",
                    "num_stages", "median_s", "error"])
        w.writerow([1024, 64, 1, 16, False, 128, 64, 4, 3, "0.00100", ""])
        w.writerow([1024, 64, 1, 16, False, 64, 64, 4, 2, "0.00104", ""])
        w.writerow([1024, 64, 1, 16, False, 32, 32, 4, 2, "0.00300", ""])
        w.writerow([1024, 64, 1, 16, False, 16, 16, 2, 1, "", "OutOfResources"])
    measured = compare.read_measured(str(path))
    times = measured[(1024, 64, 1, 16, False)]
    assert len(times) == 3
    j = compare.judge(times, {(128, 64, 4, 3): 2.0, (64, 64, 4, 2): 1.0, (32, 32, 4, 2): 3.0})
    assert j["pick"] == (64, 64, 4, 2) and j["best"] == (128, 64, 4, 3)
    assert j["pick_over_best"] == pytest.approx(1.04) and j["within_5pct"]
    assert j["rho"] == pytest.approx(0.5)
    s = compare.summary([j] * 12)
    assert s["pick_within_5pct"] == 12 and s["target_pick"] and not s["target_rho"]
