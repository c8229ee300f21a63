"""Replays of session 43's one-step backward blocks on an H100 (no GPU needed): what
docs/validation/2026-12-06-decode-bwd.md reads from the raw ncu CSVs, recomputed."""

import json
import pathlib
import re

import pytest

from conftest import load_module
from iosim.gpu.ncu import read_raw

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN = ROOT / "docs" / "validation" / "2026-12-06-decode-bwd"
PAGE = ROOT / "docs" / "validation" / "2026-12-06-decode-bwd.md"
SETS = {"raw-h100": "", "one-head-h100": "one-head", "gqa-sweep-h100": "gqa-sweep"}


@pytest.fixture(scope="module")
def cost():
    return load_module("sdpa_decode_bwd_cost", ROOT / "benchmarks" / "sdpa_decode_bwd_cost.py")


@pytest.fixture(scope="module")
def rows(cost):
    return {d: json.loads((RUN / d / "decode_bwd_cost.json").read_text())["rows"] for d in SETS}


@pytest.mark.parametrize("run", sorted(SETS))
def test_the_committed_medians_are_the_csvs(cost, rows, run):
    """Each configuration's median launch is read from the committed CSV, in the set's launch order."""
    assert cost.medians(read_raw(str(RUN / run / "ncu.csv")), SETS[run]) == rows[run]


def page_rows() -> dict:
    """The page's table: d -> ([measured µs of the three layouts], one-step, two-step instructions)."""
    got = {}
    for line in PAGE.read_text().splitlines():
        m = re.match(r"\| (\d+) \(\d+\) \| (.+) \| ([\d,]+) / ([\d,]+) \([\d,]+\) \|$", line)
        if m:
            cells = [float(c.split(" / ")[0]) for c in m.group(2).split(" | ")]
            got[int(m.group(1))] = (cells, int(m.group(3).replace(",", "")), int(m.group(4).replace(",", "")))
    return got


def test_the_pages_measured_blocks_and_instructions_are_the_runs(cost, rows):
    """Every head dim's measured one-step block (the slope in each layout) and its instructions a
    block, as the page's table gives them (the model's halves are the script's, not replayed here)."""
    page = page_rows()
    assert sorted(page) == sorted(d for d, _ in cost.HEAD_DIMS)
    for d, (cells, one, two) in page.items():
        got = [cost.block_us(rows["raw-h100"], d, cost.HEADS, 4, 12), cost.block_us(rows["one-head-h100"], d, 1, 4, 12),
               cost.block_us(rows["one-head-h100"], d, 8, 8, 24)]
        assert [f"{x:.2f}" for x in got] == [f"{x:.2f}" for x in cells]
        assert tuple(round(x) for x in cost.block_instructions(rows["raw-h100"], d)) == (one, two)


def test_a_blocks_instructions_are_a_fixed_part_and_its_steps(cost, rows):
    """The page's ranges: a second step adds 6,500-12,900 warp instructions, and a one-step block's
    own start and end (one step's block less its step) are 7,000-10,400, on every kernel."""
    steps, fixed = [], []
    for d, _ in cost.HEAD_DIMS:
        one, two = cost.block_instructions(rows["raw-h100"], d)
        steps.append(two - one)
        fixed.append(2 * one - two)
    assert 6_500 <= min(steps) and max(steps) <= 12_900
    assert 6_900 <= min(fixed) and max(fixed) <= 10_450


def test_gqa_blocks_sharing_sectors_cost_most(cost, rows):
    """8 query heads on 2 over one head, µs a block: 1.2-2.7 more at d = 40, 72, 104, 232 (d ≡ 8
    mod 16, d ≥ 40), less than that at every other head dim but 128 and 256 (1.4-1.7)."""
    r = rows["one-head-h100"]
    extra = {d: cost.block_us(r, d, 8, 8, 24) - cost.block_us(r, d, 1, 4, 12) for d, _ in cost.HEAD_DIMS}
    shared = [extra[d] for d in (40, 72, 104, 232)]
    assert 1.1 <= min(shared) and max(shared) <= 2.75
    assert all(1.4 <= extra[d] <= 1.75 for d in (128, 256))
    assert all(extra[d] < 0.65 for d in extra if d not in (40, 72, 104, 232, 128, 256))


def sweep_rows() -> list[tuple]:
    """The page's GQA sweep table: (d, K/V heads, rounds, measured read, model read, read misses, other
    fills, measured write, model write)."""
    pattern = (r"\| (\d+) \| (\d) \| (\d+) \| [\d.]+ \| ([\d.]+) / ([\d.]+) \([\d.]+\) \| ([-\d.]+), ([-\d.]+) \| "
               r"([\d.]+) / ([\d.]+) \|$")
    matches = (re.match(pattern, line) for line in PAGE.read_text().splitlines())
    return [tuple(float(x) for x in m.groups()) for m in matches if m]


def test_the_pages_gqa_sweep_is_the_run(cost, rows):
    """Every launch of the sweep, its measured DRAM bytes as the page gives them, in launch order."""
    page = sweep_rows()
    run = rows["gqa-sweep-h100"]
    assert [(c["d"], c["kv_heads"], c["rounds"]) for c in run] == [tuple(int(x) for x in r[:3]) for r in page]
    for c, r in zip(run, page):
        m = c["median"]
        missed = cost.read_misses(m)
        assert (f"{m['dram__bytes_read.sum'] / 1e6:.2f}", f"{missed / 1e6:.2f}",
                f"{(m['dram__bytes_read.sum'] - missed) / 1e6:.2f}", f"{m['dram__bytes_write.sum'] / 1e6:.1f}") == \
            (f"{r[3]:.2f}", f"{r[5]:.2f}", f"{r[6]:.2f}", f"{r[7]:.1f}")


@pytest.mark.parametrize("key", [(24, 2, 16), (64, 1, 16), (128, 2, 20)])
def test_the_pages_model_figures_are_the_models(cost, rows, key):
    """Three of the sweep's rows, the model's DRAM reads and writes recomputed (h100-sxm)."""
    c = next(c for c in rows["gqa-sweep-h100"] if (c["d"], c["kv_heads"], c["rounds"]) == key)
    r = next(r for r in sweep_rows() if tuple(int(x) for x in r[:3]) == key)
    k = cost.model_json(c, "h100-sxm")["l2"]["per_kernel"]["dq_dk_dv"]
    assert (f"{k['dram_read_bytes'] / 1e6:.2f}", f"{k['dram_write_bytes'] / 1e6:.1f}") == (f"{r[4]:.2f}", f"{r[8]:.1f}")


def test_shared_sectors_fills_are_their_share_of_the_writes(cost, rows):
    """At 20 and 24 rounds the fills beyond the read misses are 0.33-0.34 of the DRAM writes at d = 24 (a
    third of its rows' sectors shared) and 0.16-0.18 at d = 40 (a fifth); at d = 24 the read misses are
    the K/V heads' own bytes within 4 % (every re-read hit)."""
    for d, lo, hi in ((24, 0.33, 0.34), (40, 0.16, 0.18)):
        for c in (c for c in rows["gqa-sweep-h100"] if c["d"] == d and c["rounds"] >= 20):
            m = c["median"]
            share = (m["dram__bytes_read.sum"] - cost.read_misses(m)) / m["dram__bytes_write.sum"]
            assert lo <= round(share, 2) <= hi, (d, c["rounds"], share)
            if d == 24:
                assert abs(cost.read_misses(m) / (c["kv_heads"] * c["n_kv"] * d * 4) - 1) <= 0.04
