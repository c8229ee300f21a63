"""Counts equal the spec's closed forms exactly (docs/spec/algorithms.md §2.1, §3.1, §4.1, §5, §9.1)."""

import itertools

import pytest

from iosim import Options, Problem, simulate

import closed_forms as cf
from closed_forms import BIG, per_tensor


SHAPES = [
    # (N, d, B_r, B_c): ragged N, d in {16, 64, 128, 256}, blocks 16..256
    (1000, 64, 64, 128),
    (1000, 64, 128, 64),
    (777, 16, 16, 48),
    (4096, 128, 128, 64),
    (4097, 128, 64, 256),
    (513, 256, 256, 16),
    (255, 16, 32, 32),
    (8192, 128, 128, 192),
    (100, 64, 256, 256),   # one ragged tile in each direction
]


@pytest.mark.parametrize("n,d,br,bc", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_fa1_fa2_match_closed_forms(paper_a100, n, d, br, bc, causal):
    problem = Problem(seq_len=n, head_dim=d, causal=causal, batch=2, heads=3)
    for algo, form in (("fa1", cf.fa1_forward), ("fa2", cf.fa2_forward)):
        r = simulate(paper_a100, algo, problem, blocks=(br, bc), options=Options(sram_bytes=BIG))
        assert per_tensor(r, 6) == form(n, d, br, bc, causal), (algo, n, d, br, bc, causal)
        assert r.hbm.total_elements == 6 * sum(a + b for a, b in form(n, d, br, bc, causal).values())


@pytest.mark.parametrize("n,d", [(1000, 64), (777, 16), (4096, 128), (513, 256)])
@pytest.mark.parametrize("causal", [False, True])
def test_standard_matches_closed_form(paper_a100, n, d, causal):
    r = simulate(paper_a100, "standard", Problem(seq_len=n, head_dim=d, causal=causal, heads=4))
    assert per_tensor(r, 4) == cf.standard_forward(n, d)
    assert r.hbm.total_elements == 4 * (4 * n * d + 4 * n * n)


@pytest.mark.parametrize("n,d,br,bc", [(1000, 64, 64, 128), (777, 16, 16, 48), (100, 64, 256, 256)])
def test_padded_tiles_and_init_writes(paper_a100, n, d, br, bc):
    problem = Problem(seq_len=n, head_dim=d)
    r = simulate(paper_a100, "fa1", problem, blocks=(br, bc), options=Options(tiles="padded", count_init=True, sram_bytes=BIG))
    assert per_tensor(r, 1) == cf.fa1_forward(n, d, br, bc, False, padded=True, init=True)
    r = simulate(paper_a100, "fa2", problem, blocks=(br, bc), options=Options(tiles="padded", sram_bytes=BIG))
    assert per_tensor(r, 1) == cf.fa2_forward(n, d, br, bc, False, padded=True)


def test_worked_example_section_4_2(paper_a100):
    """N = 8192, d = 128, M = 98,304: the paper's blocks and the spec's per-tensor table."""
    problem = Problem(seq_len=8192, head_dim=128)
    fa1 = simulate(paper_a100, "fa1", problem)
    assert (fa1.blocks.block_q, fa1.blocks.block_kv) == (128, 192)
    assert fa1.hbm.total_elements == 138_772_480
    assert per_tensor(fa1, 1)["Q"] == (45_088_768, 0)
    assert per_tensor(fa1, 1)["l"] == (352_256, 352_256)
    assert simulate(paper_a100, "fa2", problem).hbm.total_elements == 136_323_072
    assert simulate(paper_a100, "standard", problem).hbm.total_elements == 272_629_760
    causal = Problem(seq_len=8192, head_dim=128, causal=True)
    assert simulate(paper_a100, "fa1", causal).hbm.total_elements == 72_024_064
    assert per_tensor(simulate(paper_a100, "fa2", causal), 1)["K"] == (34_594_816, 0)
    assert simulate(paper_a100, "fa2", causal).hbm.total_elements == 71_294_976
    # Bytes with ℓ, m, L in fp32 (the spec's "stats fp32" column).
    assert fa1.hbm.total_bytes == 280_363_008
    assert simulate(paper_a100, "fa2", problem).hbm.total_bytes == 272_662_528
    # Padded tiles and +init (docs/spec/algorithms.md §9.1 variants).
    assert simulate(paper_a100, "fa1", problem, options=Options(tiles="padded")).hbm.total_elements == 138_788_864
    assert simulate(paper_a100, "fa2", problem, options=Options(tiles="padded")).hbm.total_elements == 137_371_648
    assert simulate(paper_a100, "fa1", problem, options=Options(count_init=True)).hbm.total_elements == 139_837_440


def test_square_causal_tiles_closed_form(paper_a100):
    """§5: B_r = B_c = B, B | N: FA2 causal = N·d·(T+3) + N; checked value 70,262,784."""
    r = simulate(paper_a100, "fa2", Problem(seq_len=8192, head_dim=128, causal=True), blocks=(128, 128))
    assert r.hbm.total_elements == 8192 * 128 * (64 + 3) + 8192 == 70_262_784
    r = simulate(paper_a100, "fa1", Problem(seq_len=8192, head_dim=128, causal=True), blocks=(128, 128))
    assert r.hbm.total_elements == 105_398_272


def test_counts_scale_with_batch_and_heads(paper_a100):
    one = simulate(paper_a100, "fa2", Problem(seq_len=1000, head_dim=64, causal=True))
    many = simulate(paper_a100, "fa2", Problem(seq_len=1000, head_dim=64, causal=True, batch=8, heads=32))
    assert many.hbm.total_bytes == 256 * one.hbm.total_bytes
    assert many.flops == 256 * one.flops


@pytest.mark.parametrize("dtype,width", [("fp32", 4), ("fp16", 2), ("bf16", 2), ("fp8", 1)])
def test_bytes_are_elements_times_width(paper_a100, dtype, width):
    r = simulate(paper_a100, "fa2", Problem(seq_len=1000, head_dim=64, dtype=dtype), blocks=(64, 64))
    assert r.tensors["K"].read_bytes == width * r.tensors["K"].read_elements
    assert r.tensors["L"].write_bytes == 4 * r.tensors["L"].write_elements  # logsumexp stays fp32


def test_matmul_flops(paper_a100):
    """Non-causal forward: two products of 2·N·N·d each, whatever the loop order."""
    for algo in ("standard", "fa1", "fa2"):
        r = simulate(paper_a100, algo, Problem(seq_len=1000, head_dim=64), blocks=(64, 128))
        assert r.flops == 4 * 1000 * 1000 * 64


def test_tiled_standard_gemm(paper_a100):
    """gemm='tiled': Q read T_c times, K and V T_r times, S/P as in the idealised count."""
    n, d, br, bc = 1000, 64, 64, 128
    r = simulate(paper_a100, "standard", Problem(seq_len=n, head_dim=d), blocks=(br, bc), options=Options(gemm="tiled"))
    t_r, t_c = cf.ceil_div(n, br), cf.ceil_div(n, bc)
    assert per_tensor(r, 1) == {"Q": (t_c * n * d, 0), "K": (t_r * n * d, 0), "S": (n * n, n * n),
                                "P": (n * n, n * n), "V": (t_r * n * d, 0), "O": (0, n * d)}


@pytest.mark.parametrize("algo,causal", list(itertools.product(["standard", "fa1", "fa2"], [False, True])))
def test_three_modes_count_identically(paper_a100, algo, causal):
    """Grouped counting, iteration-by-iteration tracing and numeric runs agree exactly."""
    problem = Problem(seq_len=333, head_dim=16, causal=causal, batch=2, heads=2)
    runs = [simulate(paper_a100, algo, problem, blocks=(32, 48), mode=m) for m in ("count", "trace", "numeric")]
    for other in runs[1:]:
        assert other.tensors == runs[0].tensors
        assert other.ops == runs[0].ops
        assert other.sram == runs[0].sram and other.registers == runs[0].registers


def brute_force_active(n_q, n_kv, br, bc):
    """Active blocks by checking every entry: k ≤ q + (N_kv − N_q) somewhere in the block."""
    t_r, t_c = cf.ceil_div(n_q, br), cf.ceil_div(n_kv, bc)
    active = []
    for i in range(t_r):
        for j in range(t_c):
            rows = range(i * br, min((i + 1) * br, n_q))
            cols = range(j * bc, min((j + 1) * bc, n_kv))
            if any(k <= q + n_kv - n_q for q in rows for k in cols):
                active.append((i, j, len(rows), len(cols)))
    return active


@pytest.mark.parametrize("n_q,n_kv,br,bc", [(70, 150, 32, 32), (150, 70, 16, 48), (1, 4000, 64, 128),
                                            (64, 1000, 64, 256), (333, 333, 48, 32)])
@pytest.mark.parametrize("causal", [False, True])
def test_unequal_lengths_match_brute_force(paper_a100, n_q, n_kv, br, bc, causal):
    """C3/§5: count query and key rows separately; causal aligned bottom-right."""
    if causal:
        active = brute_force_active(n_q, n_kv, br, bc)
    else:
        active = [(i, j, min(br, n_q - i * br), min(bc, n_kv - j * bc))
                  for i in range(cf.ceil_div(n_q, br)) for j in range(cf.ceil_div(n_kv, bc))]
    R = sum(r for _, _, r, _ in active)
    C = sum(c for _, _, _, c in active)
    kv_rows = sum(min(bc, n_kv - j * bc) for j in range(cf.ceil_div(n_kv, bc)))
    d = 16
    problem = Problem(seq_len_q=n_q, seq_len_kv=n_kv, head_dim=d, causal=causal)
    fa2 = simulate(paper_a100, "fa2", problem, blocks=(br, bc), options=Options(sram_bytes=BIG))
    assert per_tensor(fa2, 1) == {"Q": (n_q * d, 0), "K": (C * d, 0), "V": (C * d, 0), "O": (0, n_q * d), "L": (0, n_q)}
    fa1 = simulate(paper_a100, "fa1", problem, blocks=(br, bc), options=Options(sram_bytes=BIG))
    # Algorithm 1 loads K_j, V_j for every j, even a column with no active block. A query
    # block with no visible key keeps O's initial value, so the initialisation counts (§3.3).
    init = n_q if {i for i, _, _, _ in active} != set(range(cf.ceil_div(n_q, br))) else 0
    assert per_tensor(fa1, 1) == {"Q": (R * d, 0), "K": (kv_rows * d, 0), "V": (kv_rows * d, 0),
                                  "O": (R * d, R * d + init * d), "l": (R, R + init), "m": (R, R + init)}


def test_active_block_count_section_4_2():
    """§9.1: with causal masking 1,408 of the 2,752 blocks are visited (B_r = 128, B_c = 192)."""
    from iosim.engine.blocks import BlockMask
    from iosim.workload.problem import BlockSizes

    mask = BlockMask(Problem(seq_len=8192, head_dim=128, causal=True), BlockSizes(128, 192))
    assert mask.n_active() == 1_408
    assert BlockMask(Problem(seq_len=8192, head_dim=128), BlockSizes(128, 192)).n_active() == 64 * 43
