"""Backward passes: counts equal the spec's closed forms (docs/spec/algorithms.md §2.2, §3.2, §4.2, §5). The gradients'
exactness is tests/numeric/test_gradients.py."""

import pytest

from iosim import CapacityError, Problem, list_profiles, load_profile, paper_block_sizes, simulate
from iosim import Options

import closed_forms as cf
from closed_forms import BIG, per_tensor


SHAPES = [(1000, 64, 64, 128), (777, 16, 16, 48), (4097, 128, 64, 256), (513, 256, 256, 16), (8192, 128, 128, 192)]


@pytest.mark.parametrize("n,d,br,bc", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_flash_backward_closed_forms(paper_a100, n, d, br, bc, causal):
    problem = Problem(seq_len=n, head_dim=d, causal=causal, batch=2, heads=2)
    for algo, form in (("fa1", cf.fa1_backward), ("fa2", cf.fa2_backward)):
        r = simulate(paper_a100, algo, problem, blocks=(br, bc), passes="backward", options=Options(sram_bytes=BIG))
        assert per_tensor(r, 4) == form(n, d, br, bc, causal), (algo, n, d, br, bc, causal)


@pytest.mark.parametrize("n,d", [(1000, 64), (513, 256)])
def test_standard_backward_closed_form(paper_a100, n, d):
    r = simulate(paper_a100, "standard", Problem(seq_len=n, head_dim=d), passes="backward")
    assert per_tensor(r) == cf.standard_backward(n, d)
    assert r.hbm.total_elements == 8 * n * d + 7 * n * n


def test_worked_example_backward(paper_a100):
    """docs/spec/algorithms.md §9.1: N = 8192, d = 128, M = 98,304."""
    p = Problem(seq_len=8192, head_dim=128)
    c = Problem(seq_len=8192, head_dim=128, causal=True)
    assert simulate(paper_a100, "standard", p, passes="backward").hbm.total_elements == 478_150_656
    fa1 = simulate(paper_a100, "fa1", p, passes="backward")
    assert (fa1.hbm.total_elements, fa1.hbm.total_bytes) == (230_342_656, 462_094_336)
    fa2 = simulate(paper_a100, "fa2", p, passes="backward")
    assert (fa2.hbm.total_elements, fa2.hbm.total_bytes) == (232_448_000, 466_321_408)
    assert simulate(paper_a100, "fa1", c, passes="backward").hbm.total_elements == 119_898_112
    assert simulate(paper_a100, "fa2", c, passes="backward").hbm.total_bytes == 244_744_192
    twice = simulate(paper_a100, "fa2", p, passes="backward", options=Options(dq_read_twice=True))
    assert twice.hbm.total_elements == 277_536_768
    both = {a: simulate(paper_a100, a, p, passes="forward+backward").hbm.total_elements for a in ("standard", "fa1", "fa2")}
    assert both == {"standard": 750_780_416, "fa1": 369_115_136, "fa2": 368_771_072}


def test_dq_read_twice_closed_form(paper_a100):
    r = simulate(paper_a100, "fa2", Problem(seq_len=777, head_dim=16, causal=True), blocks=(16, 48), passes="backward", options=Options(dq_read_twice=True))
    assert per_tensor(r) == cf.fa2_backward(777, 16, 16, 48, True, dq_twice=True)


@pytest.mark.parametrize("name", list_profiles())
@pytest.mark.parametrize("d", [16, 64, 128, 256])
def test_paper_default_blocks_backward(name, d):
    """Backward keeps Q_i, dO_i, K_j, V_j in shared memory: 2·B_r·d + 2·B_c·d ≤ M when
    B_c = M/4d exactly. The ceiling in B_c = ⌈M/4d⌉ can push it over by a few rows
    (H100, fp16, d = 256: 4 × 114 × 256 = 116,736 > M = 116,224); iosim reports that."""
    profile = load_profile(name)
    problem = Problem(seq_len=2048, head_dim=d)
    M = profile.scratchpad.per_block_bytes // problem.width
    blocks = paper_block_sizes(M, d)
    need = 2 * (blocks.block_q + blocks.block_kv) * d
    for algo in ("fa1", "fa2"):
        if need <= M:
            assert simulate(profile, algo, problem, passes="backward").sram.fits
        else:
            assert 4 * d * d > M and M % (4 * d)  # only the rounding of ⌈M/4d⌉ can do this
            with pytest.raises(CapacityError, match="paper rule"):
                simulate(profile, algo, problem, passes="backward")


def test_three_modes_agree_backward(paper_a100):
    problem = Problem(seq_len=333, head_dim=16, causal=True, batch=2)
    for algo in ("standard", "fa1", "fa2"):
        runs = [simulate(paper_a100, algo, problem, blocks=(32, 48), mode=m, passes="forward+backward")
                for m in ("count", "trace", "numeric")]
        assert runs[0].tensors == runs[1].tensors == runs[2].tensors
        assert runs[0].ops == runs[1].ops == runs[2].ops


def test_unknown_option_is_an_error(paper_a100):
    from iosim import Options, ScheduleError

    with pytest.raises(ScheduleError, match="dq_read_twice"):
        simulate(paper_a100, "fa1", Problem(seq_len=64, head_dim=16), passes="backward", options=Options(dq_read_twice=True))
