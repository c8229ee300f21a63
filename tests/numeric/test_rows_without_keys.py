"""Rows with no visible key (causal with N_q > N_kv: the first N_q − N_kv queries see no
key) have output 0 and gradients 0 in every schedule, as in FlashAttention, and the float64
reference agrees (issue 16: standard gave NaN in O and P, every backward NaN in dQ, dK, dV,
and the reference NaN too, so nothing caught it)."""

import numpy as np
import pytest

from iosim import Options, Problem, random_inputs, reference_attention, reference_gradients, simulate
from iosim.workload.reference import reference_statistics

SHAPES = [(7, 1, 1, 1), (100, 40, 16, 2), (300, 130, 32, 1)]     # N_q, N_kv, d, GQA group


@pytest.mark.parametrize("algo,passes,options", [
    ("standard", "forward+backward", {}), ("fa1", "forward+backward", {}), ("fa2", "forward+backward", {}),
    ("fa2-splitkv", "forward", {"num_splits": 3}), ("fa2", "forward+backward", {"kernel": "flash-attn-2"}),
])
@pytest.mark.parametrize("n_q,n_kv,d,group", SHAPES)
def test_rows_without_keys_give_zeros_in_every_schedule(algo, passes, options, n_q, n_kv, d, group):
    p = Problem(seq_len_q=n_q, seq_len_kv=n_kv, head_dim=d, causal=True, heads=2, kv_heads=2 // group, batch=2)
    x = random_inputs(p, seed=n_q, gradient=True)
    hw, blocks = ("h100-sxm", None) if "kernel" in options else ("fa-paper-a100", (16, 16))
    r = simulate(hw, algo, p, passes=passes, blocks=blocks, mode="numeric", inputs=x, options=Options(**options))
    K, V = (np.repeat(x[t], group, axis=1) for t in ("K", "V"))
    O = r.outputs["O"]
    assert np.all(np.isfinite(O)) and np.max(np.abs(O - reference_attention(x["Q"], K, V, True))) <= 1e-12
    assert not O[..., : n_q - n_kv, :].any()                    # no key: output 0
    if "backward" in passes:
        grads = reference_gradients(x["Q"], K, V, x["dO"], True)
        assert np.max(np.abs(r.outputs["dQ"] - grads["dQ"])) <= 1e-10
        assert not r.outputs["dQ"][..., : n_q - n_kv, :].any()
        for name in ("dK", "dV"):
            assert np.all(np.isfinite(r.outputs[name]))


def test_the_reference_defines_rows_without_keys():
    p = Problem(seq_len_q=5, seq_len_kv=2, head_dim=4, causal=True)
    x = random_inputs(p, seed=0, gradient=True)
    O = reference_attention(x["Q"], x["K"], x["V"], True)
    stats = reference_statistics(x["Q"], x["K"], True)
    grads = reference_gradients(x["Q"], x["K"], x["V"], x["dO"], True)
    assert not O[..., :3, :].any() and np.all(np.isfinite(O[..., 3:, :])) and O[..., 3:, :].any()
    assert np.all(np.isneginf(stats["m"][..., :3])) and not stats["l"][..., :3].any()
    assert np.all(np.isneginf(stats["L"][..., :3])) and np.all(np.isfinite(stats["L"][..., 3:]))
    assert all(np.all(np.isfinite(g)) for g in grads.values()) and not grads["dQ"][..., :3, :].any()
