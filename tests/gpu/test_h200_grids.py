"""Session 49's H200 runs of the drawn grids (no GPU needed): s38 with its probe s38-bwd3, s42, s43, s44,
s46 with (B, N, H, d) inputs, and s48, each predicted for the H200 before it ran
(docs/validation/2026-12-06-h200-grids.md). Their rows are in docs/validation/2026-12-04-status/rows/
(test_status_rows.py holds them to the model as it is, and the notes to them); here, that the rows measure
what the raw CSVs hold, and that the frozen predictions, scored against the GPU, give the figures the
pages state."""

import json
import pathlib
import statistics

import pytest

from conftest import assert_rows_are_frozen, frozen_entries
from iosim.gpu.sdpa import measured_classes, raw_configs

ROOT = pathlib.Path(__file__).resolve().parents[2]
VALIDATION = ROOT / "docs" / "validation"
ROWS = VALIDATION / "2026-12-04-status" / "rows"
MAIN = ("main", "splitkv", "dq_dk_dv")
#: run (its folder under docs/validation) -> its frozen H200 predictions, None where it had none
RUNS = {
    "2026-12-05-s38-check/raw-h200/s38": "2026-12-05-s38-check/predictions.json",
    "2026-12-05-s38-check/raw-h200/s38-bwd3": None,
    "2026-12-06-s42-check/raw-h200": "2026-12-06-s42-check/predictions-h200.json",
    "2026-12-06-s43-check/raw-h200": "2026-12-06-s43-check/predictions-h200.json",
    "2026-12-06-s44-check/raw-h200": "2026-12-06-s44-check/predictions-h200.json",
    "2026-12-06-s46-check/raw-h200/bnhd": "2026-12-06-s46-check/predictions-s46-bnhd-h200.json",
    "2026-12-06-s48-check/raw-h200": "2026-12-06-s48-check/predictions-h200.json",
}


def _rows(run: str) -> list:
    return json.loads((ROWS / (run.replace("/", "_") + ".json")).read_text())


def _frozen(run: str) -> list:
    """(row, its frozen DRAM reads, its frozen time) of every row of ``run``."""
    return [(r, f["dram"][r["kernel"]]["read_bytes"], f["kernel_times"][r["kernel"]]["predicted_s"])
            for r, f in frozen_entries(VALIDATION / RUNS[run], _rows(run))]


def _score(scored: list) -> dict:
    """Over (row, DRAM reads, time) of the main kernels: those within 10 % of the DRAM reads, the misses
    ((head dim, kernel) -> ratio), and the time errors at N_q >= 2,048 (count, median, worst)."""
    main = [(r, dram / r["measured"]["dram_read"], t / r["measured"]["time_s"]) for r, dram, t in scored
            if r["kernel"] in MAIN and r["measured"].get("dram_read")]
    errors = [abs(t - 1) for r, _, t in main if (r.get("seq_len_q") or r["seq_len"]) >= 2048]
    return {"main": len(main), "within": sum(abs(q - 1) <= 0.10 for _, q, _ in main),
            "misses": {(r["head_dim"], r["kernel"]): round(q, 3) for r, q, _ in main if abs(q - 1) > 0.10},
            "timed": len(errors), "median": round(100 * statistics.median(errors), 1), "worst": round(100 * max(errors), 1)}


@pytest.mark.parametrize("run", RUNS)
def test_the_rows_measure_what_the_raw_csvs_hold(run):
    measured = [measured_classes(launch["metrics"]) for _, _, launches in raw_configs(str(VALIDATION / run))
                for launch in launches]
    assert measured and measured == [r["measured"] for r in _rows(run)]


