"""Grid s57 as an H100 measured it (session 57, docs/validation/2026-12-07-s57-check.md; no GPU needed)."""

import json
import statistics

import pytest

from conftest import load_module
from h100_rows import MAIN, ROOT, committed_as_frozen, exact, misses, time_errors
from iosim.run.l2_edge import spread

S57 = ROOT / "docs" / "validation" / "2026-12-07-s57-check"


@pytest.fixture(scope="module")
def compare():
    return load_module("sdpa_compare", ROOT / "benchmarks" / "sdpa_compare.py")


def test_grid_s57_on_the_h100_as_predicted(compare):
    """Grid s57, drawn at random and predicted before it ran: the committed rows measure what the raw CSVs hold and
    are the frozen predictions; 74 of 74 launches exact; the 32 main kernels' DRAM within 10 % but three, each marked
    by a note: the d = 40 causal split-KV forward (partial code, 1.15), the d = 152 backward (wave rows, 1.102) and
    the d = 209 causal GQA forward (wide causal, 1.165); the 8 at N_q >= 2,048 within 4 % of the time."""
    rows = committed_as_frozen(compare, S57, raw="raw-h100/s57")
    assert len(rows) == 74 and all(exact(compare, r) for r in rows)
    main = [r for r in rows if r["kernel"] in MAIN]
    assert len(main) == 32
    assert misses(main) == {(40, "splitkv"): 1.15, (152, "dq_dk_dv"): 1.102, (209, "main"): 1.165}
    frozen = {r["config"]["head_dim"]: r["notes"] for r in json.loads((S57 / "predictions-h100.json").read_text())["rows"]}
    assert "unrolled copies of the step" in frozen[40]["forward"]["l2_note"]
    assert "query heads with blocks resident at once" in frozen[152]["backward"]["l2_note"]
    assert "causal forward of wide heads" in frozen[209]["forward"]["l2_note"]
    errors = time_errors(main)
    assert len(errors) == 8 and max(errors) < 0.04 and statistics.median(errors) < 0.02


def _edge_lines() -> list:
    """(class, launch, {room scale: reads over measured}) of each line of l2-edge-h100.txt."""
    edge = load_module("l2_edge_sketch", ROOT / "benchmarks" / "l2_edge_sketch.py")
    lines = edge.table_lines((S57 / "l2-edge-h100.txt").read_text())
    return [(kind, " ".join(fields), got) for kind, fields, got in lines]


def test_the_edge_table_on_s57():
    """Session 56's edge study on this grid, prospective (benchmarks/l2_edge_sketch.py, session 57): of the 3 misses,
    2 spread past 5 % (the third is the partial-code forward, whose excess is its code, not the room); of the 29
    within 10 %, 2 do (0.059 and 0.061)."""
    counts = {}
    for kind, _, got in _edge_lines():
        counts.setdefault(kind, []).append(round(spread([got[1.0], got[0.9], got[1.1]]), 3))
    assert len(counts["miss"]) == 3 and sum(s > 0.05 for s in counts["miss"]) == 2
    assert len(counts["within"]) == 29 and sorted(s for s in counts["within"] if s > 0.05) == [0.059, 0.061]
    assert "# miss: 3 rows; spread past 5%: 2, 10%: 2" in (S57 / "l2-edge-h100.txt").read_text()


def test_simulates_l2_edge_gives_the_d209_forwards_line():
    """``iosim simulate --l2-edge`` on the d = 209 causal GQA forward: the table's reads over the measured, and a
    range (at 0.9-1.1 times the room) that holds the measured."""
    from iosim import Options, load_profile, simulate
    from iosim.gpu.sdpa import problem_of
    rows = json.loads((S57 / "rows-h100.json").read_text())
    row = next(r for r in rows if r["head_dim"] == 209 and r["kernel"] == "main")
    (_, _, got), = [x for x in _edge_lines() if x[1].startswith("main d=209 ")]
    r = simulate(load_profile("h100-sxm"), "fa2", problem_of({k: v for k, v in row.items() if v is not None}),
                 passes="forward", options=Options(kernel="flash-attn-2", cache=True, l2_edge=True))
    reads = r.options["launches"][0]["l2_edge"]["dram_read_bytes"]["main"]
    assert [round(x / row["measured"]["dram_read"], 3) for x in reads] == [got[1.0], got[0.9], got[1.1]]
    assert min(reads) <= row["measured"]["dram_read"] <= max(reads)
