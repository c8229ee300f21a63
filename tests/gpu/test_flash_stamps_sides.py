"""benchmarks/flash_stamps_sides.py and the replays' side maps, without a GPU
(docs/validation/2026-12-05-same-launch.md)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

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


def test_the_dispatch_order_is_the_first_wave_in_launch_order_not_by_stamped_start():
    sm = np.r_[np.arange(rp.SMS)[::-1], np.arange(rp.SMS), [5, 9]]
    start = np.r_[np.arange(2 * rp.SMS)[::-1] // 32 * 32, [1e6, 2e6]].astype(float)  # 32 ns steps
    assert rp.dispatch_order(start, sm).tolist() == sm[:2 * rp.SMS].tolist()
    with pytest.raises(SystemExit, match="do not fill every SM"):
        rp.dispatch_order(start, np.r_[np.zeros(2, int), sm[2:]])


def test_a_same_launch_folder_replays_its_own_dispatch(tmp_path):
    """A folder as ``--same-launch`` writes it, its one launch stamped from a lockstep play on the
    SMs in reverse dispatch order, its chip's sides the index halves: the lockstep play from the
    recorded dispatch order is the stamped order's, and the chip's sides replay as the halves."""
    import flash_stamps_same as same
    from test_flash_stamps import _ncu_csv
    tile = fs.tile(SMALL)
    dispatch = np.tile(np.arange(rp.SMS)[::-1], 2)
    slot, starts, end = rp.lockstep_timing(SMALL, tile, 2, dispatch)
    start = (np.array([s[0] for s in starts]) - 0.5) * 1000
    end = np.asarray(end, float) * 1000
    (tmp_path / "stamps").mkdir()
    (tmp_path / "ncu").mkdir()
    words = np.stack([np.round(start), np.round(end), slot], 1).astype(np.uint64).ravel()
    np.concatenate([[np.uint64(end.max())], words]).tofile(tmp_path / "stamps" / f"{fs.name(SMALL)}_0.bin")
    grid = f"({SMALL['seq_len'] // tile[0]}, 1, {SMALL['heads']})"
    text = _ncu_csv(grid, {"dram__bytes_read.sum": 5e7, "gpu__time_duration.sum": 1000.0})
    (tmp_path / "ncu" / f"{fs.name(SMALL)}_0.csv").write_text(text)
    halves = (np.arange(rp.SMS) >= rp.SMS // 2).astype(int).tolist()
    for name in ("sides.json", "sides_end.json"):
        (tmp_path / name).write_text(json.dumps(halves))
    (tmp_path / "configs.json").write_text(json.dumps({"grid": [SMALL], "times": 1}))
    table = same.rows(str(tmp_path), jobs=1)
    row = table["launches"][0]
    assert table["sides_unchanged"] and row["dispatch"] == dispatch.tolist()
    assert row["stamped chip"] == row["stamped halves"]
    assert row["lockstep halves"]["pages"] == row["stamped halves"]["pages"]
    assert "| 0 | 50.0 | 1 |" in same.markdown(table)
    import gzip                                        # committed stamps are gzipped
    stamps = tmp_path / "stamps" / f"{fs.name(SMALL)}_0.bin"
    stamps.with_suffix(".bin.gz").write_bytes(gzip.compress(stamps.read_bytes()))
    stamps.unlink()
    assert same.rows(str(tmp_path), jobs=1) == table


def test_the_page_s_model_table_is_the_committed_model_run():
    with open(os.path.join(ROOT, "docs", "validation", "2026-12-05-same-launch", "model.json")) as f:
        rows = json.load(f)
    assert [r["dispatch"] for r in rows] == [False, True] * (len(rows) // 2)
    assert all(a["config"] == b["config"] for a, b in zip(rows[::2], rows[1::2]))
    with open(PAGE) as f:
        assert sd.model_markdown(rows) in f.read()


@pytest.mark.parametrize("machine", ["h100", "h200"])
def test_the_same_launch_table_is_its_rows_and_its_ncu(machine):
    """The same-launch runs (session 35 on an H100, session 36 on the H200): the table is its rows,
    and each row's DRAM reads are what ncu measured in the committed raw folder (flash_stamps_same's reader)."""
    import flash_stamps_same as same
    folder = os.path.join(ROOT, "docs", "validation", f"2026-12-05-same-launch-{machine}")
    with open(os.path.join(folder, "same.json")) as f:
        table = json.load(f)
    assert same.markdown(table) in open(os.path.join(folder, "same.md")).read()
    assert len(table["launches"]) == 24 and table["sides_unchanged"]
    for r in table["launches"][:8]:
        got = same._dram(os.path.join(folder, "raw", "ncu", f"{r['name']}_{r['i']}.csv"))
        assert got["dram__bytes_read.sum"] == r["dram_read"]
