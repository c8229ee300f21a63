"""The triton-fa2 preset without a GPU: its launch, tile, footprint, warps and feasibility,
and the time model's response to the knobs it models (docs/triton.md)."""

import pytest

from iosim import Options, Problem, load_profile, prepare, simulate
from iosim.errors import IosimError, ProblemError
from iosim.kernels.triton_preset import (TritonConfig, computed_rows, infeasible_reason, mma_version, search_space,
                                         shared_bytes, triton_tile, warp_grid)
from iosim.kernels.tile_tables import gpu_info
from iosim.models.triton_time import blocks_per_sm

H200 = load_profile("h200")


def test_launch_is_fa2_with_the_config_tile_keys_ascending():
    s = prepare("h200", "fa2", Problem(seq_len=1000, head_dim=64, heads=4, batch=2),
                options=Options(kernel="triton-fa2", kernel_config=(64, 32, 4, 2)))
    (launch,) = s.launches
    assert (launch.name, launch.passes, launch.blocks.block_q, launch.blocks.block_kv) == ("fa2", "forward", 64, 32)
    assert launch.schedule_options == {}                       # not kv_descending
    assert launch.threads_per_block == 128
    assert launch.blocks.num_q_blocks(launch.problem) == 16    # cdiv(1000, 64) programs per (b, h)


