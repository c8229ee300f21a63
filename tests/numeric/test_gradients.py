"""Backward numerics: the gradients dQ, dK, dV of every backward schedule against the float64
reference, and the reference itself against finite differences."""

import numpy as np
import pytest

from iosim import Problem, random_inputs, reference_attention, reference_gradients, simulate
from iosim.schedules.fa2_kernel_backward import fa2_kernel_backward


# float64: the backward sums T_c partial products; errors seen are ~1e-14. The issue's
# bound is 1e-10, far below any algorithmic slip (a wrong D or missing τ is O(1)).
GRAD_TOL = 1e-10


@pytest.mark.parametrize("algo", ["standard", "fa1", "fa2"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n,d,br,bc", [(100, 16, 16, 32), (257, 32, 64, 48), (64, 8, 128, 128)])
def test_gradients_match_reference(paper_a100, algo, causal, n, d, br, bc):
    problem = Problem(seq_len=n, head_dim=d, causal=causal, batch=2, heads=2)
    x = random_inputs(problem, seed=n + d, gradient=True)
    expected = reference_gradients(x["Q"], x["K"], x["V"], x["dO"], causal)
    for passes in ("backward", "forward+backward"):
        r = simulate(paper_a100, algo, problem, blocks=(br, bc), mode="numeric", inputs=x, passes=passes)
        for name in ("dQ", "dK", "dV"):
            assert np.max(np.abs(r.outputs[name] - expected[name])) <= GRAD_TOL, (algo, passes, name)
    assert np.max(np.abs(r.outputs["O"] - reference_attention(x["Q"], x["K"], x["V"], causal))) <= 1e-12


def test_reference_gradients_against_finite_differences():
    """The reference itself: central differences of L = Σ O ∘ dO agree with it."""
    problem = Problem(seq_len=7, head_dim=3, causal=True)
    x = {k: v[0, 0] for k, v in random_inputs(problem, seed=1, gradient=True).items()}
    grads = reference_gradients(x["Q"], x["K"], x["V"], x["dO"], causal=True)
    h = 1e-6
    for name in ("Q", "K", "V"):
        numeric = np.zeros_like(x[name])
        for idx in np.ndindex(x[name].shape):
            plus, minus = dict(x), dict(x)
            plus[name] = x[name].copy(); plus[name][idx] += h
            minus[name] = x[name].copy(); minus[name][idx] -= h
            f = lambda v: np.sum(reference_attention(v["Q"], v["K"], v["V"], causal=True) * x["dO"])
            numeric[idx] = (f(plus) - f(minus)) / (2 * h)
        assert np.max(np.abs(numeric - grads["d" + name])) < 1e-7


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kv_heads", [2, 1])
def test_fa2_kernel_backward_gradients(paper_a100, causal, kv_heads):
    problem = Problem(seq_len=150, head_dim=16, heads=2, kv_heads=kv_heads, causal=causal)
    x = random_inputs(problem, seed=11, gradient=True)
    forward = simulate(paper_a100, "fa2", problem, blocks=(32, 64), mode="numeric", inputs=x)
    r = simulate(paper_a100, fa2_kernel_backward, problem, blocks=(32, 64), mode="numeric", inputs={**x, "O": forward.outputs["O"], "L": forward.outputs["L"]})
    group = 2 // kv_heads
    K, V = np.repeat(x["K"], group, axis=1), np.repeat(x["V"], group, axis=1)
    expected = reference_gradients(x["Q"], K, V, x["dO"], causal)
    assert np.max(np.abs(r.outputs["dQ"] - expected["dQ"])) <= 1e-10
    for name in ("dK", "dV"):
        summed = expected[name].reshape(1, kv_heads, group, 150, 16).sum(axis=2)
        assert np.max(np.abs(r.outputs[name] - summed)) <= 1e-10
