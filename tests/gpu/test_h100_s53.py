"""Grid s53 as an H100 measured it (session 53, docs/validation/2026-12-07-s53-check.md), and the causal forwards'
L2 notes' H100 figures over every committed H100 run (no GPU needed)."""

import json
import statistics

import pytest

from conftest import load_module
from h100_rows import MAIN, ROOT, committed_as_frozen, dram, exact, misses, time_errors
from iosim import Options, load_profile, simulate
from iosim.gpu import sdpa
from iosim.gpu.sdpa import problem_of
from iosim.kernels import plan as plans

VALIDATION = ROOT / "docs" / "validation"
S53 = VALIDATION / "2026-12-07-s53-check"


@pytest.fixture(scope="module")
def compare():
    return load_module("sdpa_compare", ROOT / "benchmarks" / "sdpa_compare.py")


def test_grid_s53_on_the_h100_as_predicted(compare):
    """Grid s53, drawn at random and predicted before it ran: the committed rows measure what the raw CSVs hold and
    are the frozen predictions; 69 of 69 launches exact; the 32 main kernels' DRAM within 10 % but three, the two
    forwards marked by the long causal and wide causal notes and the d = 168 GQA backward by the long backward's;
    the 20 at N_q >= 2,048 within 7 % of the time."""
    rows = committed_as_frozen(compare, S53, raw="raw-h100/s53")
    assert len(rows) == 69 and all(exact(compare, r) for r in rows)
    main = [r for r in rows if r["kernel"] in MAIN]
    assert len(main) == 32
    assert misses(main) == {(158, "main"): 1.262, (168, "dq_dk_dv"): 1.264, (175, "main"): 1.137}
    errors = time_errors(main)
    assert len(errors) == 20 and max(errors) < 0.07 and statistics.median(errors) < 0.03


@pytest.fixture(scope="module")
def h100_forwards() -> list:
    """Every causal main forward with a causal note that the committed H100 runs measured: grids s38 and s42
    replayed (those forwards alone); s40 (2 min to replay), s43, s46 with (B, H, N, d) inputs, s48 and s53 as
    committed (held to their raw CSVs and frozen predictions in test_h100_replays.py and above); s46 with
    (B, N, H, d) inputs through the model of session 51 (docs/validation/2026-12-07-line-fetch/s46-bnhd-rows-h100.json)."""
    h100, rows = load_profile("h100-sxm"), []
    for run in ("2026-12-05-s38-check", "2026-12-06-s42-check"):
        rows += [_forward_row(problem, launches, h100) for _, problem, launches in
                 sdpa.raw_configs(str(VALIDATION / run / "raw-h100")) if _causal_note(problem, h100)]
    for path in ("2026-12-06-s40-windows/rows-h100.json", "2026-12-06-s43-check/rows-h100.json",
                 "2026-12-06-s46-check/rows-bhnd-h100.json", "2026-12-07-line-fetch/s46-bnhd-rows-h100.json",
                 "2026-12-06-s48-check/rows-h100.json", "2026-12-07-s53-check/rows-h100.json"):
        rows += json.loads((VALIDATION / path).read_text())
    return [r for r in rows if r["kernel"] == "main" and r["causal"]]


def _forward_row(problem, launches: list, profile) -> dict:
    """The row of ``problem``'s main forward launch as ``sdpa.compare`` gives it, its DRAM reads from the forward
    played alone (each launch starts from a cold L2 in the model, as ncu runs it)."""
    result = simulate(profile, "fa2", problem, passes="forward", options=Options(kernel="flash-attn-2", cache=True))
    main, = [launch for launch in launches if sdpa.label(launch["name"]) == "main"]
    return {"kernel": "main", **sdpa.config_of(problem), "predicted": sdpa.predicted(result, "main"),
            "measured": sdpa.measured_classes(main["metrics"])}


def _causal_note(problem, profile) -> str:
    """The L2 note of ``problem``'s forward on ``profile`` when it is a causal forward's, else ""."""
    forward, = plans.plan("flash-attn-2", "fa2", problem, profile, "forward")
    note = forward.l2_note or ""
    keys = [getattr(plans, name).split("{")[0] for name in NAMES]
    return note if problem.causal and any(key in note for key in keys) else ""


NAMES = ("LONG_CAUSAL_NOTE", "WIDE_CAUSAL_NOTE")


@pytest.mark.parametrize("name", NAMES)
def test_the_causal_notes_h100_figures_are_the_rows(h100_forwards, name):
    """The count, range and count within 10 % a causal forward's note states for the H100 are those of the
    forwards its text marks on the h100-sxm profile."""
    h100, template = load_profile("h100-sxm"), getattr(plans, name)
    key = template.split("{")[0]
    marked = [dram(r) for r in h100_forwards if key in _causal_note(problem_of(r), h100)]
    within = sum(abs(q - 1) <= 0.10 for q in marked)
    stated = f"on an H100 of {len(marked)} {min(marked):.2f}-{max(marked):.2f} x ({within} within 10 %"
    assert stated in template, stated
