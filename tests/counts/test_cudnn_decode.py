"""The ``cudnn`` preset's decode forward (one query row): cuDNN's sm80 decode kernel over the key
splits of :func:`~iosim.kernels.cudnn_preset.decode_splits`, then its reduction (the
``cudnn_decode`` schedule; docs/spec/kernels.md §8). Counts against the closed form, outputs
against float64 attention, and what it refuses."""

import numpy as np
import pytest

from iosim import Options, Problem, ScheduleError, random_inputs, reference_attention, simulate
from iosim.kernels.cudnn_preset import decode_splits


def run(problem, mode="count", profile="h200", seed=0):
    return simulate(profile, "fa2", problem, passes="forward", mode=mode,
                    options=Options(kernel="cudnn", cache=False, seed=seed))


def closed_form(b, h, h_kv, n_kv, d, s, e=2):
    """Per kernel and tensor, (bytes read, bytes written) of the decode forward (docs/spec/kernels.md §8)."""
    halves, tiles = -(-d // 128), -(-n_kv // 128)
    q_loads = s if halves == 1 else halves * tiles          # Q a block, or a block's every key tile above d = 128
    kv = b * h_kv * n_kv * d * e
    decode = {"Q": (q_loads * b * h * d * e, 0), "K": (halves * kv, 0), "V": (kv, 0)}
    if s == 1:
        return {"decode": decode | {"O": (0, b * h * d * e), "L": (0, 4 * b * h)}}
    decode |= {"Oaccum": (0, 4 * s * b * h * d), "m_accum": (0, 4 * s * b * h), "l_accum": (0, 4 * s * b * h)}
    reduction = {"m_accum": (4 * halves * s * b * h, 0), "l_accum": (4 * halves * s * b * h, 0),
                 "Oaccum": (4 * s * b * h * d, 0), "O": (0, b * h * d * e), "L": (0, 4 * b * h)}
    return {"decode": decode, "reduction": reduction}


SHAPES = [  # (B, H, H_kv, N_kv, d): MHA, GQA, MQA; ragged N_kv; S = 1, 4, 8, 16, 64; d from 32 to 256
    (4, 16, 4, 4096, 64), (1, 8, 8, 1024, 64), (2, 32, 8, 8192, 128), (1, 8, 1, 16384, 64), (3, 6, 3, 300, 192),
    (2, 8, 4, 1500, 256), (1, 4, 4, 640, 64), (1, 2, 1, 16384, 256), (2, 8, 2, 3000, 32), (1, 12, 4, 20000, 96),
    (5, 16, 1, 5000, 128)]


@pytest.mark.parametrize("b, h, h_kv, n_kv, d", SHAPES)
def test_counts_are_the_closed_form(b, h, h_kv, n_kv, d):
    r = run(Problem(head_dim=d, seq_len_q=1, seq_len_kv=n_kv, batch=b, heads=h, kv_heads=h_kv, dtype="bf16"))
    s = decode_splits(n_kv, b * h_kv)
    assert r.options["num_splits"] == s
    assert {k: r.kernel_bytes(k) for k in r.kernels} == closed_form(b, h, h_kv, n_kv, d, s)


@pytest.mark.parametrize("b, h, h_kv, n_kv, d", [(1, 4, 4, 640, 64), (2, 8, 4, 1500, 256), (3, 6, 3, 300, 192),
                                                 (2, 4, 1, 1200, 32)])
def test_the_output_is_attentions(b, h, h_kv, n_kv, d):
    """Float64 on both sides: the splits' partial O and statistics combined by the reduction (a
    split with no key block among them at N_kv = 640: 5 key blocks over 4 splits) equal softmax(QKᵀ/√d)V
    to 1e-12 (the sums of a few thousand products of unit normals, in float64)."""
    p = Problem(head_dim=d, seq_len_q=1, seq_len_kv=n_kv, batch=b, heads=h, kv_heads=h_kv)
    x = random_inputs(p, seed=3)
    g = h // h_kv
    want = reference_attention(x["Q"], np.repeat(x["K"], g, axis=1), np.repeat(x["V"], g, axis=1))
    got = run(p, mode="numeric", seed=3).outputs["O"]
    assert got.shape == want.shape and np.max(np.abs(got - want)) <= 1e-12


def test_the_split_rule_at_its_edges():
    assert [decode_splits(n, 1) for n in (512, 513, 1000, 1023)] == [1, 4, 4, 8]
    assert [decode_splits(16384, p) for p in (4, 5, 33, 66, 67)] == [64, 32, 4, 2, 1]


def test_a_head_dim_no_multiple_of_16_runs():
    """Refused until session 44; the decode kernel's loads there are cudnn_lsu's runs of rows
    (docs/validation/2026-12-06-cudnn-odd.md), its tensors' bytes the schedule's."""
    p = Problem(head_dim=40, seq_len_q=1, seq_len_kv=4096, heads=4)
    r = run(p)
    assert r.kernel_bytes("decode")["K"][0] == 4 * 4096 * 40 * 2


@pytest.mark.parametrize("problem, profile, says", [
    (Problem(head_dim=64, seq_len_q=1, seq_len_kv=4096, heads=32, kv_heads=1), "h200", "32 query heads a K/V head"),
    (Problem(head_dim=64, seq_len_q=1, seq_len_kv=4096, heads=8), "h100-pcie", "114"),
])
def test_what_was_not_measured_is_refused(problem, profile, says):
    with pytest.raises(ScheduleError, match=says):
        run(problem, profile=profile)
    # the backward alone runs the sm90 kernels, which the preset models there
    assert simulate(profile, "fa2", problem, passes="backward", options=Options(kernel="cudnn", cache=False)).kernels


def test_the_l2_model_plays_it():
    """K and V read once from DRAM (d ≤ 128); the partial results pass through the L2."""
    p = Problem(head_dim=128, seq_len_q=1, seq_len_kv=8192, batch=2, heads=32, kv_heads=8)
    r = simulate("h200", "fa2", p, passes="forward", options=Options(kernel="cudnn", cache=True))
    kv = 2 * 2 * 8 * 8192 * 128 * 2
    assert kv <= r.cache.kernels["decode"].dram_read_bytes <= 1.01 * kv
    assert r.options["launches"][0]["time_model"].startswith("roofline, a lower bound")


@pytest.mark.parametrize("kernel", ["cudnn", "flash-attn-3"])
def test_a_kernel_with_its_own_splits_refuses_num_splits(kernel):
    from iosim import ProblemError
    p = Problem(head_dim=128, seq_len_q=1, seq_len_kv=8192, batch=2, heads=32, kv_heads=8)
    with pytest.raises(ProblemError, match="picks its own key splits"):
        simulate("h200", "fa2", p, passes="forward", options=Options(kernel=kernel, num_splits=4, cache=False))
