"""explore ranks by the model `iosim simulate` uses: the same time for the same tile (the L2
model on for profiles with a cache, a real kernel's time model with --kernel), the
objectives time / bytes / dram, and bounds that hold where the L2 was not replayed."""

from __future__ import annotations

import json

import pytest

from iosim import Options, Problem, load_profile, prepare, simulate
from iosim.cli.main import main
from iosim.errors import ProblemError
from iosim.run.launches import l2_by_default, run_launches
from iosim.hardware.loader import profile_from_yaml
from iosim.studies.explore import explore

TILES = [(64, 64), (128, 64), (128, 128), (256, 32), (96, 80)]


@pytest.mark.parametrize("hw,algo,problem", [
    ("h100-sxm", "fa2", Problem(seq_len=2048, head_dim=128)),
    ("a100-80gb", "fa1", Problem(seq_len=1024, head_dim=64, heads=4, causal=True)),
    ("mi300x", "fa2", Problem(seq_len=1024, head_dim=128, heads=2)),       # L2 and Infinity Cache
    ("toy", "fa2", Problem(seq_len=1000, head_dim=32)),
])
def test_explore_gives_simulates_time(hw, algo, problem):
    """Every replayed or exact time is what simulate(..., Options(cache=True)) predicts; the
    rest are bounded by the times without and with the L2 model."""
    res = explore(hw, algo, problem, block_q=[48, 64, 128, 256], block_kv=[32, 64, 128], objective="time",
                  replays=20, jobs=1)
    assert res.cache and res.time_model == "roofline with the L2 model"
    checked = 0
    for c in res.candidates:
        if not c.feasible:
            continue
        r = simulate(hw, algo, problem, blocks=(c.block_q, c.block_kv), options=Options(cache=True))
        assert c.time_min_s <= r.time.predicted_s * (1 + 1e-12) and r.time.predicted_s <= c.time_max_s * (1 + 1e-12)
        if c.time_exact:
            assert c.predicted_s == r.time.predicted_s, (c.block_q, c.block_kv)
            checked += 1
        if c.replayed:
            d = r.to_dict()["dram"]
            assert c.dram_bytes == d["read_bytes"] + d["write_bytes"] + d["dirty_bytes_left"]
            assert c.dram_min_bytes <= c.dram_bytes <= c.dram_max_bytes or c.dram_min_bytes == c.dram_max_bytes
    assert checked >= 2
    for ref in (res.best, res.practical, res.paper):     # every tile the report names is exact
        assert ref.time_exact


