"""Spill frames (iosim.kernels.spill_frames, iosim.models.cache.frames): which flash-attn 2
forwards reload spilled registers that some lanes never wrote, and how many thread-block
slots fill them from DRAM."""

import pytest

from iosim import Options, Problem, load_profile, simulate
from iosim.kernels.plan import plan
from iosim.kernels.spill_frames import SpillFrames, masking_steps
from iosim.models.cache.frames import slots_reached


def forward(hw, problem):
    (launch,) = plan("flash-attn-2", "fa2", problem, load_profile(hw), "forward")
    return launch


@pytest.mark.parametrize("d,causal,expected", [
    (40, False, SpillFrames(64, 128, 1)), (48, True, SpillFrames(48, 128, 2)), (56, False, SpillFrames(64, 128, 1)),
    (8, False, SpillFrames(32, 128, 1)), (24, True, SpillFrames(24, 128, 2)),
    (64, False, None), (32, True, None), (72, False, None), (128, False, None)])
def test_only_the_uneven_32_and_64_kernels_have_frames(d, causal, expected):
    """Head dims below 64 that are no kernel size run the 32 or 64 kernel's Is_even_K = false
    instantiation; the kernel sizes and d = 72 (the 96 kernel) have no such stores."""
    launch = forward("h200", Problem(seq_len=1000, head_dim=d, batch=2, heads=8, causal=causal))
    assert launch.frames == expected and launch.l2_note is None


def test_an_unmeasured_build_says_so_and_adds_nothing():
    launch = forward("a100-80gb", Problem(seq_len=1000, head_dim=40, batch=2, heads=8))
    assert launch.frames is None and "unmeasured on sm80" in launch.l2_note
    assert forward("h100-sxm", Problem(seq_len=1000, head_dim=40, batch=2, heads=8)).frames is not None  # sm90 too


def test_the_split_kv_forward_has_none():
    (launch,) = plan("flash-attn-2", "fa2", Problem(seq_len=1, seq_len_kv=8192, head_dim=40, heads=8),
                     load_profile("h200"), "forward")
    assert launch.schedule == "fa2-splitkv" and launch.frames is None


def test_masking_steps_follow_flash_attn():
    assert masking_steps(128, 128, False) == 1 and masking_steps(128, 128, True) == 2
    assert masking_steps(128, 64, True) == 3


def test_slots_reached():
    assert slots_reached([3, 3], [True, True], heads=100, slots=264) == 200      # fewer blocks than slots
    assert slots_reached([3, 3], [True, True], heads=1000, slots=264) == 264
    assert slots_reached([1, 2], [False, False], heads=1000, slots=264) == 0
    # one block of a head's three reaches the stores, every block its own slot: one slot a head
    assert slots_reached([1, 2, 3], [False, False, True], heads=50, slots=264) == 50
    # a single slot runs every block, so it runs one that reaches them
    assert slots_reached([1, 2, 3], [False, False, True], heads=5, slots=1) == 1


def test_the_fills_are_in_the_forwards_dram_reads_and_the_json():
    """Every block its own slot (128 blocks ≤ 264): 128 blocks × 128 threads × 64 bytes, dense;
    causal, the 96 blocks with more than two key blocks × 48 bytes (the H200's measured values)."""
    profile = load_profile("h200")
    for causal, fills in ((False, 128 * 128 * 64), (True, 96 * 128 * 48)):
        p = Problem(seq_len=1000, head_dim=40, batch=2, heads=8, causal=causal)
        r = simulate(profile, "fa2", p, passes="forward+backward", options=Options(kernel="flash-attn-2", cache=True))
        d = r.to_dict()
        assert d["dram"]["frame_read_bytes"] == fills == d["l2"]["per_kernel"]["main"]["frame_read_bytes"]
        assert "frame_read_bytes" not in d["l2"]["per_kernel"]["dq_dk_dv"]
        inputs = 3 * 2 * 8 * 1000 * 40 * 2          # Q, K, V fit the L2: read once
        code = d["l2"]["per_kernel"]["main"]["code_read_bytes"]     # its instructions, once (iosim.kernels.flash_code)
        assert d["l2"]["per_kernel"]["main"]["dram_read_bytes"] == inputs + fills + code
    even = simulate(profile, "fa2", Problem(seq_len=1000, head_dim=64, batch=2, heads=8), passes="forward",
                    options=Options(kernel="flash-attn-2", cache=True)).to_dict()
    assert "frame_read_bytes" not in even["dram"]


def test_the_table_says_how_many_reads_fill_frames():
    from iosim.report.tables import result_table
    r = simulate(load_profile("h200"), "fa2", Problem(seq_len=1000, head_dim=40, batch=2, heads=8), passes="forward",
                 options=Options(kernel="flash-attn-2", cache=True))
    assert "L2 model, main: 1,048,576 B of its DRAM reads fill spilled registers" in result_table(r)

