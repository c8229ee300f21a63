"""explore over several points: -N, -d and --heads take value lists and ranges, a best per
point; the CSV and JSON contracts (point columns, is_best, schema_version)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from iosim.cli.main import main
from iosim.report.explore_report import EXPLORE_SCHEMA_VERSION

SWEEP = ["explore", "--hw", "toy", "--algo", "fa2,fa1", "-N", "256:512", "-d", "16,32", "--heads", "1:2:+1",
         "--jobs", "1"]
POINTS = {(n, d, h) for n in (256, 512) for d in (16, 32) for h in (1, 2)}


def test_value_lists_and_ranges_give_a_block_per_point(capsys):
    assert main(SWEEP + ["--no-cache"]) == 0
    out = capsys.readouterr().out
    headers = [l for l in out.splitlines() if " on toy: N=" in l]
    assert len(headers) == len(POINTS) * 2                    # a block per point and algorithm
    assert sum(l.startswith("best ") for l in out.splitlines()) == len(POINTS) * 2
    assert "fa2 on toy: N=512 d=32 batch=1 heads=2 fp16" in out


def test_csv_rows_carry_the_point(capsys):
    assert main(SWEEP + ["--format", "csv", "--no-cache"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    for col in ("hw", "algorithm", "N", "d", "heads", "causal", "dtype", "is_best", "near_tie", "practical",
                "predicted_s", "hbm_total_bytes"):
        assert col in rows[0]
    assert {r["hw"] for r in rows} == {"toy"} and {r["dtype"] for r in rows} == {"fp16"}
    assert {(int(r["N"]), int(r["d"]), int(r["heads"])) for r in rows} == POINTS
    for point in POINTS:
        for algo in ("fa1", "fa2"):
            mine = [r for r in rows if (int(r["N"]), int(r["d"]), int(r["heads"])) == point and r["algorithm"] == algo]
            assert sum(r["is_best"] == "True" for r in mine) == 1, (point, algo)
            assert sum(r["practical"] == "True" for r in mine) == 1


def test_json_contract(capsys):
    assert main(SWEEP + ["--format", "json", "--no-cache"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema_version"] == EXPLORE_SCHEMA_VERSION == 1
    assert len(out["results"]) == len(POINTS) * 2 and out["results"][0]["best"] == out["best"]
    for key in ("best", "best_proven", "ties", "paper_default", "kernel_default", "candidates", "time_model", "cache",
                "grid", "objective", "point"):
        assert key in out
    for key in ("block_q", "block_kv", "hbm_read_bytes", "hbm_write_bytes", "predicted_s", "is_best"):
        assert key in out["best"]
    assert out["best"]["is_best"] is True
    for res in out["results"]:
        p = res["point"]
        assert {"hw", "N", "d", "heads", "causal", "dtype"} <= set(p) and p["causal"] is False
        assert (p["N"], p["d"], p["heads"]) in POINTS
        best = [c for c in res["candidates"] if c["is_best"]]
        assert len(best) == 1 and (best[0]["block_q"], best[0]["block_kv"]) == (res["best"]["block_q"],
                                                                               res["best"]["block_kv"])
        for c in res["candidates"]:
            for key in ("block_q", "block_kv", "feasible", "reason", "is_best", "near_tie", "predicted_s_min"):
                assert key in c
        assert res["ties"]["practical"]["block_q"] >= 16
        assert [res["ties"]["practical"]["block_q"], res["ties"]["practical"]["block_kv"]] in res["ties"]["members"]
    json.dumps(out)
    assert main(["explore", "--hw", "toy", "--algo", "fa2", "-N", "256", "-d", "16", "--causal", "--dtype", "bf16",
                 "--jobs", "1", "--format", "json"]) == 0
    point = json.loads(capsys.readouterr().out)["point"]
    assert (point["causal"], point["dtype"], point["hw"]) == (True, "bf16", "toy")


def test_sequence_length_range_is_accepted(capsys):
    assert main(["explore", "--hw", "h100-sxm", "--algo", "fa2", "-N", "4k:16k", "-d", "128", "--block-q", "128",
                 "--block-kv", "64", "--no-cache", "--jobs", "1", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["point"]["N"] for r in out["results"]] == [4096, 8192, 16384]


def test_too_many_points_and_missing_length(capsys):
    assert main(["explore", "--hw", "toy", "--algo", "fa2", "-N", "16:1024:+16", "-d", "16,32", "--jobs", "1"]) == 2
    assert "at most 64" in capsys.readouterr().err
    assert main(["explore", "--hw", "toy", "--algo", "fa2", "-d", "16", "--jobs", "1"]) == 2
    assert "--seq-len" in capsys.readouterr().err


@pytest.mark.parametrize("tie", ["0.05", "5%"])
def test_tie_option(capsys, tie):
    assert main(["explore", "--hw", "toy", "--algo", "fa2", "-N", "512", "-d", "32", "--tie", tie, "--jobs", "1",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["ties"]["tolerance"] == pytest.approx(0.05)


def test_the_heat_maps_title_names_causal_and_gqa():
    """Issue 15: the plot's title said nothing of a causal mask or grouped K/V heads."""
    from iosim import Problem
    from iosim.report.plots import problem_label

    assert problem_label(Problem(seq_len=4096, head_dim=128, heads=32, kv_heads=8, causal=True, batch=2)) == \
        "N = 4,096, d = 128, heads = 32 (K/V heads 8), batch 2, fp16, causal"
    assert problem_label(Problem(seq_len_q=1, seq_len_kv=8192, head_dim=64)) == "N_q = 1, N_kv = 8,192, d = 64, heads = 1, fp16"
