"""Block-sparse FlashAttention (Algorithm 5): counts follow docs/spec/algorithms.md §3.3 exactly.
The numerics are tests/numeric/test_numeric_variants.py."""

import numpy as np
import pytest

from iosim import Options, Problem, ProblemError, simulate
from iosim.workload.masks import parse_block_mask

import closed_forms as cf
from closed_forms import BIG, per_tensor


def sparse_forms(mask, n, d, br, bc):
    """§3.3 for FA1 (and the same active set for FA2): R = Σ_A r_i, C = Σ_A c_j."""
    rows = [min(br, n - i * br) for i in range(mask.shape[0])]
    cols = [min(bc, n - j * bc) for j in range(mask.shape[1])]
    R = sum(rows[i] for i, j in zip(*np.nonzero(mask)))
    C = sum(cols[j] for i, j in zip(*np.nonzero(mask)))
    init = n if (~mask.any(axis=1)).any() else 0  # a block-row with no block keeps O's initial value
    fa1 = {"Q": (R * d, 0), "K": (n * d, 0), "V": (n * d, 0), "O": (R * d, R * d + init * d),
           "l": (R, R + init), "m": (R, R + init)}
    fa2 = {"Q": (n * d, 0), "K": (C * d, 0), "V": (C * d, 0), "O": (0, n * d), "L": (0, n)}
    return fa1, fa2


@pytest.mark.parametrize("spec", ["local:1", "local:3", "random:0.3", "random:0.1:7", "dense"])
@pytest.mark.parametrize("n,d,br,bc", [(1024, 64, 64, 64), (1000, 32, 32, 96), (777, 16, 48, 16)])
def test_counts_follow_section_3_8(paper_a100, spec, n, d, br, bc):
    mask = parse_block_mask(spec, cf.ceil_div(n, br), cf.ceil_div(n, bc), br, bc)
    fa1_form, fa2_form = sparse_forms(mask, n, d, br, bc)
    problem = Problem(seq_len=n, head_dim=d, heads=3)
    fa1 = simulate(paper_a100, "fa1", problem, blocks=(br, bc), options=Options(sram_bytes=BIG, block_mask=spec))
    fa2 = simulate(paper_a100, "fa2", problem, blocks=(br, bc), options=Options(sram_bytes=BIG, block_mask=spec))
    assert per_tensor(fa1) == {k: (3 * r, 3 * w) for k, (r, w) in fa1_form.items()}
    assert per_tensor(fa2) == {k: (3 * r, 3 * w) for k, (r, w) in fa2_form.items()}


def test_proposition_4_form_when_blocks_divide_n(paper_a100):
    """B_r | N: total = 2Nd + s·T_c·N·(3d + 4), s the density of the mask."""
    n, d, b = 2048, 64, 64
    r = simulate(paper_a100, "fa1", Problem(seq_len=n, head_dim=d), blocks=(b, b), options=Options(block_mask="local:2"))
    mask = parse_block_mask("local:2", n // b, n // b, b, b)
    s, t_c = mask.mean(), n // b
    assert r.hbm.total_elements == 2 * n * d + round(s * t_c * n) * (3 * d + 4)
    assert r.options["block_density"] == s


def test_empty_block_row_counts_the_initialisation(paper_a100, tmp_path):
    mask = np.ones((4, 4), dtype=int)
    mask[2] = 0
    path = tmp_path / "mask.txt"
    path.write_text("\n".join(" ".join(map(str, row)) for row in mask))
    r = simulate(paper_a100, "fa1", Problem(seq_len=256, head_dim=16), blocks=(64, 64), options=Options(block_mask=str(path)))
    fa1_form, _ = sparse_forms(mask.astype(bool), 256, 16, 64, 64)
    assert per_tensor(r) == fa1_form
    assert r.tensors["O"].write_elements == (12 * 64 + 256) * 16


def test_causal_and_mask_intersect(paper_a100):
    n, d, b = 512, 16, 64
    both = simulate(paper_a100, "fa2", Problem(seq_len=n, head_dim=d, causal=True), blocks=(b, b), options=Options(block_mask="local:3"))
    mask = parse_block_mask("local:3", 8, 8, b, b) & np.tri(8, dtype=bool)
    _, fa2_form = sparse_forms(mask, n, d, b, b)
    assert per_tensor(both) == fa2_form


@pytest.mark.parametrize("spec,message", [("local:0", "≥ 1"), ("random:2", "(0, 1]"), ("stripes", "expected local:W"),
                                          ("local:x", "integer")])
def test_bad_mask_specs(paper_a100, spec, message):
    with pytest.raises(ProblemError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        simulate(paper_a100, "fa1", Problem(seq_len=256, head_dim=16), blocks=(64, 64), options=Options(block_mask=spec))


def test_mask_shape_must_match_tiling(paper_a100):
    with pytest.raises(ProblemError, match="T_r × T_c"):
        simulate(paper_a100, "fa1", Problem(seq_len=256, head_dim=16), blocks=(64, 64), options=Options(block_mask=np.ones((3, 4), dtype=bool)))