def test_same_time_as_the_simulate_cli(capsys):
    """`iosim explore --objective time` and `iosim simulate` print the same time for a tile."""
    assert main(["explore", "--hw", "h100-sxm", "--algo", "fa2", "-N", "2048", "-d", "128", "--objective", "time",
                 "--block-q", "64,128", "--block-kv", "64,128", "--format", "json", "--jobs", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cache"] is True
    for c in out["candidates"]:
        if c["predicted_s"] is None:
            continue
        assert main(["simulate", "--hw", "h100-sxm", "--algo", "fa2", "-N", "2048", "-d", "128", "--block-q",
                     str(c["block_q"]), "--block-kv", str(c["block_kv"]), "--format", "json"]) == 0
        sim = json.loads(capsys.readouterr().out)
        assert sim["time"]["predicted_s"] == c["predicted_s"]
        assert "dram" in sim             # simulate modelled the L2 too


def test_no_cache_is_the_roofline_without_l2():
    problem = Problem(seq_len=2048, head_dim=64)
    res = explore("h100-sxm", "fa2", problem, block_q=[64, 128], block_kv=[64, 128], objective="time", cache=False,
                  jobs=1)
    assert not res.cache and res.time_model == "roofline without the L2 model"
    for c in res.candidates:
        assert c.time_exact and not c.replayed and c.dram_min_bytes is None
        assert c.predicted_s == simulate("h100-sxm", "fa2", problem, blocks=(c.block_q, c.block_kv)).time.predicted_s


@pytest.mark.parametrize("hw", ["h100-sxm", "h200"])   # the h200's measured rates: two blocks an SM overlap
def test_kernel_time_model_for_the_kernels_own_tile(hw):
    """--kernel: the kernel's own tile has exactly `simulate --kernel`'s time; other tiles
    are its launches with their tile (rows in multiples of 16 × warps)."""
    problem = Problem(seq_len=4096, head_dim=128, heads=16)
    res = explore(hw, "fa2", problem, objective="time", kernel="flash-attn-2", block_kv=[64, 128], jobs=1)
    sim = simulate(hw, "fa2", problem, options=Options(kernel="flash-attn-2", cache=True))
    assert res.time_model == "flash-attn-2's kernel time model with the L2 model"
    assert (res.kernel.block_q, res.kernel.block_kv) == (sim.blocks.block_q, sim.blocks.block_kv)
    assert res.kernel.predicted_s == sim.time.predicted_s
    assert {c.block_q % 64 for c in res.candidates if "user" in c.sources} == {0}    # 4 warps × 16 rows
    with pytest.raises(ProblemError, match="one pass at a time"):
        explore("h100-sxm", "fa2", problem, kernel="flash-attn-2", passes="forward+backward", jobs=1)


@pytest.mark.parametrize("problem,on", [
    (Problem(seq_len=1024, head_dim=64), True),
    (Problem(seq_len=2 ** 19, head_dim=64), True),                 # lockstep: 16,777,216 tile steps per head
    (Problem(seq_len=8192, head_dim=64, batch=16, heads=16), True),
    (Problem(seq_len=8192, head_dim=64, batch=64, heads=16, causal=True), True),  # plays a few hundred heads
    (Problem(seq_len=65536, head_dim=64, heads=16, causal=True), True),   # past the budget: a sample is played
    (Problem(seq_len=2 ** 18, head_dim=64, causal=True), True),    # 4,194,304 tile steps a head: played in windows
])
def test_default_cache_follows_simulate(problem, on):
    """explore models the L2 by default exactly when simulate does (run.launches.l2_by_default)."""
    res = explore("h100-sxm", "fa2", problem, block_q=[128], block_kv=[128], jobs=1)
    setup = prepare("h100-sxm", "fa2", problem, blocks=(128, 128))
    assert res.cache == l2_by_default(setup) == on


def test_the_l2_model_never_adds_dram_traffic():
    """The upper bound explore uses: the time with the L2 model is at most the time without it."""
    for hw in ("h100-sxm", "mi300x", "toy"):
        for algo, passes in (("fa2", "forward"), ("fa1", "forward"), ("fa2", "backward")):
            for blocks in ((32, 48), (64, 128), (112, 16)):
                p = Problem(seq_len=600, head_dim=64, heads=2, causal=algo == "fa1")
                big = 1 << 30   # toy's 8 KiB would refuse some tiles; the bound must hold for every tile
                r0 = simulate(hw, algo, p, blocks=blocks, passes=passes, options=Options(sram_bytes=big))
                r1 = simulate(hw, algo, p, blocks=blocks, passes=passes, options=Options(cache=True, sram_bytes=big))
                assert r1.time.predicted_s <= r0.time.predicted_s
                d = r1.to_dict()["dram"]
                assert d["read_bytes"] + d["write_bytes"] + d["dirty_bytes_left"] <= r0.hbm.total_bytes


def test_objectives_and_aliases():
    problem = Problem(seq_len=512, head_dim=32)
    kw = dict(block_q=[16, 32, 64], block_kv=[16, 32, 64], jobs=1)
    by_bytes = explore("toy", "fa2", problem, objective="bytes", **kw)
    alias = explore("toy", "fa2", problem, objective="hbm-bytes", **kw)
    assert alias.objective == "bytes" and alias.best.block_q == by_bytes.best.block_q
    dram = explore("toy", "fa2", problem, objective="dram", replays=100, **kw)
    assert dram.ranking.best_proven and dram.best.dram_bytes is not None
    eligible = [c for c in dram.candidates if c.eligible(False)]
    assert all(c.dram_min_bytes >= dram.best.dram_bytes for c in eligible if c.dram_bytes is None)
    assert all(c.dram_bytes >= dram.best.dram_bytes for c in eligible if c.dram_bytes is not None)
    assert all(by_bytes.best.hbm_total_bytes <= c.hbm_total_bytes for c in eligible)


NO_CACHE = """
schema_version: 1
name: flat
description: "a GPU without a cache, for the tests"
vendor: illustrative
sm_count: {value: 4, source: test}
clock: {value: 1, unit: GHz, source: test}
levels:
  hbm: {role: dram, capacity: {value: 1, unit: GiB, source: test}}
  sram:
    role: scratchpad
    capacity_per_sm: {value: 8, unit: KiB, source: test}
    capacity_per_block: {value: 8, unit: KiB, source: test}
links:
  - between: [hbm, sram]
    bandwidth: {value: 100, unit: GB/s, source: test}
compute:
  tensor_fp16: {value: 10, unit: TFLOP/s, source: test}
"""


def test_dram_needs_a_cache():
    flat = profile_from_yaml(NO_CACHE)
    with pytest.raises(ProblemError, match="flat describes no cache level"):
        explore(flat, "fa2", Problem(seq_len=256, head_dim=16), objective="dram", jobs=1)
    with pytest.raises(ProblemError, match="drop --no-cache"):
        explore("toy", "fa2", Problem(seq_len=256, head_dim=16), objective="dram", cache=False, jobs=1)
    res = explore(flat, "fa2", Problem(seq_len=256, head_dim=16), objective="time", jobs=1)
    assert not res.cache and all(c.time_exact for c in res.candidates)


def test_the_report_names_the_model(capsys):
    base = ["explore", "--hw", "toy", "-N", "512", "-d", "32", "--algo", "fa2", "--jobs", "1"]
    assert main(base + ["--objective", "time"]) == 0
    out = capsys.readouterr().out
    # by default each tile is played as simulate decides by default (past the budget, a sample): no flag
    assert "ranked by predicted time; times: roofline with the L2 model, as `iosim simulate` predicts" in out
    assert "a roofline time is a lower bound on a real kernel's time" in out
    assert main(base + ["--objective", "time", "--cache"]) == 0
    assert "with the L2 model, as `iosim simulate --cache` predicts" in capsys.readouterr().out
    assert main(base + ["--objective", "dram"]) == 0           # every request played, as --cache plays them
    assert "ranked by DRAM bytes (L2 model); times: roofline with the L2 model, as `iosim simulate --cache` " \
        "predicts" in capsys.readouterr().out
    assert main(base + ["--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "ranked by HBM bytes requested; times: roofline without the L2 model" in out
    assert main(["explore", "--hw", "h100-sxm", "-N", "1024", "-d", "128", "--heads", "4", "--algo", "fa2",
                 "--kernel", "flash-attn-2", "--block-kv", "64", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "flash-attn-2's kernel time model" in out and "lower bound" not in out


@pytest.mark.parametrize("algo,passes", [("fa1", "forward"), ("fa2", "backward"), ("fa2", "forward")])
def test_dram_bounds_hold_for_tiles_not_replayed(algo, passes):
    """Every candidate's DRAM interval holds the replayed value, including the tiles explore
    did not replay (FA1 rewrites O, ℓ, m in every inner step: the L2 merges the rewrites, so
    DRAM sees far fewer bytes than the schedule writes)."""
    p = Problem(seq_len=256, head_dim=32)
    res = explore("toy", algo, p, passes=passes, objective="dram", replays=2, block_q=[16, 32, 64],
                  block_kv=[16, 32], progress=False)
    checked = 0
    for c in res.candidates:
        if not c.feasible:
            continue
        r = simulate("toy", algo, p, passes=passes, blocks=(c.block_q, c.block_kv), options=Options(cache=True))
        s = r.cache.total
        dram = s.dram_read_bytes + s.dram_write_bytes + s.dirty_bytes_left
        assert c.dram_min_bytes <= dram <= c.dram_max_bytes, (c.block_q, c.block_kv)
        checked += not c.replayed
    assert checked > 0       # some tiles were bounded, not replayed


def test_a_replay_decides_as_simulate_does_for_its_tile():
    """By default a replay runs the tile as `iosim simulate` does (the L2 model's budget of
    requests decides), not forced. FA2 on h100-sxm at N = 262,144, d = 64: a 128×128 tile with
    one head plays (16.8 M tile steps a head, but in lockstep its streams are small: explore
    used to keep its bounds past 4 M steps); a 16×16 tile with 16 heads is past the budget, so
    simulate plays a sample of its chunks (models/cache/sampled.py), and so does the replay.
    Both give simulate's time."""
    from iosim.hardware import load_profile
    from iosim.studies.explore import measure
    profile = load_profile("h100-sxm")
    for heads, tile, played in [(1, (128, 128), True), (16, (16, 16), True)]:
        problem = Problem(seq_len=262_144, head_dim=64, heads=heads)
        measure.init_worker(profile, "fa2", problem, "forward", {}, "auto")
        assert measure.tile_setup(tile).lockstep and measure.tile_setup(tile).steps_per_head > 4_000_000
        t, bound, _dram = measure.replay(tile)
        r = simulate(profile, "fa2", problem, blocks=tile, options=Options(cache="auto"))   # the CLI's default
        assert (r.cache is not None) == played and t == r.time.predicted_s, tile
        assert bound == (r.time.bound + measure.sampled_note(r.cache) if played else f"{r.time.bound}; {r.l2_off}")
        assert ("sampling 1 in" in bound) == (heads == 16), tile


def test_with_a_kernel_tiles_keep_its_warps_registers_and_rank_by_time():
    """--kernel keeps the kernel's warps, so a forward tile's S_ij and O_i accumulator must fit
    what 4 warps hold without spilling (32 threads × (255 − 32) registers × 4 B), not the whole
    register file; and the objective is time unless another is asked for."""
    problem = Problem(seq_len=4096, head_dim=128, heads=16)
    tiles = dict(block_q=[128, 256], block_kv=[64, 112], jobs=1)
    res = explore("h200", "fa2", problem, kernel="flash-attn-2", **tiles)
    assert res.objective == "time" and {c.registers_capacity_bytes for c in res.candidates} == {4 * 32 * 223 * 4}
    assert (256, 112) not in {(c.block_q, c.block_kv) for c in res.candidates}
    assert res.registers_by == "flash-attn-2's 4 warps hold" == res.to_dict()["registers_by"]
    assert res.paper.registers_bytes == (128 * 128 + 128 * 227 + 2 * 128) * 4        # 128×227: S, O and m, l
    assert res.paper.reason == f"registers: needs {res.paper.registers_bytes:,} B > 114,176 B per block (would spill)"
    assert res.kernel.registers_bytes == (128 * 128 + 128 * 64 + 2 * 128) * 4 and res.kernel.registers_fit
    plain = explore("h200", "fa2", problem, **tiles)     # no kernel: the paper's machine, the whole register file
    big = {(c.block_q, c.block_kv): c for c in plain.candidates}[256, 112]
    assert plain.objective == "bytes" and big.registers_capacity_bytes == 262_144 and big.registers_fit
    assert big.registers_bytes == (256 * 128 + 256 * 112 + 2 * 256) * 4


@pytest.mark.parametrize("d", [32, 64, 96, 128, 160, 192, 224, 256])
def test_the_kernels_own_forward_tile_fits_its_warps_registers(d):
    """flash-attn 2's own forward tile at every kernel head dim holds its S_ij and O_i in its
    warps' registers (4 or 8 warps), as the compiled kernel does without spilling."""
    res = explore("h200", "fa2", Problem(seq_len=2048, head_dim=d, heads=64), kernel="flash-attn-2",
                  block_q=[64], block_kv=[64], jobs=1)
    assert res.kernel.registers_fit, res.kernel.reason
    assert res.kernel.registers_capacity_bytes == res.kernel_info["warps"] * 32 * 223 * 4


def test_where_flash_attn_splits_the_keys_the_split_kernels_registers_are_checked():
    """flash-attn 2's split-KV forward (few query blocks): a tile's registers are the split
    kernel's S_ij, O_i, m_i and l_i, checked against its 4 warps; the combine kernel (every
    split's LSE and O of B_r rows in iosim's schedule, a tile of its own in flash-attn's) is not
    the tile's, though the run's register peak is its."""
    problem = Problem(seq_len_q=256, seq_len_kv=16384, head_dim=128, heads=2)
    res = explore("h200", "fa2", problem, kernel="flash-attn-2", block_q=[64, 128], block_kv=[64, 128], jobs=1)
    assert "split-KV" in res.kernel_info["kernel"] and res.registers_by == "flash-attn-2's 4 warps hold"
    tiles = {(c.block_q, c.block_kv): c for c in res.candidates}
    for (b_r, b_c), c in tiles.items():
        assert c.registers_bytes == (b_r * b_c + b_r * 128 + 2 * b_r) * 4, (b_r, b_c)
        assert c.registers_fit == (c.registers_bytes <= 114_176), (b_r, b_c)
    assert not tiles[128, 128].registers_fit and tiles[128, 64].registers_fit and tiles[64, 128].registers_fit
    setup = prepare(load_profile("h200"), "fa2", problem, options=Options(kernel="flash-attn-2"))
    run = dict(run_launches(setup, "count", None).registers.by_kernel)
    assert run["splitkv"] == (64 * 128 + 64 * 128 + 2 * 64) * 4 < run["combine"]
    own = explore("h200", "fa2-splitkv", problem, block_q=[64, 256], block_kv=[32], jobs=1)   # iosim's: no kernel
    big = {(c.block_q, c.block_kv): c for c in own.candidates}[256, 32]
    alone = simulate("h200", "fa2-splitkv", problem, blocks=(256, 32), options=Options(cache=False))
    assert big.registers_bytes == alone.registers.peak_bytes > dict(alone.registers.by_kernel)["splitkv"]
    assert not big.registers_fit


@pytest.mark.parametrize("kernel,problem", [
    ("flash-attn-3", Problem(seq_len=4096, head_dim=128, heads=16)),  # warpgroups: other registers a thread
])
def test_where_the_warps_are_not_checked_the_cap_is_the_profiles(kernel, problem):
    """Not checked against the warps (iosim.studies.explore.registers): the Hopper presets."""
    res = explore("h200", "fa2", problem, kernel=kernel, block_q=[64], block_kv=[64], jobs=1)
    assert res.kernel.registers_capacity_bytes == 262_144 and res.registers_by == ""


def test_with_a_kernel_a_tile_its_warps_cannot_split_is_not_chosen():
    """d = 192: flash-attn 2's forward stacks 8 warps of 16 rows, so B_r steps by 128; the paper's
    tile (152 × 152, run besides) is listed with the reason and not chosen, though fastest."""
    res = explore("h200", "fa2", Problem(seq_len=8192, head_dim=192, heads=16), kernel="flash-attn-2", jobs=1)
    assert (res.paper.block_q, res.paper.block_kv) == (152, 152) and res.kernel_info["warps"] == 8
    assert res.paper.rows_note == "rows: 152 is no multiple of 128, the kernel's warps × 16"
    assert not res.paper.eligible(False) and res.paper.rows_note in res.paper.reason
    assert res.paper.predicted_s < res.best.predicted_s and res.best.block_q % 128 == 0
    assert all(c.rows_note == "" for c in res.candidates if "paper" not in c.sources)


@pytest.mark.parametrize("hw", ["h100-sxm", "h200"])
def test_kernel_time_bounds_hold_for_tiles_not_replayed(hw):
    """With --kernel, a tile not replayed carries an interval that holds its time with the L2
    model (every tile replayed), also where its forward waits for keys streamed from DRAM
    without it (d = 256: the waits are counted from every requested byte; the L2 removes them)."""
    p = Problem(seq_len=2048, head_dim=256, batch=2, heads=8)
    kw = dict(kernel="flash-attn-2", block_kv=[32, 64], jobs=1)
    bounded = {(c.block_q, c.block_kv): c for c in explore(hw, "fa2", p, objective="time", replays=0, **kw).candidates}
    # ranked by DRAM bytes, every tile is replayed within the budget
    replayed = [c for c in explore(hw, "fa2", p, objective="dram", replays=100, **kw).candidates if c.replayed]
    checked = 0
    for c in replayed:
        b = bounded[(c.block_q, c.block_kv)]
        assert b.time_min_s <= c.predicted_s <= b.time_max_s, (c.block_q, c.block_kv)
        checked += not b.replayed and b.time_min_s < b.time_max_s
    assert checked > 0
