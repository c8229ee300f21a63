"""Session 56's L2 edge study, replayed (no GPU needed): docs/validation/2026-12-07-s56-check.md, "Where the
model's DRAM reads are fragile". Each row's main kernel played at 0.9 and 1.1 times the L2's room
(benchmarks/l2_edge_sketch.py); the committed table is what the sketch gives."""

import json
import pathlib

import pytest

from conftest import load_module
from iosim import Options, load_profile, simulate
from iosim.gpu.sdpa import problem_of

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "validation" / "2026-12-07-s56-check" / "l2-edge-h200.txt"
ROWS = ROOT / "docs" / "validation" / "2026-12-04-status" / "rows"


@pytest.fixture(scope="module")
def edge():
    return load_module("l2_edge_sketch", ROOT / "benchmarks" / "l2_edge_sketch.py")


def _lines() -> list:
    """(class, the launch's fields, {room scale: reads over measured}) of each committed line."""
    return load_module("l2_edge_sketch", ROOT / "benchmarks" / "l2_edge_sketch.py").table_lines(TABLE.read_text())


def test_the_summary_counts_the_lines(edge):
    """The table's closing counts are those of its lines: 33 misses, 27 spread past 5 % and 18 past 10 %; 120
    within 10 %, 12 and 3."""
    counts = {}
    for kind, _, got in _lines():
        spread = edge.spread([got[1.0], got[0.9], got[1.1]])
        c = counts.setdefault(kind, [0, 0, 0])
        c[0] += 1
        c[1] += spread > 0.05
        c[2] += spread > 0.1
    assert counts == {"miss": [33, 27, 18], "within": [120, 12, 3]}
    text = TABLE.read_text()
    assert "# miss: 33 rows; spread past 5%: 27, 10%: 18" in text and "# within: 120 rows; spread past 5%: 12, 10%: 3" in text


def _row(edge, fields: list) -> dict:
    """The status row of a committed line's launch."""
    kernel, *named = fields
    want = dict(f.split("=") for f in named)
    for path in sorted(ROWS.glob("*.json")):
        for r in json.loads(path.read_text()):
            got = {k: str(v) for k, v in edge.launch_fields(r).items()}
            if r["kernel"] == kernel and got == want and r["measured"].get("dram_read"):
                return r
    raise AssertionError(f"no status row for {fields}")


@pytest.mark.parametrize("launch", ["dq_dk_dv d=64 Nq=1 Nkv=8192 B=8 H=32 Hkv=8 c=0",
                                    "dq_dk_dv d=128 Nq=4096 Nkv=4096 B=2 H=32 Hkv=8 c=0"])
def test_a_line_is_the_sketchs_plays(edge, launch):
    """The GQA decode backward that misses most (0.720, at 0.9 and 1.1 times the room 0.854 and 0.650) and a GQA
    backward within 10 % that spreads past 5 %: the committed ratios are the sketch's, played again."""
    (kind, fields, got), = [x for x in _lines() if " ".join(x[1]) == launch]
    row = _row(edge, fields)
    base = row["predicted"]["dram_read"] / row["measured"]["dram_read"]
    assert (kind == "miss") == (abs(base - 1) > 0.1)
    again = edge.ratios(row, "h200", (0.9, 1.1), base)
    assert [round(x, 3) for x in again] == [got[1.0], got[0.9], got[1.1]]
    assert edge.spread(again) > 0.05


@pytest.mark.parametrize("launch", ["dq_dk_dv d=64 Nq=1 Nkv=8192 B=8 H=32 Hkv=8 c=0",
                                    "dq_dk_dv d=128 Nq=4096 Nkv=4096 B=2 H=32 Hkv=8 c=0"])
def test_simulates_l2_edge_is_the_sketchs_plays(edge, launch):
    """``Options(l2_edge=True)`` (``iosim simulate --l2-edge``, session 57) gives the launch the reads the sketch's
    line holds, at the room and at 0.9 and 1.1 times it, and notes it at the room's edge."""
    (_, fields, got), = [x for x in _lines() if " ".join(x[1]) == launch]
    row = _row(edge, fields)
    problem = problem_of({k: v for k, v in row.items() if v is not None})
    r = simulate(load_profile("h200"), "fa2", problem, passes="backward",
                 options=Options(kernel="flash-attn-2", cache=True, l2_edge=True))
    (played,) = r.options["launches"]
    reads = played["l2_edge"]["dram_read_bytes"]["dq_dk_dv"]
    assert [round(x / row["measured"]["dram_read"], 3) for x in reads] == [got[1.0], got[0.9], got[1.1]]
    assert played["l2_edge"]["kernel"] == "dq_dk_dv" and played["l2_edge"]["note"].startswith("at the L2 room's edge")


def test_the_range_is_no_interval_for_the_gpus_reads():
    """docs/known-limits.md and iosim/run/l2_edge.py: the reads at 0.9-1.1 times the room held the measured on 6 of
    the 33 misses, and came within 10 % of them on 21; every launch within 10 % comes within 10 % of its range."""
    held, near = {"miss": 0, "within": 0}, {"miss": 0, "within": 0}
    for kind, _, got in _lines():
        held[kind] += min(got.values()) <= 1 <= max(got.values())
        near[kind] += min(got.values()) <= 1.1 and max(got.values()) >= 0.9
    assert held["miss"] == 6 and near == {"miss": 21, "within": 120}