#: run -> (main kernels, within 10 % of the DRAM reads, the misses, main kernels at N_q >= 2,048, their
#: median and worst time error in %), as the model now gives them and as the frozen predictions did
NOW = {
    "2026-12-05-s38-check/raw-h200/s38": (20, 17, {(136, "dq_dk_dv"): 0.868, (176, "dq_dk_dv"): 0.355,
                                                   (212, "main"): 1.125}, 12, 3.1, 8.3),
    "2026-12-05-s38-check/raw-h200/s38-bwd3": (8, 7, {(160, "dq_dk_dv"): 0.404}, 8, 1.6, 5.4),
    "2026-12-06-s42-check/raw-h200": (32, 30, {(160, "main"): 1.189, (160, "dq_dk_dv"): 1.102}, 18, 2.1, 16.0),
    "2026-12-06-s43-check/raw-h200": (24, 23, {(240, "main"): 1.336}, 12, 2.2, 9.1),
    "2026-12-06-s44-check/raw-h200": (32, 31, {(166, "dq_dk_dv"): 1.324}, 10, 1.5, 5.6),
    "2026-12-06-s46-check/raw-h200/bnhd": (32, 31, {(179, "main"): 1.302}, 16, 3.6, 11.6),
    "2026-12-06-s48-check/raw-h200": (32, 29, {(104, "dq_dk_dv"): 1.135, (128, "main"): 0.836,
                                               (244, "main"): 1.141}, 18, 1.4, 10.4),
}
FROZEN = {
    "2026-12-05-s38-check/raw-h200/s38": (20, 17, {(136, "dq_dk_dv"): 0.852, (176, "dq_dk_dv"): 0.334,
                                                   (212, "main"): 1.125}, 12, 3.4, 8.3),
    "2026-12-06-s42-check/raw-h200": NOW["2026-12-06-s42-check/raw-h200"][:4] + (2.5, 16.0),
    "2026-12-06-s43-check/raw-h200": NOW["2026-12-06-s43-check/raw-h200"],
    "2026-12-06-s44-check/raw-h200": (32, 31, {(166, "dq_dk_dv"): 1.202}, 10, 1.3, 5.6),
    "2026-12-06-s46-check/raw-h200/bnhd": (32, 28, {(84, "dq_dk_dv"): 1.453, (176, "main"): 0.857,
                                                    (179, "main"): 2.547, (184, "main"): 0.798}, 16, 3.6, 18.6),
    "2026-12-06-s48-check/raw-h200": NOW["2026-12-06-s48-check/raw-h200"],
}
FIELDS = ("main", "within", "misses", "timed", "median", "worst")


@pytest.mark.parametrize("run", NOW)
def test_the_model_now_on_each_run(run):
    rows = _rows(run)
    assert _score([(r, r["predicted"]["dram_read"], r["predicted"]["time_s"]) for r in rows]) == \
        dict(zip(FIELDS, NOW[run]))


@pytest.mark.parametrize("run", FROZEN)
def test_the_frozen_predictions_on_each_run(run):
    assert _score(_frozen(run)) == dict(zip(FIELDS, FROZEN[run]))


def test_grid_s48_ran_as_predicted():
    """The model did not change between s48's predictions and its run. Since session 51 the main backward's
    cp.async loads of dO fetch whole lines (docs/validation/2026-12-07-line-fetch.md), and since session 52 the
    lines of O and dO are played at the rows' real offsets (docs/validation/2026-12-07-s52-device.md): the backward
    rows at head dims whose dO rows share lines (the padded d no multiple of 64, more than one head) read more than
    predicted (7 main backwards and 6 dot_do_o), every other row is the frozen prediction."""
    run = "2026-12-06-s48-check/raw-h200"
    moved = (lambda r: r["kernel"] in ("dq_dk_dv", "dot_do_o") and -(-r["head_dim"] // 8) * 8 % 64)
    rows = _rows(run)
    assert_rows_are_frozen(VALIDATION / RUNS[run], [r for r in rows if not moved(r)])
    later = frozen_entries(VALIDATION / RUNS[run], [r for r in rows if moved(r)])
    grew = [(r["kernel"], f["dram"][r["kernel"]]["read_bytes"] < r["predicted"]["dram_read"]) for r, f in later
            if r["predicted"]["dram_read"] != f["dram"][r["kernel"]]["read_bytes"]]
    assert sorted(k for k, _ in grew) == ["dot_do_o"] * 6 + ["dq_dk_dv"] * 7 and all(g for _, g in grew)
