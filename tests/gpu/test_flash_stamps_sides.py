"""benchmarks/flash_stamps_sides.py and the replays' side maps, without a GPU
(docs/validation/2026-12-05-same-launch.md)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import flash_stamps as fs  # noqa: E402
import flash_stamps_replay as rp  # noqa: E402
import flash_stamps_sides as sd  # noqa: E402

PAGE = os.path.join(ROOT, "docs", "validation", "2026-12-05-same-launch.md")
SMALL = dict(seq_len=4096, head_dim=128, batch=1, heads=16, causal=True)


def test_committed_side_maps_split_the_sms_evenly_and_two_agree():
    maps = {k: sd.side_map(v) for k, v in sd.MAPS.items()}
    for got in maps.values():
        assert got.shape == (rp.SMS,) and set(got.tolist()) == {0, 1} and got.sum() == rp.SMS // 2
    assert (maps["A"] == maps["B"]).all()          # hop times and l2_shared_ncu agree: one chip
    assert (maps["A"] != maps["C"]).sum() == 68    # another chip


def test_the_index_halves_are_the_default_side_map_and_a_map_moves_the_replay():
    """Lines have a home partition (by address), so sides are not mere labels: the SMs' sides
    move what a launch reads; given as a map, the index halves replay as the default does."""
    tile = fs.tile(SMALL)
    lock = rp.lockstep_timing(SMALL, tile, 2)
    halves = (np.arange(rp.SMS) >= rp.SMS // 2).astype(int)
    odd = np.arange(rp.SMS) % 2
    for placement in (None, "pages"):
        base = rp.dram_read(SMALL, tile, lock, placement, 64)
        assert rp.dram_read(SMALL, tile, lock, placement, 64, side_of=halves) == base
        assert rp.dram_read(SMALL, tile, lock, placement, 64, side_of=odd) > base


def test_the_page_s_offline_table_is_the_committed_replay():
    with open(os.path.join(ROOT, "docs", "validation", "2026-12-05-same-launch", "offline.json")) as f:
        rows = json.load(f)
    assert {r["sides"] for r in rows} == {"halves", *sd.MAPS}
    with open(PAGE) as f:
        page = f.read()
    assert sd.markdown(rows) in page
