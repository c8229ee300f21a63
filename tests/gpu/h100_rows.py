"""Shared by the H100 replays (tests/gpu/test_h100_replays.py, test_h100_s53.py): a run's rows on the h100-sxm
profile, whether a launch's counts are exact, the main kernels' DRAM misses and time errors, and committed rows
held to their raw CSVs and frozen predictions. Since session 57 the rows the model gives now are committed
(``model-FOLDER.json``, ``benchmarks/status_rows.py --h100``) and only the smaller configs are played again, as the
H200 status rows' are: the six raw folders took about 5 minutes of the suite's 20 on one core, now about 30 s.
After a change to the model, write them again with the H200 rows and commit them with it."""

import json
import pathlib

import pytest

from conftest import assert_rows_are_frozen, frozen_entries
from iosim import load_profile
from iosim.gpu import sdpa

ROOT = pathlib.Path(__file__).resolve().parents[2]
S38 = ROOT / "docs" / "validation" / "2026-12-05-s38-check"
MAIN = ("main", "splitkv", "dq_dk_dv")
_ROWS: dict = {}


#: configs of at most this many scores (B · H · N_q · N_kv) are played again through the L2 model, with each
#: run's smallest, as the H200 status rows' are (tests/gpu/test_status_rows.py); the others are held to the
#: model's committed rows (their counts are checked again, with the L2 model off)
REPLAYED = 2 ** 26


def replayed(folder: str, run: pathlib.Path = S38) -> list:
    """A run's rows (``run / folder``) on the h100-sxm profile as the model gives them: ``model-FOLDER.json``
    beside the raw folder (``benchmarks/status_rows.py --h100`` writes them), held to the raw CSVs, and to the
    model played again on every config of at most REPLAYED scores and on the run's smallest; once a session."""
    path = run / folder
    if path not in _ROWS:
        rows, at = json.loads((run / f"model-{folder}.json").read_text()), 0
        configs, profile = list(sdpa.raw_configs(str(path))), load_profile("h100-sxm")
        sizes = [scores(p) for _, p, _ in configs]
        for (cfg, problem, measured), n in zip(configs, sizes):
            mine, at = rows[at:at + len(measured)], at + len(measured)
            played = n <= REPLAYED or n == min(sizes)
            again = [{**cfg, **r} for r in sdpa.compare(problem, measured, profile, cache=played)]
            assert [r["measured"] for r in again] == [r["measured"] for r in mine], (path, problem)
            keys = set(mine[0]["predicted"]) - {"time_s"} if played else _COUNTS
            assert [{k: r["predicted"].get(k) for k in keys} for r in again] == \
                [{k: r["predicted"].get(k) for k in keys} for r in mine], (path, problem)
            if played:
                assert [r["predicted"]["time_s"] for r in again] == \
                    pytest.approx([r["predicted"]["time_s"] for r in mine], rel=1e-12), (path, problem)
        assert at == len(rows), path
        _ROWS[path] = rows
    return _ROWS[path]


def scores(problem) -> int:
    """B · H · N_q · N_kv: a config's size, as REPLAYED counts it."""
    return problem.batch * problem.heads * problem.seq_len_q * problem.seq_len_kv


#: what a row predicts that the L2 model does not touch (compared on the configs not played again); on those played
#: again, all but the time (a float sum of the model's terms, compared to 1e-12 of itself, as the status rows')
_COUNTS = ("loads", "stores", "atomics", "l1tex_loads")


def exact(compare, row) -> bool:
    ok = compare.agreement(row)
    return (ok["loads_sass"] or ok["loads_l1tex"]) and ok["stores"] and ok["atomics"]


def dram(row) -> float:
    return row["predicted"]["dram_read"] / row["measured"]["dram_read"]


def misses(main: list) -> dict:
    """(head dim, kernel) -> the model's DRAM reads over the measured, of the main kernels off by more than 10 %."""
    return {(r["head_dim"], r["kernel"]): round(dram(r), 3) for r in main if abs(dram(r) - 1) > 0.10}


def time_errors(main: list) -> list:
    """|model / measured − 1| of the time of the main kernels at N_q >= 2,048, sorted."""
    return sorted(abs(r["predicted"]["time_s"] / r["measured"]["time_s"] - 1) for r in main
                  if (r.get("seq_len_q") or r["seq_len"]) >= 2048)


def frozen(folder: pathlib.Path, rows: list, name: str = "predictions-h100.json") -> list:
    """(row, its config's entry in the folder's frozen predictions ``name``) of every row."""
    return frozen_entries(folder / name, rows)


def committed_as_frozen(compare, folder: pathlib.Path, rows: str = "rows-h100.json", raw: str = "raw-h100",
                        predictions: str = "predictions-h100.json") -> list:
    """The folder's committed ``rows``, held to its ``raw`` CSVs (what they measured and the counted loads, the
    L2 model off) and to its frozen ``predictions`` (the DRAM reads and the time)."""
    committed = json.loads((folder / rows).read_text())
    counted = compare.compare(str(folder / raw), cache=False, hw="h100-sxm")     # counts only: no L2 model
    assert [r["measured"] for r in committed] == [r["measured"] for r in counted]
    assert [r["predicted"]["loads"] for r in committed] == [r["predicted"]["loads"] for r in counted]
    assert_rows_are_frozen(folder / predictions, committed)
    return committed
