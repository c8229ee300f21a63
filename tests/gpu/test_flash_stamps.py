"""benchmarks/flash_stamps*.py without a GPU: the stamps' file format, the replay of a launch in
the order its stamps give, and the grid's instantiations (docs/validation/2026-12-05-flash-stamps.md)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")
sys.path.insert(0, BENCH)

import flash_stamps as fs  # noqa: E402
import flash_stamps_replay as rp  # noqa: E402

SMALL = dict(seq_len=4096, head_dim=128, batch=1, heads=16, causal=True)   # 512 blocks, two waves


def test_read_stamps_takes_the_program_s_layout(tmp_path):
    # stamped_fwd.cu writes per run: the launch's ns, then (start, end, smid) of each block
    blocks = 3
    runs = [[5000, 107, 300, 1, 100, 250, 0, 104, 400, 131], [6000, 50, 60, 2, 51, 90, 3, 52, 99, 4]]
    path = tmp_path / "s.bin"
    np.array(runs, dtype=np.uint64).tofile(path)
    got = rp.read_stamps(str(path), blocks)
    assert [g[0] for g in got] == [5000.0, 6000.0]
    elapsed, start, end, sm = got[0]
    assert start.tolist() == [7.0, 0.0, 4.0] and end.tolist() == [200.0, 150.0, 300.0]
    assert sm.tolist() == [1, 0, 131]
    with pytest.raises(SystemExit, match="not runs of"):
        rp.read_stamps(str(path), 4)


def test_memory_head_inverts_flash_s_launch_order():
    # flash's grid (m, b, h): the k-th (b, h) launched is h = k // B, b = k % B; memory holds b·H + h
    cfg = dict(batch=2, heads=3)
    launch = np.arange(6)
    assert rp.memory_head(launch, cfg).tolist() == [0, 3, 1, 4, 2, 5]


def test_stamps_of_a_lockstep_play_replay_it():
    """Stamps taken from the lockstep play (each block's start half a step before its first step,
    its end where the play ends it) give back its step times, and so its DRAM reads."""
    tile = fs.tile(SMALL)
    _, steps = rp.blocks_of(SMALL, tile)
    lock = rp.lockstep_timing(SMALL, tile, 2)
    slot, starts, end = lock
    start = np.array([s[0] for s in starts]) - 0.5
    stamped = rp.measured_timing(start, np.asarray(end, float), slot, steps)
    for k, a, b in zip(steps, starts, stamped[1]):
        assert np.allclose(a[:k], b[:k], atol=1e-9)
    assert rp.dram_read(SMALL, tile, stamped, "pages", 64) == rp.dram_read(SMALL, tile, lock, "pages", 64)
    # the model's sets: equal ties of the lockstep play may sort either way after the round trip
    assert rp.dram_read(SMALL, tile, stamped, None) == pytest.approx(rp.dram_read(SMALL, tile, lock, None), rel=2e-3)


def test_drift_moves_a_tile_s_readers_apart():
    tile = fs.tile(SMALL)
    _, steps = rp.blocks_of(SMALL, tile)
    slot, starts, end = rp.lockstep_timing(SMALL, tile, 2)
    start = (np.array([s[0] for s in starts]) - 0.5) * 1000        # ns, a step a µs
    end = np.asarray(end, float) * 1000
    rate = np.exp(0.3 * np.random.default_rng(0).standard_normal(len(steps)))
    drifted = start + (end - start) * rate
    lock = rp.measured_timing(start, end, slot, steps)
    assert rp.reuse_mb(SMALL, tile, rp.measured_timing(start, drifted, slot, steps))[1] > rp.reuse_mb(SMALL, tile, lock)[1]
    assert rp.spread(start, drifted, steps, least=4) > 0.5 > rp.spread(start, end, steps, least=4)


def test_grid_runs_the_instantiations_its_lengths_ask_for():
    # run_flash_fwd compiles Is_even_MN only at kHeadDim <= 128, for N a multiple of both blocks
    names = {fs.name(c): fs.build_name(c) for c in fs.GRID}
    assert names["d128_n65536_b1h2_causal"] == "d128_causal_even"
    assert names["d128_n40000_b1h2_causal"] == "d128_causal_uneven"
    assert names["d256_n16384_b1h4_causal"] == "d256_causal_uneven"
    assert names["d128_n16000_b1h6_dense"] == "d128_dense_even"
    assert fs.traits(dict(SMALL, head_dim=64)) == (128, 128, 4)


def _ncu_csv(grid: str, metrics: dict) -> str:
    rows = ['"ID","Kernel Name","Grid Size","Block Size","Metric Name","Metric Unit","Metric Value"']
    rows += [f'"0","stamped_fwd","{grid}","(128, 1, 1)","{k}","","{v}"' for k, v in metrics.items()]
    return "\n".join(rows) + "\n"


def test_summary_reads_a_device_run(tmp_path, monkeypatch):
    """The summary of a run laid out as ``--device`` writes it: stamps from a lockstep play (a
    step a µs) and ncu tables whose DRAM reads are the lockstep replay's, so the stamped-order
    replay comes out at 1.00 of the stamped build."""
    import flash_stamps_summary as summ
    monkeypatch.setattr(fs, "GRID", [SMALL])
    tile = fs.tile(SMALL)
    _, steps = rp.blocks_of(SMALL, tile)
    slot, starts, end = rp.lockstep_timing(SMALL, tile, 2)
    start = (np.array([s[0] for s in starts]) - 0.5) * 1000
    end = np.asarray(end, float) * 1000
    words = np.stack([start, end, slot], 1).astype(np.uint64).ravel()
    (tmp_path / "stamps").mkdir()
    (tmp_path / "ncu").mkdir()
    np.concatenate([[np.uint64(end.max())], words]).astype(np.uint64).tofile(tmp_path / "stamps" / f"{fs.name(SMALL)}.bin")
    got = rp.dram_read(SMALL, tile, rp.measured_timing(start, end, slot, steps), None)
    grid = f"({SMALL['seq_len'] // tile[0]}, 1, {SMALL['heads']})"
    for kind in ("plain", "stamps"):
        text = _ncu_csv(grid, {"dram__bytes_read.sum": got, "gpu__time_duration.sum": 1000.0})
        (tmp_path / "ncu" / f"{fs.name(SMALL)}_{kind}.csv").write_text(text)
    table = summ.summary(str(tmp_path))
    row = table.splitlines()[-1]
    assert "| 1.00 / " in row, row                       # the replay of its own order, sets
    assert (tmp_path / "summary.json").exists()


def test_pacing_by_the_sm_s_company_recovers_a_paired_play():
    """A play where two blocks on an SM each step at 1 / (2 r) of a lone block's rate: spreading a
    block's steps by its SM's company, from the spans alone, puts them nearer their true times than
    spreading them evenly."""
    from l2_drift_sketch import timed
    tile, pair = fs.tile(SMALL), 0.798
    _, steps = rp.blocks_of(SMALL, tile)
    slot, starts, end = timed(steps, pair, 0.5, 0.3, False, 0.0, per_sm=2)
    start, end, sm = np.array([s[0] for s in starts]) - 0.5, np.asarray(end, float), slot % rp.SMS

    def worst(times):
        return np.percentile([np.max(np.abs(np.subtract(a[:k], b[:k]))) for a, b, k in zip(starts, times, steps)], 90)
    assert worst(rp.paired_step_times(start, end, sm, steps, pair)) < 0.5 * worst(rp.step_times(start, end, steps))


def test_sm_spread_tells_slow_sms_from_slow_blocks():
    n = 4000
    rng = np.random.default_rng(1)
    sm, steps = np.arange(n) % rp.SMS, np.full(n, 100)
    start = rp.WAVE_NS + np.arange(n) * 10.0
    own = 1 + 0.2 * (sm % 2)                                 # odd SMs a fifth slower
    assert rp.sm_spread(start, start + 1000 * steps * own, steps, sm) == pytest.approx(0.2 / 1.1)  # over the median SM
    noisy = start + 1000 * steps * np.exp(0.2 * rng.standard_normal(n))   # blocks apart, SMs alike
    assert rp.sm_spread(start, noisy, steps, sm) < 0.3 * rp.spread(start, noisy, steps)


RAW = os.path.join(os.path.dirname(BENCH), "docs", "validation", "2026-12-05-flash-stamps", "raw")


@pytest.mark.parametrize("name, blocks_spread, sms_spread", [("d128_n65536_b1h2_causal", "0.138", "0.008"),
                                                             ("d256_n28000_b1h2_causal", "0.289", "0.010")])
def test_the_committed_stamps_give_the_pages_figures(name, blocks_spread, sms_spread):
    """docs/validation/2026-12-05-flash-stamps.md: two blocks an SM, every block started in launch
    order, and the step spreads of blocks and of SMs in its table (the first call's, the most of
    its three launches)."""
    cfg = next(c for c in fs.GRID if fs.name(c) == name)
    _, steps = rp.blocks_of(cfg, fs.tile(cfg))
    runs = rp.read_stamps(os.path.join(RAW, "stamps", name + ".bin.gz"), len(steps))
    assert len(runs) == fs.REPEATS
    for _, start, end, sm in runs:
        assert rp.per_sm(start, sm) == 2 and not (np.diff(start) < -1000).any() and (end > start).all()
    assert f"{max(rp.spread(s, e, steps) for _, s, e, _ in runs):.3f}" == blocks_spread
    assert f"{max(rp.sm_spread(s, e, steps, sm) for _, s, e, sm in runs):.3f}" == sms_spread
