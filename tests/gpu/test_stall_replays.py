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


def test_the_decode_backward_does_not_wait_for_instruction_fetch():
    """docs/validation/2026-12-04-red-contention.md, "Session 24": a decode backward's one-step
    blocks run about twice a long backward's instructions a block-step, and wait for fetch in 1 %."""
    module = load_module("stall_sampling", ROOT / "benchmarks" / "stall_sampling.py")
    folder = ROOT / "docs" / "validation" / "2026-12-04-red-contention" / "stalls"
    decode, long = (module.summary(str(folder / f)) for f in ("decode_n8192.csv", "n4096.csv"))
    assert decode["stall_no_inst"] < 0.02 * decode["samples"]
    per_block = decode["executed"] / (8 * 32 * 64)           # B × H × key blocks, one step each
    per_step = long["executed"] / (2 * 32 * 32 * 32)         # B × H × key blocks × query blocks
    assert 1.8 < per_block / per_step < 2.1
