"""Real-kernel presets (--kernel): the launches and tiles flash-attn uses.

Their numerics are tests/numeric/test_numeric_variants.py; the replay of the Nsight Compute
measurements of PyTorch's FlashAttention-2 SDPA kernels on an H200 committed in
docs/validation/ is tests/gpu/test_ncu_replays.py.
"""

import pytest

from iosim import Options, Problem, ProblemError, ScheduleError, simulate
from iosim.kernels.plan import plan
from iosim.kernels.tile_tables import kernel_tile


def launches(result):
    return [(l["schedule"], l["block_q"], l["block_kv"], l.get("num_splits")) for l in result.options["launches"]]


def test_forward_split_decision_and_tiles(h100):
    small = simulate(h100, "fa2", Problem(seq_len=1024, head_dim=128, heads=4), options=Options(kernel="flash-attn-2"))
    assert launches(small) == [("fa2-splitkv", 64, 128, 4)]          # 4·16 query blocks < 0.8 · 2 · 132
    large = simulate(h100, "fa2", Problem(seq_len=1024, head_dim=128, heads=32, batch=4), options=Options(kernel="flash-attn-2"))
    assert launches(large) == [("fa2", 128, 64, None)]                # kernels.md §2: 128 × 64 at d = 128


@pytest.mark.parametrize("d,tile,stats", [(32, (128, 128), 2), (64, (128, 128), 2), (128, (64, 128), 4),
                                          (256, (64, 64), 2)])
def test_backward_tiles(h100, d, tile, stats):
    t = kernel_tile("fa2", d, h100, direction="bwd")
    assert ((t.block_q, t.block_kv), t.stats_loads) == (tile, stats)


def test_flash_attn_3_is_forward_only(h100):
    r = simulate(h100, "fa2", Problem(seq_len=8192, head_dim=128, causal=True), options=Options(kernel="flash-attn-3"))
    assert launches(r) == [("fa2", 128, 128, None)]                   # kernels.md §6: causal d ≤ 128
    with pytest.raises(ScheduleError, match="forward only"):
        simulate(h100, "fa2", Problem(seq_len=8192, head_dim=128), passes="backward", options=Options(kernel="flash-attn-3"))


def test_bad_requests(h100, paper_a100):
    with pytest.raises(ProblemError, match="kernels' own tiles"):
        simulate(h100, "fa2", Problem(seq_len=1024, head_dim=64), blocks=(64, None), options=Options(kernel="flash-attn-2"))
    with pytest.raises(ProblemError, match="algorithm='fa2'"):
        simulate(h100, "fa1", Problem(seq_len=1024, head_dim=64), options=Options(kernel="flash-attn-2"))
    with pytest.raises(ProblemError, match="compute capability"):
        simulate(paper_a100, "fa2", Problem(seq_len=1024, head_dim=64), options=Options(kernel="flash-attn-2"))
    with pytest.raises(ProblemError, match="unknown kernel"):
        plan("flash-attn-9", "fa2", Problem(seq_len=64, head_dim=64), h100, "forward")




@pytest.mark.parametrize("d", [20, 44, 100, 250])
def test_flash_attn_2_runs_a_head_dim_padded_to_a_multiple_of_8(h100, d):
    """PyTorch's SDPA pads Q, K, V to a multiple of 8 before flash-attn 2 (docs/spec/kernels.md §1.1):
    every launch moves the padded problem's bytes, exactly."""
    padded = -(-d // 8) * 8
    user, runs = (Problem(seq_len=1000, head_dim=x, heads=2, dtype="bf16") for x in (d, padded))
    opts = Options(kernel="flash-attn-2")
    got = simulate(h100, "fa2", user, passes="forward+backward", options=opts)
    want = simulate(h100, "fa2", runs, passes="forward+backward", options=opts)
    assert got.hbm == want.hbm and got.options["launches"] == want.options["launches"]
    assert got.options["kernel_problem"]["head_dim"] == padded and got.problem == user
    assert [k.problem.head_dim for k in plan("flash-attn-2", "fa2", user, h100, "forward+backward")] == [padded] * 2


def test_a_head_dim_past_the_kernels_names_the_padding(h100):
    """d = 257 pads to 264, past flash-attn 2's 256: the error gives both."""
    with pytest.raises(ProblemError, match=r"got 264 \(head dim 257, padded by PyTorch to a multiple of 8\)"):
        simulate(h100, "fa2", Problem(seq_len=512, head_dim=257), options=Options(kernel="flash-attn-2"))


@pytest.mark.parametrize("shape,marked", [
    (dict(seq_len_q=8, seq_len_kv=52695, head_dim=112, batch=107, heads=2, kv_heads=1), True),   # grid s36's miss
    (dict(seq_len_q=8, seq_len_kv=52695, head_dim=112, batch=107, heads=2, kv_heads=2), False),  # MHA: no group
    (dict(seq_len_q=8, seq_len_kv=16000, head_dim=112, batch=8, heads=2, kv_heads=1), False),    # 57 MB: K/V fit the L2
    (dict(seq_len_q=8, seq_len_kv=52695, head_dim=112, batch=300, heads=2, kv_heads=1), False),  # heads a wave apart
    (dict(seq_len_q=1, seq_len_kv=52695, head_dim=112, batch=107, heads=2, kv_heads=1), False),  # decode: one block a group
])
def test_a_gqa_forward_whose_group_shares_a_wave_past_the_l2_says_so(h200, shape, marked):
    """plan.SPREAD_GROUP_NOTE: the group's heads B · ⌈N_q / B_r⌉ blocks apart, within one wave, and the K/V of
    one query head's B batches past the L2 (docs/validation/2026-12-05-s36-check.md)."""
    fwd = plan("flash-attn-2", "fa2", Problem(**shape), h200, "forward")[0]
    note = fwd.l2_note or ""
    assert ("drift apart" in note) == marked
    if marked:
        assert "107 apart in launch order, fewer than one wave holds (264 at once)" in note and "(2526 MB)" in note
