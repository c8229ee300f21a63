"""Replay of session 24's warp-stall sampling (docs/validation/2026-12-04-even-mn.md, "Session
24"; no GPU needed): the causal forward's uneven instantiation waits for instruction fetch."""

import pathlib

from conftest import load_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
STALLS = ROOT / "docs" / "validation" / "2026-12-04-even-mn" / "stalls"


def test_the_uneven_causal_forward_loses_its_time_to_instruction_fetch():
    module = load_module("stall_sampling", ROOT / "benchmarks" / "stall_sampling.py")
    uneven, even = (module.summary(str(STALLS / f)) for f in ("n1023_causal.csv", "n1024_causal.csv"))
    assert uneven["flags"].split(", ")[4] == "(bool)0" and even["flags"].split(", ")[4] == "(bool)1"
    assert (uneven["instructions"], even["instructions"]) == (7408, 4504)
    assert 1.5 < uneven["samples"] / even["samples"] < 1.6
    extra = uneven["samples"] - even["samples"]
    fetch = uneven["stall_no_inst"] - even["stall_no_inst"]
    assert 0.95 < fetch / extra < 1.1          # the extra samples are instruction fetch
    assert uneven["executed"] / even["executed"] < 1.15
