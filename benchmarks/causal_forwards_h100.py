"""The causal forwards with a causal L2 note that grids s38 and s42 measured on an H100, each played alone through
the L2 model on the h100-sxm profile (each launch starts from a cold L2 in the model, as ncu runs it): the rows that
tests/gpu/test_h100_s53.py counts the long and wide causal notes' H100 figures over, with the committed runs'
forwards of the other grids. They are committed (docs/validation/2026-12-07-s53-check/forwards-alone-h100.json),
as the H100 runs' model rows are, since playing them took 47 s of the suite; the test plays the smallest again.

    python benchmarks/causal_forwards_h100.py        # about a minute; benchmarks/status_rows.py --h100 runs it too
"""

from __future__ import annotations

import json
import pathlib

from iosim import Options, load_profile, simulate
from iosim.gpu import sdpa
from iosim.kernels import plan as plans

ROOT = pathlib.Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "docs" / "validation"
#: the H100 runs whose causal forwards are played alone, and where their rows are committed
RUNS = ("2026-12-05-s38-check", "2026-12-06-s42-check")
ROWS = VALIDATION / "2026-12-07-s53-check" / "forwards-alone-h100.json"
#: the notes that mark a causal forward (constants of iosim.kernels.plan)
NAMES = ("LONG_CAUSAL_NOTE", "WIDE_CAUSAL_NOTE")


def causal_note(problem, profile) -> str:
    """The L2 note of ``problem``'s forward on ``profile`` when it is one of :data:`NAMES`', else ""."""
    forward, = plans.plan("flash-attn-2", "fa2", problem, profile, "forward")
    note = forward.l2_note or ""
    keys = [getattr(plans, name).split("{")[0] for name in NAMES]
    return note if problem.causal and any(key in note for key in keys) else ""


def marked(run: str, profile) -> list:
    """(problem, its launches as measured) of each forward of ``run``'s raw-h100 that carries a causal note."""
    return [(problem, launches) for _, problem, launches in sdpa.raw_configs(str(VALIDATION / run / "raw-h100"))
            if causal_note(problem, profile)]


def forward_row(problem, launches: list, profile) -> dict:
    """The row of ``problem``'s main forward launch as ``sdpa.compare`` gives it, its DRAM reads from the forward
    played alone."""
    result = simulate(profile, "fa2", problem, passes="forward", options=Options(kernel="flash-attn-2", cache=True))
    return {"kernel": "main", **sdpa.config_of(problem), "predicted": sdpa.predicted(result, "main"),
            "measured": measured(launches)}


def measured(launches: list) -> dict:
    """What ncu measured of the main forward among a config's ``launches``."""
    main, = [launch for launch in launches if sdpa.label(launch["name"]) == "main"]
    return sdpa.measured_classes(main["metrics"])


def write() -> str:
    """Play every marked forward of :data:`RUNS` and write their rows over :data:`ROWS`."""
    h100 = load_profile("h100-sxm")
    rows = [{"run": run, **forward_row(problem, launches, h100)} for run in RUNS for problem, launches in marked(run, h100)]
    ROWS.write_text(json.dumps(rows, indent=1) + "\n")
    return f"{ROWS.relative_to(ROOT)}: {len(rows)} rows"


if __name__ == "__main__":
    print(write())
