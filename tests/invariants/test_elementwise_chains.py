"""flash-attn 2's dot_do_o and convert_dq: a lone block's measured duration
(iosim.kernels.elementwise_chains, iosim.models.elementwise_time)."""

import json
import pathlib
import statistics

import pytest

from iosim import Options, Problem, load_profile, simulate
from iosim.kernels import elementwise_chains as ec
from iosim.models.elementwise_time import LONE

RUNS = pathlib.Path(__file__).resolve().parents[2] / "docs/validation/2026-12-04-small-cost"


def _backward(profile="h200", **problem):
    return simulate(load_profile(profile), "fa2", Problem(**problem), passes="forward+backward",
                    options=Options(kernel="flash-attn-2", cache=True)).kernel_times


def _rows() -> list[dict]:
    return [r for path in (RUNS / "small_cost.json", RUNS / "rows" / "small_cost.json")
            for r in json.loads(path.read_text())["rows"]]


def _block_rows(d: int) -> int:
    return 128 if d <= 64 else 64


def test_the_tables_are_the_committed_one_block_launches():
    """Each entry is the median of the committed one-block launches, to the table's digits:
    convert_dq with a whole block of rows, dot_do_o with one row and with a whole block."""
    one = {(r["kernel"], r["d"], r["n_q"]): round(r["median_s"] * 1e6, 2) for r in _rows() if r["heads"] == 1}
    for d, t in ec.CONVERT_DQ_S.items():
        assert round(t * 1e6, 2) == one[("convert_dq", d, _block_rows(d))], d
    for d, (t1, tb) in ec.DOT_DO_O_S.items():
        assert (round(t1 * 1e6, 2), round(tb * 1e6, 2)) == (one[("dot_do_o", d, 1)],
                                                            one[("dot_do_o", d, _block_rows(d))]), d


def test_a_convert_dq_launch_takes_its_lone_block_and_its_bytes():
    """convert_dq: the lone block's measured duration in place of the read-then-write floor,
    the memory times added, whatever the valid rows (its loads are the whole fp32 tile)."""
    for n_q in (1, 5000):
        t = _backward(seq_len_q=n_q, seq_len_kv=5000, seq_len=5000, head_dim=128, heads=8)["convert_dq"]
        rest = max(v for k, v in t.per_resource_s.items() if k in ("L2", "DRAM", "loads and stores at the copy rate"))
        assert t.per_resource_s[LONE] == ec.CONVERT_DQ_S[128]
        assert t.predicted_s == pytest.approx(ec.CONVERT_DQ_S[128] + rest, rel=1e-12)


def test_a_decode_dot_do_o_takes_its_one_row_block():
    """dot_do_o's loads are its valid rows': a decode's block (one row) takes the one-row
    measurement, which bounds the launch where its bytes are few."""
    t = _backward(seq_len_q=1, seq_len_kv=4096, seq_len=4096, head_dim=64, heads=8)["dot_do_o"]
    assert t.predicted_s == ec.DOT_DO_O_S[64][0] and t.bound == LONE
    assert ec.lone_block_s("dot_do_o", 64, 64, 128) == pytest.approx(
        ec.DOT_DO_O_S[64][0] + (ec.DOT_DO_O_S[64][1] - ec.DOT_DO_O_S[64][0]) * 63 / 127)


def test_large_launches_keep_the_memory_bound_time():
    t = _backward(seq_len=8192, head_dim=64, heads=32, batch=4)["dot_do_o"]
    assert t.bound != LONE and t.predicted_s > ec.DOT_DO_O_S[64][1]


def test_off_the_measured_rates_the_memory_model_stays():
    """The durations were measured on the H200: a profile of vendor peaks does not take them."""
    for kernel in ("dot_do_o", "convert_dq"):
        t = _backward("h100-pcie", seq_len_q=1, seq_len_kv=4096, seq_len=4096, head_dim=64, heads=8)[kernel]
        assert LONE not in t.per_resource_s


def test_the_committed_runs_are_predicted_within_their_recorded_error():
    """Over the 252 committed launches (docs/validation/2026-12-04-small-cost.md), each kernel's
    median |error| as recorded there: at most 6.5 % (the memory-bound model alone: 15-43 %)."""
    errors, times = {"dot_do_o": [], "convert_dq": []}, {}
    for r in _rows():
        shape = (r["n_q"], r["n_kv"], r["d"], r["heads"])      # each shape's run gives both kernels' times
        if shape not in times:
            times[shape] = _backward(seq_len_q=r["n_q"], seq_len_kv=r["n_kv"], seq_len=r["n_kv"], head_dim=r["d"],
                                     heads=r["heads"])
        errors[r["kernel"]].append(abs(times[shape][r["kernel"]].predicted_s / r["median_s"] - 1))
    for kernel, e in errors.items():
        assert len(e) == 126 and statistics.median(e) <= 0.065, (kernel, statistics.median(e))
