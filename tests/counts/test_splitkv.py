"""Split-KV forward (Flash-Decoding): counts follow docs/spec/algorithms.md §6, the heuristic docs/spec/kernels.md §3.
The numerics are tests/numeric/test_numeric_variants.py."""

import pytest

from iosim import Options, Problem, ScheduleError, simulate
from iosim.kernels.split_heuristic import default_num_splits, num_splits_heuristic

import closed_forms as cf
from closed_forms import per_tensor


def test_heuristic_examples():
    # algorithms.md §9.3: B = 1, H = 32, N_k = 8192, kBlockN = 128 → 64 key blocks.
    assert default_num_splits(1, 32, 1, 64, sm_count=108) == 6     # A100
    assert default_num_splits(1, 32, 1, 64, sm_count=132) == 7     # H100 SXM
    # GQA decode, H_k = 8: four query rows per K/V head.
    assert default_num_splits(1, 8, 4, 64, sm_count=108) == 22
    assert default_num_splits(1, 8, 4, 64, sm_count=132) == 32
    # flash_api.cpp's comment: "batch * n_heads = 48 and we have 108 SMs, having 2 splits
    # (efficiency = 0.89) is better than having 3 splits (efficiency = 0.67)".
    assert num_splits_heuristic(48, 108, 64) == 2
    # A grid that nearly fills the GPU is not split.
    assert num_splits_heuristic(200, 216, 64) == 1


def splitkv_form(n_q, n_kv, d, br, bc, S, causal):
    """Per head: the split kernel over (query block, split), then the combine kernel."""
    t_m, n_b = cf.ceil_div(n_q, br), cf.ceil_div(n_kv, bc)
    per_split = cf.ceil_div(n_b, S)
    q = k = oacc_w = lse_w = 0
    for i in range(t_m):
        rows = range(i * br, min((i + 1) * br, n_q))
        for s in range(S):
            blocks = [j for j in range(s * per_split, min((s + 1) * per_split, n_b))
                      if not causal or any(kk <= qq + n_kv - n_q for qq in rows
                                           for kk in range(j * bc, min((j + 1) * bc, n_kv)))]
            oacc_w += len(rows) * d
            lse_w += len(rows)
            if blocks:
                q += len(rows) * d
                k += sum(min(bc, n_kv - j * bc) for j in blocks) * d
    return {"Q": (q, 0), "K": (k, 0), "V": (k, 0), "Oaccum": (S * n_q * d, oacc_w),
            "LSEaccum": (S * n_q, lse_w), "O": (0, n_q * d), "L": (0, n_q)}


@pytest.mark.parametrize("n_q,n_kv,br,bc,S", [(1, 8192, 64, 128, 6), (1, 1000, 64, 64, 4), (5, 700, 64, 64, 3),
                                               (64, 1000, 64, 64, 7), (100, 1000, 64, 64, 32), (3, 129, 64, 64, 5)])
@pytest.mark.parametrize("causal", [False, True])
def test_counts(paper_a100, n_q, n_kv, br, bc, S, causal):
    d = 32
    problem = Problem(seq_len_q=n_q, seq_len_kv=n_kv, head_dim=d, heads=2, causal=causal)
    r = simulate(paper_a100, "fa2-splitkv", problem, blocks=(br, bc), options=Options(num_splits=S))
    # One query row: the causal flag changes nothing and the kernel drops it (decode_layout).
    assert per_tensor(r, 2) == splitkv_form(n_q, n_kv, d, br, bc, S, causal and n_q > 1)
    assert r.options["num_splits"] == S


def test_worked_example_section_4_4():
    """A100, B = 1, H = 32, d = 128, one query row against 8192 keys: 134,473,344 bytes."""
    r = simulate("a100-40gb", "fa2-splitkv", Problem(seq_len_q=1, seq_len_kv=8192, head_dim=128, heads=32), blocks=(64, 128))
    assert r.options["num_splits"] == 6
    assert r.hbm.total_bytes == 134_473_344


def test_gqa_decode_reads_kv_once_per_kv_head():
    """seqlenq_ngroups_swapped: with H_k = 8 the query heads become 4 rows of 8 heads."""
    mha = simulate("a100-40gb", "fa2-splitkv", Problem(seq_len_q=1, seq_len_kv=8192, head_dim=128, heads=32), blocks=(64, 128))
    gqa = simulate("a100-40gb", "fa2-splitkv", Problem(seq_len_q=1, seq_len_kv=8192, head_dim=128, heads=32, kv_heads=8), blocks=(64, 128))
    assert gqa.options["num_splits"] == 22
    assert gqa.tensors["K"].read_bytes * 4 == mha.tensors["K"].read_bytes
    assert per_tensor(gqa, 8) == splitkv_form(4, 8192, 128, 64, 128, 22, False)


def test_one_split_is_plain_flash_attention_2(paper_a100):
    problem = Problem(seq_len_q=64, seq_len_kv=4096, head_dim=64, heads=4)
    one = simulate(paper_a100, "fa2-splitkv", problem, blocks=(64, 64), options=Options(num_splits=1))
    fa2 = simulate(paper_a100, "fa2", problem, blocks=(64, 64))
    assert one.tensors == fa2.tensors


def test_no_backward(paper_a100):
    with pytest.raises(ScheduleError, match="no backward"):
        simulate(paper_a100, "fa2-splitkv", Problem(seq_len_q=1, seq_len_kv=64, head_dim=16), passes="backward")
