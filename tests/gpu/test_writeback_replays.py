"""Replays of the L2 write-back microbenchmark (no GPU needed): the cap on dirty data that
docs/validation/2026-12-02-l2-writeback.md (H200) and 2026-12-06-l2-writeback-h100.md (H100) read
from the raw ncu CSVs, recomputed."""

import json
import pathlib

import pytest

from iosim.gpu.ncu import read_launches

ROOT = pathlib.Path(__file__).resolve().parents[2] / "docs" / "validation"
#: run -> (CSV name, the residue's range the page states, MB)
RUNS = {"2026-12-02-l2-writeback": ("l2_writeback.csv", (29.5, 29.7)),
        "2026-12-06-l2-writeback-h100": ("l2_writeback.csv", (24.8, 25.3))}


def cases(run: str) -> list[tuple[dict, float]]:
    """(case, DRAM bytes written within the kernel) of every launch, in the run's order."""
    meta = json.loads((ROOT / run / "cases.json").read_text())
    meta = meta["cases"] if isinstance(meta, dict) else meta
    launches = read_launches((ROOT / run / RUNS[run][0]).read_text())
    assert len(launches) == len(meta)
    return [(c, ln["metrics"]["dram__bytes_write.sum"]) for c, ln in zip(meta, launches)]


@pytest.mark.parametrize("run", sorted(RUNS))
def test_nothing_is_written_back_by_time(run):
    """Up to 16 MB written, nothing reaches DRAM within the kernel, however long it waits."""
    small = [w for c, w in cases(run) if c["bytes"] <= 16_000_000]
    assert small and max(small) <= 0.3e6


@pytest.mark.parametrize("run", sorted(RUNS))
def test_past_the_cap_what_stays_dirty_is_the_cap(run):
    """Writing 32 or 64 MB, what stays dirty (written less written back) is the page's cap, at every wait."""
    lo, hi = RUNS[run][1]
    left = [(c["bytes"] - w) / 1e6 for c, w in cases(run) if c["bytes"] >= 32_000_000]
    assert left and lo <= min(left) and max(left) <= hi
