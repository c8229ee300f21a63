"""docs/known-limits.md lists every note a launch carries where a model is known not to be exact,
with the figures the note itself states (which tests/gpu/test_status_rows.py checks against the
committed rows)."""

import pathlib
import re

from conftest import note_figures
from iosim.kernels import flash_code, plan, spill_frames

DOC = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "known-limits.md").read_text()
MODULES = {"plan": plan, "flash_code": flash_code, "spill_frames": spill_frames}


def _rows() -> dict:
    """constant name (module.NAME) -> its table row's cells."""
    return {m.group(1): [c.strip() for c in line.split("|")[2:-1]]
            for line in DOC.splitlines() for m in [re.match(r"\| `(\w+\.\w+)` \|", line)] if m}


def test_every_not_exact_note_is_listed():
    listed = _rows()
    for name, module in MODULES.items():
        for attr in dir(module):
            if attr.endswith("_NOTE") and isinstance(getattr(module, attr), str):
                if getattr(module, attr).startswith("not exact") or attr == "UNMEASURED_NOTE":
                    assert f"{name}.{attr}" in listed, f"{name}.{attr} is not in docs/known-limits.md"


def test_each_rows_figures_are_its_notes():
    for key, cells in _rows().items():
        module, attr = key.split(".")
        text = getattr(MODULES[module], attr)
        if not text.startswith("not exact"):
            continue
        stated = note_figures(text)
        assert f"{stated['low']}–{stated['high']}" in cells, (key, cells)
        assert f"{stated['count']} ({stated.get('within', stated.get('median'))})" in cells, (key, cells)
