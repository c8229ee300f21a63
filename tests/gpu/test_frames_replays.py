"""Replays of session 24's committed measurements on the H200 (no GPU needed):
docs/validation/2026-12-04-frames.md. flash-attn 2's forward at d = 8-56 off the kernel sizes
reloads spilled registers that only the lanes inside d wrote; iosim counts the DRAM fills."""

import pathlib

import pytest

from conftest import load_module
from iosim.kernels.spill_frames import UNWRITTEN

ROOT = pathlib.Path(__file__).resolve().parents[2]
FRAMES = ROOT / "docs" / "validation" / "2026-12-04-frames"


@pytest.fixture(scope="module")
def bench():
    """The two benchmark scripts these replays read with, by name."""
    return {name: load_module(name, ROOT / "benchmarks" / f"{name}.py") for name in ("spill_frames", "sdpa_compare")}


def test_the_table_is_what_the_per_instruction_counters_show(bench):
    """Each measured kernel's column-predicated spill stores, less the words an unpredicated
    store wrote before them, are the bytes a thread :data:`UNWRITTEN` lists (0 for the even kernel)."""
    runs = sorted(FRAMES.glob("sass_*.csv"))
    assert len(runs) == 7
    for path in runs:
        kernel, words, before = bench["spill_frames"].unwritten_words(str(path))
        k_head_dim = int(kernel.split("Flash_fwd_kernel_traits<(int)")[1].split(",")[0])
        causal = kernel.split(">>, ")[1].split(", ")[1] == "(bool)1"
        even_k = kernel.split(">>, ")[1].split(", ")[5] == "(bool)1"
        assert 4 * (words - before) == (0 if even_k else UNWRITTEN[(k_head_dim, causal)]), path.name


@pytest.mark.parametrize("run,launches", [("frames-lsu", 166), ("frames2-lsu", 53)])
def test_every_load_exact_and_every_forward_reads_its_dram_bytes(bench, run, launches):
    """Loads, stores and atomics of every launch exact; the main forwards' DRAM reads (with the
    frames' fills) within 10 %, where d = 40 and 48 were 0.76-0.90 without them. (The split-KV
    forwards at d = 8 and 24, B × H = 1 × 4, read 0.26-0.65 MB, of which about 70 KB no data
    request explains, as on every launch: the kernel's code, docs/validation/2026-12-02-cold-code.md.)"""
    compare = bench["sdpa_compare"]
    rows = compare.compare(str(FRAMES / run), cache=True)
    assert len(rows) == launches
    for row in rows:
        ok = compare.agreement(row)
        loads = ok["loads_sass"] if row["kernel"] == "combine" else ok["loads_l1tex"] or ok["loads_sass"]
        assert loads and ok["stores"] and ok["atomics"], row
    for row in (r for r in rows if r["kernel"] == "main"):
        assert abs(row["predicted"]["dram_read"] / row["measured"]["dram_read"] - 1) <= 0.10, row


def test_the_l1s_local_misses_are_the_fills(bench):
    """Where every thread block has a slot of its own, the local loads the L1 missed are iosim's
    fills to the byte; where slots run several blocks, within 6 % (which slots ever run a block
    that reaches the stores follows iosim's placement in launch order); where iosim adds none,
    under 1 % of the kernel's DRAM reads."""
    rows = bench["spill_frames"].frame_rows(str(FRAMES))
    assert len(rows) == 41 + 13
    own = [r for r in rows if r["fills"] and r["blocks"] <= r["slots"]]
    assert len(own) == 15 and all(r["missed"] == r["fills"] for r in own)
    shared = [r for r in rows if r["fills"] and r["blocks"] > r["slots"]]
    assert len(shared) == 22 and all(abs(r["missed"] / r["fills"] - 1) <= 0.06 for r in shared)
    for r in (r for r in rows if not r["fills"]):
        assert r["missed"] < 0.01 * r["dram_read"], r
