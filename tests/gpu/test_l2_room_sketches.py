"""Session 54's two sketches of the L2 model, replayed (no GPU needed): docs/validation/2026-12-07-s54.md.
benchmarks/l2_frames_sketch.py plays each pass with its room less its main kernel's spill frames, read from
the sm_90 build's SASS (2026-12-04-spill-footprint/spills.json); benchmarks/l2_sides_sketch.py puts the slots
on the L2's sides in runs. Their figures on the page come from the committed rows, checked here."""

import json
import pathlib

import pytest

from conftest import load_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
DECODE = ROOT / "docs" / "validation" / "2026-12-07-s53-check" / "decode" / "rows-h100.json"
PAGE = ROOT / "docs" / "validation" / "2026-12-07-s54"


@pytest.fixture(scope="module")
def frames():
    return load_module("l2_frames_sketch", ROOT / "benchmarks" / "l2_frames_sketch.py")


@pytest.fixture(scope="module")
def sides(frames):
    return load_module("l2_sides_sketch", ROOT / "benchmarks" / "l2_sides_sketch.py")


def _decode_b8() -> dict:
    """The d = 64 GQA decode backward over 8 batches (32 heads on 8) measured on the H100 in session 53."""
    rows = [r for r in json.loads(DECODE.read_text())
            if r["kernel"] == "dq_dk_dv" and r["batch"] == 8 and r.get("kv_heads") == 8]
    assert len(rows) == 1
    return rows[0]


def test_the_frames_words_are_the_builds(frames):
    """The distinct frame words the local stores touch, as the page quotes them: the d = 64 backward at a
    decode (uneven lengths, even d) 12, the d = 128 one 2, the even dense d = 128 forward 33, d = 192's none,
    the d = 64 split-key forward at a decode none."""
    words = frames.words_table()
    assert words["splitkv", "fp16", 64, "0,0,0,0,1,0,1,0"] == 0
    assert words["dq_dk_dv", "fp16", 64, "0,0,0,0,0,1,0"] == 12
    assert words["dq_dk_dv", "fp16", 128, "0,0,0,0,0,1,0"] == 2
    assert words["main", "fp16", 128, "0,0,0,0,1,1,0,0"] == 33
    assert {w for (k, _, kd, _), w in words.items() if k == "main" and kd == 192} == {0}


def test_the_decode_backwards_room_is_its_frames_less(frames):
    """On the H100's 132 slots (one 8-warp block an SM) the d = 64 decode backward's frames are
    12 words × 128 B × 8 warps × 132 = 1,622,016 B, and the pass is played with that much less room."""
    from iosim.run import launches
    seen = []
    shipped = launches.plan

    def spy(recorded, **kw):
        seen.append((sorted({r.kernel for r in recorded}), kw["capacity_bytes"]))
        return shipped(recorded, **kw)
    launches.plan = spy
    try:
        with frames.less_room(1.0):
            frames.dram(_decode_b8(), "h100-sxm")
    finally:
        launches.plan = shipped
    room = dict((tuple(k), c) for k, c in seen)
    assert room[("convert_dq", "dot_do_o", "dq_dk_dv", "reduce_dkv")] == 50 * 2 ** 20 - 1_622_016
    assert room[("combine", "splitkv")] == 50 * 2 ** 20       # the split-key forward's words: none (above)


def test_the_sketches_figures_for_the_worst_decode(frames, sides):
    """The page's figures for the d = 64 decode at B = 8 (0.792 of the GPU's DRAM reads as shipped): less
    room by the frames once 0.842, by 1.5 times them 0.868; slots on sides in runs of 16 0.848. The sketch
    with no frames is the shipped model, as the rows were predicted."""
    row = _decode_b8()
    measured = row["measured"]["dram_read"]
    with frames.less_room(0.0):
        assert frames.dram(row, "h100-sxm") == row["predicted"]["dram_read"]
    got = []
    for factor in (1.0, 1.5):
        with frames.less_room(factor):
            got.append(round(frames.dram(row, "h100-sxm") / measured, 3))
    with sides.sides_in_runs(16):
        got.append(round(frames.dram(row, "h100-sxm") / measured, 3))
    assert got == [0.842, 0.868, 0.848]


def test_the_committed_h100_tables_are_the_sketches(frames, sides):
    """The committed tables of the H100's decode sweeps (frames-decode-h100.md, sides-decode-h100.md) are what
    the sketches print for those rows now."""
    import functools
    rows = frames.selected([str(DECODE), str(DECODE.with_name("rows-128-h100.json"))], ("dq_dk_dv",), 15.7)
    got = frames.compare(rows, "h100-sxm", [(f"frames × {f:g}", functools.partial(frames.less_room, f)) for f in (1, 1.5)])
    assert got == (PAGE / "frames-decode-h100.md").read_text().rstrip("\n")
    got = frames.compare(rows, "h100-sxm", [("runs 16", functools.partial(sides.sides_in_runs, 16)),
                                             ("hash", functools.partial(sides.sides_in_runs, 1))])
    assert got == (PAGE / "sides-decode-h100.md").read_text().rstrip("\n")
