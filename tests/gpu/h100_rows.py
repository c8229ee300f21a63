"""Shared by the H100 replays (tests/gpu/test_h100_replays.py, test_h100_s53.py): a run's rows on the h100-sxm
profile, whether a launch's counts are exact, the main kernels' DRAM misses and time errors, and committed rows
held to their raw CSVs and frozen predictions."""

import json
import pathlib

from conftest import assert_rows_are_frozen, frozen_entries

ROOT = pathlib.Path(__file__).resolve().parents[2]
S38 = ROOT / "docs" / "validation" / "2026-12-05-s38-check"
MAIN = ("main", "splitkv", "dq_dk_dv")
_ROWS: dict = {}


def replayed(compare, folder: str, run: pathlib.Path = S38) -> list:
    """A run's rows (``run / folder``) on the h100-sxm profile, compared once a session."""
    path = str(run / folder)
    if path not in _ROWS:
        _ROWS[path] = compare.compare(path, cache=True, hw="h100-sxm")
    return _ROWS[path]


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
