"""Numeric mode computes softmax(QKᵀ/√d)V exactly (float64, max abs error ≤ 1e-12)."""

import numpy as np
import pytest

from iosim import Problem, reference_attention, simulate
from iosim import random_inputs

# float64 rounding: each output is a convex combination of ≤ N values of V, accumulated
# over T_c rescaled partial sums; errors seen are ~1e-15. 1e-12 is the bound and
# still fails loudly on any algorithmic slip (a missing rescale is off by O(1)).
TOL = 1e-12

CASES = [(64, 16, 16, 16), (100, 16, 16, 32), (257, 64, 64, 48), (333, 32, 128, 64), (50, 8, 64, 64)]


@pytest.mark.parametrize("algo", ["standard", "fa1", "fa2"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n,d,br,bc", CASES)
def test_matches_reference(paper_a100, algo, causal, n, d, br, bc):
    problem = Problem(seq_len=n, head_dim=d, causal=causal, batch=2, heads=2)
    x = random_inputs(problem, seed=n)
    r = simulate(paper_a100, algo, problem, blocks=(br, bc), mode="numeric", inputs=x)
    expected = reference_attention(x["Q"], x["K"], x["V"], causal)
    assert np.max(np.abs(r.outputs["O"] - expected)) <= TOL


def test_fa2_logsumexp_and_fa1_statistics(paper_a100):
    problem = Problem(seq_len=200, head_dim=16)
    x = random_inputs(problem, seed=3)
    S = x["Q"] @ np.swapaxes(x["K"], -1, -2) / 4.0
    lse = np.log(np.exp(S).sum(-1))
    fa2 = simulate(paper_a100, "fa2", problem, blocks=(32, 64), mode="numeric", inputs=x)
    assert np.max(np.abs(fa2.outputs["L"] - lse)) <= TOL
    fa1 = simulate(paper_a100, "fa1", problem, blocks=(32, 64), mode="numeric", inputs=x)
    assert np.max(np.abs(fa1.outputs["m"] + np.log(fa1.outputs["l"]) - lse)) <= TOL


def test_unequal_lengths_causal_bottom_right(paper_a100):
    problem = Problem(seq_len_q=70, seq_len_kv=150, head_dim=16, causal=True)
    x = random_inputs(problem, seed=5)
    expected = reference_attention(x["Q"], x["K"], x["V"], causal=True)
    for algo in ("fa1", "fa2", "standard"):
        r = simulate(paper_a100, algo, problem, blocks=(32, 32), mode="numeric", inputs=x)
        assert np.max(np.abs(r.outputs["O"] - expected)) <= TOL


def test_dropping_the_rescale_is_caught(paper_a100):
    """A schedule without the e^{m − m_new} rescaling (the course kit's cheat) must fail this comparison."""
    import pathlib

    from conftest import load_module

    path = pathlib.Path(__file__).resolve().parents[2] / "examples/assignments/instructor/cheats/no_rescale.py"
    cheat = load_module("no_rescale", path)
    problem = Problem(seq_len=256, head_dim=16)
    x = random_inputs(problem, seed=0)
    r = simulate(paper_a100, cheat.fa2_forward, problem, blocks=(64, 64), mode="numeric", inputs=x)
    assert np.max(np.abs(r.outputs["O"] - reference_attention(x["Q"], x["K"], x["V"]))) > 1e-3


def test_bad_input_shape_is_reported(paper_a100):
    from iosim import ScheduleError

    problem = Problem(seq_len=64, head_dim=16)
    x = random_inputs(problem)
    x["K"] = x["K"][..., :32, :]
    with pytest.raises(ScheduleError, match="input K has shape"):
        simulate(paper_a100, "fa2", problem, mode="numeric", inputs=x)
