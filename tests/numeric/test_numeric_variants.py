"""Numeric exactness of the variants against the float64 reference: block-sparse, grouped-query,
split-KV, and the real-kernel presets (--kernel), forward and, where they have one, backward."""

import numpy as np
import pytest

from iosim import Options, Problem, random_inputs, reference_attention, reference_gradients, simulate
from iosim.workload.masks import parse_block_mask

import closed_forms as cf


def launches(result):
    return [(l["schedule"], l["block_q"], l["block_kv"], l.get("num_splits")) for l in result.options["launches"]]


@pytest.mark.parametrize("algo", ["fa1", "fa2"])      # standard refuses a mask: its counts do not depend on one
@pytest.mark.parametrize("causal", [False, True])
def test_numeric_block_sparse(paper_a100, algo, causal):
    n, d, br, bc = 200, 16, 32, 48
    problem = Problem(seq_len=n, head_dim=d, causal=causal, heads=2)
    x = random_inputs(problem, seed=4)
    mask = parse_block_mask("random:0.5:3", cf.ceil_div(n, br), cf.ceil_div(n, bc), br, bc)
    r = simulate(paper_a100, algo, problem, blocks=(br, bc), mode="numeric", inputs=x, options=Options(block_mask=mask))
    q, k = np.arange(n)[:, None], np.arange(n)[None, :]
    visible = mask[q // br, k // bc] & ((k <= q) if causal else True)
    S = np.where(visible, x["Q"] @ np.swapaxes(x["K"], -1, -2) / 4.0, -np.inf)
    P = np.exp(S - S.max(-1, keepdims=True))
    expected = (P / P.sum(-1, keepdims=True)) @ x["V"]
    assert np.max(np.abs(r.outputs["O"] - expected)) <= 1e-12


@pytest.mark.parametrize("algo", ["standard", "fa1", "fa2"])
@pytest.mark.parametrize("kv_heads", [1, 2])
def test_numeric_gqa(paper_a100, algo, kv_heads):
    problem = Problem(seq_len=100, head_dim=16, heads=4, kv_heads=kv_heads, batch=2, causal=True)
    x = random_inputs(problem, seed=7, gradient=True)
    group = 4 // kv_heads
    K, V = np.repeat(x["K"], group, axis=1), np.repeat(x["V"], group, axis=1)
    grads = reference_gradients(x["Q"], K, V, x["dO"], causal=True)
    r = simulate(paper_a100, algo, problem, blocks=(32, 48), mode="numeric", inputs=x, passes="forward+backward")
    assert np.max(np.abs(r.outputs["O"] - reference_attention(x["Q"], K, V, causal=True))) <= 1e-12
    assert np.max(np.abs(r.outputs["dQ"] - grads["dQ"])) <= 1e-10
    for name in ("dK", "dV"):
        summed = grads[name].reshape(2, kv_heads, group, 100, 16).sum(axis=2)
        assert np.max(np.abs(r.outputs[name] - summed)) <= 1e-10


@pytest.mark.parametrize("n_q,n_kv,S", [(1, 1000, 4), (5, 700, 3), (64, 1000, 7), (100, 1000, 128)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kv_heads", [4, 2])
def test_numeric_split_kv(paper_a100, n_q, n_kv, S, causal, kv_heads):
    problem = Problem(seq_len_q=n_q, seq_len_kv=n_kv, head_dim=16, heads=4, kv_heads=kv_heads, batch=2, causal=causal)
    x = random_inputs(problem, seed=S)
    r = simulate(paper_a100, "fa2-splitkv", problem, blocks=(64, 64), mode="numeric", inputs=x, options=Options(num_splits=S))
    group = 4 // kv_heads
    K, V = np.repeat(x["K"], group, axis=1), np.repeat(x["V"], group, axis=1)
    assert r.outputs["O"].shape == x["Q"].shape
    assert np.max(np.abs(r.outputs["O"] - reference_attention(x["Q"], K, V, causal))) <= 1e-12


@pytest.mark.parametrize("heads,batch", [(2, 1), (4, 18)])  # 2 splits; 4·18·5 query blocks ≥ 0.8·264: none
def test_numeric_kernel_preset_forward_and_backward(h100, heads, batch):
    problem = Problem(seq_len=300, head_dim=32, heads=heads, batch=batch, causal=True)
    x = random_inputs(problem, seed=3, gradient=True)
    r = simulate(h100, "fa2", problem, passes="forward+backward", mode="numeric", inputs=x, options=Options(kernel="flash-attn-2"))
    assert launches(r)[0][0] == ("fa2-splitkv" if batch == 1 else "fa2")
    assert np.max(np.abs(r.outputs["O"] - reference_attention(x["Q"], x["K"], x["V"], causal=True))) <= 1e-12
    grads = reference_gradients(x["Q"], x["K"], x["V"], x["dO"], causal=True)
    for name in ("dQ", "dK", "dV"):
        assert np.max(np.abs(r.outputs[name] - grads[name])) <= 1e-10


@pytest.mark.parametrize("kw", [dict(seq_len=300, head_dim=100, heads=2, causal=True),
                                dict(seq_len_q=1, seq_len_kv=700, head_dim=44, heads=8, kv_heads=2),
                                dict(seq_len=130, head_dim=20, batch=2),
                                dict(seq_len_q=100, seq_len_kv=300, head_dim=36, heads=4, kv_heads=2, causal=True)])
@pytest.mark.parametrize("passes", ["forward+backward", "backward"])
def test_numeric_kernel_preset_pads_head_dim(h100, kw, passes):
    """A head dim that is no multiple of 8 runs padded with zero columns (PyTorch's SDPA) under the
    user's softmax scale 1/√d: the outputs, trimmed back to d, equal the reference's."""
    problem = Problem(**kw)
    x = random_inputs(problem, seed=3, gradient=True)
    r = simulate(h100, "fa2", problem, passes=passes, mode="numeric", inputs=x, options=Options(kernel="flash-attn-2"))
    assert r.options["kernel_problem"]["head_dim"] == -(-problem.head_dim // 8) * 8
    group = problem.group_size
    K, V = np.repeat(x["K"], group, axis=1), np.repeat(x["V"], group, axis=1)
    if "forward" in passes:
        assert r.outputs["O"].shape == x["Q"].shape
        assert np.max(np.abs(r.outputs["O"] - reference_attention(x["Q"], K, V, problem.causal))) <= 1e-12
    grads = reference_gradients(x["Q"], K, V, x["dO"], causal=problem.causal)
    assert np.max(np.abs(r.outputs["dQ"] - grads["dQ"])) <= 1e-10
    for name in ("dK", "dV"):
        kv = problem.kv_heads
        summed = grads[name].reshape(problem.batch, kv, group, problem.seq_len_kv, problem.head_dim).sum(axis=2)
        assert r.outputs[name].shape == x["K"].shape
        assert np.max(np.abs(r.outputs[name] - summed)) <= 1e-10
