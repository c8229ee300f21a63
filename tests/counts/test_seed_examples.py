"""Every figure of the seed article, reproduced by examples/seed_worked_examples.py."""

import pathlib
import subprocess
import sys

import pytest

from conftest import load_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "seed_worked_examples.py"
EPS = 2.0 ** -52  # float64 machine epsilon


@pytest.fixture(scope="module")
def seed():
    return load_module("seed_worked_examples", SCRIPT)


def test_paper_a100(seed):
    a100 = seed.paper_a100_figures()
    assert a100["sm_count"] == 108
    assert a100["sram_per_sm_bytes"] == 192 * 1024
    assert 1.5 <= a100["hbm_tb_s"] <= 2.0
    assert round(a100["sram_tb_s"]) == 19
    assert 9 <= a100["sram_over_hbm"] <= 13  # "about ten times faster"


def test_score_matrix_sizes(seed):
    sizes = seed.score_matrix_sizes()
    assert sizes["N=8192, one head"] == 128 * 2**20
    assert sizes["N=8192, 32 heads"] == 4 * 2**30
    assert sizes["N=131072, one head"] == 32 * 2**30
    assert sizes["4x tokens -> x"] == 16


def test_online_softmax(seed):
    out = seed.online_softmax_example()
    assert out["running_max"] == [3.0, 4.0]
    assert round(out["running_sum"][0], 4) == 1.1421
    assert round(out["running_sum"][1], 4) == 1.6735
    assert abs(out["running_sum"][1] - out["whole_row_sum"]) <= 4 * EPS
    # The article reports ≈5.6e-17, i.e. rounding: a difference of a few ulps of values ~1.
    assert out["max_abs_diff_with_values"] <= 4 * EPS


def test_block_sizes_and_ratio(seed):
    assert seed.paper_block_size_example() == {"M": 98_304, "block_kv": 192, "block_q": 128}
    assert round(seed.theorem2_leading_terms_ratio(), 1) == 6.1


def test_statistics_bytes(seed):
    assert seed.statistics_bytes_per_head() == 65_536


def test_tiled_run(seed):
    run = seed.tiled_exactness_run()
    assert run["standard_scores_held"] == 65_536
    assert run["tiled_scores_held"] == 4_096
    # Article: ≈5.6e-16, rounding error; outputs are O(1), so a few ulps.
    assert run["max_abs_diff"] <= 8 * EPS


def test_script_runs():
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT)})
    assert "1.1421" in out.stdout and "1.6735" in out.stdout and "65,536" in out.stdout
