"""Grouped-query attention: counts as the kernels issue them. The numerics against the
reference are tests/numeric/test_numeric_variants.py."""

import pytest

from iosim import Problem, ProblemError, simulate

from closed_forms import per_tensor


@pytest.mark.parametrize("algo", ["standard", "fa1", "fa2"])
@pytest.mark.parametrize("kv_heads", [1, 2, 8])
def test_forward_requests_equal_multi_head(paper_a100, algo, kv_heads):
    """Every query head's thread blocks load their group's K/V: the requests of MHA."""
    gqa = Problem(seq_len=1000, head_dim=64, heads=8, kv_heads=kv_heads, batch=2, causal=True)
    mha = Problem(seq_len=1000, head_dim=64, heads=8, batch=2, causal=True)
    a = simulate(paper_a100, algo, gqa, blocks=(64, 128))
    b = simulate(paper_a100, algo, mha, blocks=(64, 128))
    assert per_tensor(a) == per_tensor(b)


@pytest.mark.parametrize("algo", ["standard", "fa1", "fa2"])
def test_backward_adds_the_group_reduction(paper_a100, algo):
    """dK, dV: per-query-head buffers written and read back (B·H·N·d each), then B·H_k·N·d written."""
    n, d, b, h, hk = 1000, 64, 2, 8, 2
    gqa = simulate(paper_a100, algo, Problem(seq_len=n, head_dim=d, heads=h, kv_heads=hk, batch=b), blocks=(64, 128), passes="backward")
    mha = simulate(paper_a100, algo, Problem(seq_len=n, head_dim=d, heads=h, batch=b), blocks=(64, 128), passes="backward")
    g, m = per_tensor(gqa), per_tensor(mha)
    for name in ("dK", "dV"):
        assert g[f"{name}_expanded"] == (b * h * n * d, m[name][1])  # MHA wrote dK per head directly
        assert g[name] == (0, b * hk * n * d)
    rest = {k: v for k, v in g.items() if k not in ("dK", "dV", "dK_expanded", "dV_expanded")}
    assert rest == {k: v for k, v in m.items() if k not in ("dK", "dV")}


def test_heads_must_be_a_multiple_of_kv_heads():
    with pytest.raises(ProblemError, match="multiple of kv_heads"):
        Problem(seq_len=64, head_dim=16, heads=6, kv_heads=4)
