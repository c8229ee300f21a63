"""Models of the real kernels' deviations from the paper listings (docs/spec/algorithms.md §7).
The gradients' exactness is tests/numeric/test_gradients.py."""

import pytest

from iosim import Options, Problem, simulate
from iosim.schedules.fa2_kernel_backward import fa2_kernel_backward

import closed_forms as cf
from closed_forms import BIG, per_tensor


def kernel_backward_form(n, d, br, bc, causal):
    """§7 per head, with R = Σ_A r_i in place of T_c·N when causal."""
    R = cf.causal_R(n, br, bc) if causal else cf.ceil_div(n, bc) * n
    nd = n * d
    return {"dO": (nd + R * d, 0), "O": (nd, 0), "D": (R, n), "L": (R, 0), "Q": (R * d, 0), "K": (nd, 0),
            "V": (nd, 0), "dQaccum": (R * d + nd, nd + R * d), "dQ": (0, nd), "dK": (0, nd), "dV": (0, nd)}


@pytest.mark.parametrize("n,d,br,bc", [(8192, 128, 64, 128), (1000, 64, 128, 128), (777, 32, 64, 48)])
@pytest.mark.parametrize("causal", [False, True])
def test_fa2_kernel_backward_counts(paper_a100, n, d, br, bc, causal):
    r = simulate(paper_a100, fa2_kernel_backward, Problem(seq_len=n, head_dim=d, causal=causal, heads=2), blocks=(br, bc), options=Options(sram_bytes=BIG))
    assert per_tensor(r, 2) == kernel_backward_form(n, d, br, bc, causal)


def test_fa2_kernel_backward_worked_example(paper_a100):
    """§9.2: real bwd tile 64 × 128 at N = 8192, d = 128."""
    r = simulate(paper_a100, fa2_kernel_backward, Problem(seq_len=8192, head_dim=128), blocks=(64, 128))
    assert (r.hbm.total_elements, r.hbm.total_bytes) == (278_929_408, 832_602_112)
    c = simulate(paper_a100, fa2_kernel_backward, Problem(seq_len=8192, head_dim=128, causal=True), blocks=(64, 128))
    assert c.hbm.total_elements == 146_292_736