def test_counts_are_fa2_algorithm1_loads():
    n, d, bm, bn = 1024, 64, 128, 64
    r = simulate("h200", "fa2", Problem(seq_len=n, head_dim=d, heads=2),
                 options=Options(kernel="triton-fa2", kernel_config=(bm, bn, 4, 3)))
    heads, w = 2, 2
    assert r.tensors["Q"].read_bytes == heads * n * d * w                    # Q_i once
    assert r.tensors["K"].read_bytes == heads * (n // bm) * n * d * w        # K_j once per (i, j)
    assert r.tensors["O"].write_bytes == heads * n * d * w                   # O_i once
    assert r.tensors["L"].write_bytes == heads * n * 4                       # L_i once, fp32


def test_shared_memory_is_q_plus_stages_of_k_and_v():
    assert shared_bytes(TritonConfig(128, 64, 4, 3), 128, "fp16") == 2 * (128 * 128 + 3 * 2 * 64 * 128)
    assert shared_bytes(TritonConfig(64, 32, 4, 1), 64, "bf16") == 2 * (64 * 64 + 2 * 32 * 64)


def test_mma_version_and_warp_layout_follow_triton():
    g = gpu_info(H200)
    assert mma_version(TritonConfig(128, 64, 4, 3), g) == 3
    assert mma_version(TritonConfig(128, 64, 2, 3), g) == 2               # num_warps % 4
    assert mma_version(TritonConfig(32, 64, 4, 3), g) == 2                # rows % 64
    assert mma_version(TritonConfig(128, 64, 4, 3), gpu_info(load_profile("a100-80gb"))) == 2
    assert warp_grid(TritonConfig(32, 64, 4, 2), 2) == (1, 4)             # BLOCK_M < BLOCK_N: along the keys
    assert warp_grid(TritonConfig(64, 32, 4, 2), 2) == (4, 1)
    assert computed_rows(TritonConfig(16, 16, 8, 1), 2) == 128            # 16 rows per warp at least


def test_feasibility_names_shared_memory_and_spills():
    assert "shared memory" in infeasible_reason(TritonConfig(256, 128, 8, 4), 128, "fp16", H200)
    # no measured kernel on the H100 profile: the estimate says it would spill, and it is not timed
    assert "spill" in infeasible_reason(TritonConfig(256, 64, 2, 1), 128, "fp16", load_profile("h100-sxm"))
    # measured on the H200: it runs, spilling (150 registers' worth), at its measured time
    assert "spill" in infeasible_reason(TritonConfig(128, 128, 4, 1), 128, "fp16", load_profile("h100-sxm"))
    assert infeasible_reason(TritonConfig(128, 128, 4, 1), 128, "fp16", H200) == ""
    assert triton_tile(TritonConfig(128, 128, 4, 1), 128, "fp16", H200).spills
    assert infeasible_reason(TritonConfig(128, 64, 4, 3), 128, "fp16", H200) == ""
    assert "head dims" in infeasible_reason(TritonConfig(64, 64, 4, 2), 96, "fp16", H200)
    assert len(search_space()) == 5 * 4 * 3 * 4


def test_occupancy_from_shared_memory():
    one = triton_tile(TritonConfig(128, 128, 8, 4), 128, "fp16", H200)          # 160 KiB: one block per SM
    two = triton_tile(TritonConfig(64, 64, 4, 2), 64, "fp16", H200)             # 40 KiB
    assert blocks_per_sm(one, H200) == 1
    assert blocks_per_sm(two, H200) > 1


def _time(cfg, **kw):
    p = Problem(seq_len=4096, head_dim=64, heads=16, **kw)
    return simulate("h200", "fa2", p, options=Options(kernel="triton-fa2", kernel_config=cfg, cache=False)).time.predicted_s


def test_one_stage_is_never_faster_than_pipelined_at_equal_occupancy():
    assert _time((64, 64, 4, 1)) >= _time((64, 64, 4, 2))


def test_bad_configs_are_one_line_errors():
    for cfg in [(48, 64, 4, 2), (8, 64, 4, 2), (64, 64, 0, 2)]:
        with pytest.raises(IosimError):
            prepare("h200", "fa2", Problem(seq_len=256, head_dim=64),
                    options=Options(kernel="triton-fa2", kernel_config=cfg))
    with pytest.raises(IosimError, match="forward"):
        prepare("h200", "fa2", Problem(seq_len=256, head_dim=64), passes="backward",
                options=Options(kernel="triton-fa2"))


@pytest.mark.parametrize("config,words", [("512,512,4,4", "needs 589,824 B of shared memory"),
                                          ("128,64,64,3", "2048 threads per block > 1,024")])
def test_a_config_triton_cannot_launch_is_refused_in_one_line(capsys, config, words):
    """simulate --kernel triton-fa2 --kernel-config with a footprint over the block's shared
    memory (Q + 4 stages of K and V at 512 × 512, d = 64) or too many threads: exit 2, one line."""
    from iosim.cli.main import main
    code = main(["simulate", "--hw", "h200", "--algo", "fa2", "-N", "1024", "-d", "64", "--kernel", "triton-fa2",
                 "--kernel-config", config])
    err = capsys.readouterr().err.strip()
    assert code == 2 and words in err and len(err.splitlines()) == 1


def test_the_python_explore_points_triton_to_its_own_ranking():
    """explore() ranks (B_r, B_c) tiles; the Triton kernel's knobs are configurations, ranked
    by explore_triton (what `iosim explore --kernel triton-fa2` runs): asked for the one, the
    other is named, not a tile ranking silently made with the default configuration."""
    from iosim.errors import ProblemError
    from iosim.studies.explore import explore
    with pytest.raises(ProblemError, match="explore_triton"):
        explore(load_profile("h200"), "fa2", Problem(seq_len=1024, head_dim=64), kernel="triton-fa2", objective="time")


def test_explore_replays_each_configuration_within_the_l2_models_budget(monkeypatch):
    """Where simulate would model the L2 for the default configuration, explore replays each
    configuration as simulate runs it: one whose plan is past the model's default budget runs
    without it and says so in its bound, instead of failing the whole ranking (at N = 8,192,
    B = 4 x H = 32, causal, 32-row tiles planned 25 M requests, past the 20 M limit, and the
    ranking raised). Here every budget is zero, so every replay is past it."""
    from iosim.run import launches
    from iosim.studies.explore import triton_configs
    from iosim.studies.explore.triton_configs import explore_triton
    problem = Problem(seq_len=2048, head_dim=64, heads=8)     # short: 32-row tiles are DRAM-bound
    monkeypatch.setattr(launches, "AUTO_REQUESTS", 0)
    monkeypatch.setattr(launches, "MAX_REQUESTS", 0)
    monkeypatch.setattr(triton_configs, "l2_by_default", lambda setup: True)
    r = explore_triton("h200", problem, configs=[(64, 64, 4, 3), (32, 64, 2, 2), (32, 32, 2, 4)])
    assert r.cache and len(r.ranked) == 3
    off = [c for c in r.ranked if "the L2 model is off for this run" in c.bound]
    assert off and all(c.dram_bytes is None for c in r.ranked)
    assert all(c.bound.startswith("DRAM") for c in off)       # replayed because DRAM bounds them
    with pytest.raises(ProblemError, match="more than 0"):     # --cache: past the hard limit, one clear error
        explore_triton("h200", problem, configs=[(32, 64, 2, 2)], cache=True)


def test_explore_times_tiles_on_worker_processes_as_in_one():
    """explore --kernel triton-fa2 times one tile a task on the workers (``--jobs``): the same
    ranking, every candidate the same, as timing them all in this process."""
    from iosim.studies.explore.triton_configs import explore_triton
    configs = [(64, 64, 4, 3), (64, 32, 4, 2), (128, 64, 8, 3), (128, 32, 4, 3), (32, 64, 2, 2), (64, 128, 4, 2),
               (128, 128, 8, 2), (32, 32, 4, 2)]
    problem = Problem(seq_len=2048, head_dim=64, heads=8, causal=True)
    one = explore_triton("h200", problem, configs=configs, jobs=1)
    two = explore_triton("h200", problem, configs=configs, jobs=2)
    assert one.to_dict() == two.to_dict() and len(one.ranked) == 8
