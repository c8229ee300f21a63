"""iosim bounds for the rest of the family: Theorem 5 (backward) and Proposition 4 (block-sparse)."""

import pytest

from iosim.studies.bounds import check_bounds
from iosim.cli.main import main

from conftest import SMALL


@pytest.fixture(scope="module")
def report():
    return check_bounds("fa-paper-a100", ["standard-backward", "fa1-backward", "fa2-backward", "fa1-block-sparse"],
                        **SMALL)


def verdict(report, claim, algorithm):
    return next(v for v in report.verdicts if v.claim.id == claim and v.algorithm == algorithm)


@pytest.mark.parametrize("algorithm", ["fa1-backward", "fa2-backward"])
def test_theorem5_flash_backward_holds(report, algorithm):
    v = verdict(report, "theorem5-flash-backward", algorithm)
    assert v.holds, v.reason
    assert abs(v.exponents["N"] - 2) < 0.15 and abs(v.exponents["M"] + 1) < 0.15
    assert verdict(report, "compulsory", algorithm).holds  # Q, K, V, dO read; dQ, dK, dV written


def test_theorem5_standard_backward_holds(report):
    v = verdict(report, "theorem5-standard-backward", "standard-backward")
    assert v.holds and 7 <= v.ratio_min <= v.ratio_max <= 7.5  # 8Nd + 7N² over Nd + N²


def test_theorem5_flash_fails_for_standard_backward():
    r = check_bounds("fa-paper-a100", ["standard-backward"], ["theorem5-flash-backward"], **SMALL)
    v = r.verdicts[0]
    assert not v.holds and "M^" in v.reason  # its count does not fall as 1/M


def test_proposition4_holds_for_block_sparse(report):
    v = verdict(report, "proposition4-block-sparse", "fa1-block-sparse")
    assert v.holds, v.reason
    assert all(0.2 < p.density < 1 for p in report.points if p.algorithm == "fa1-block-sparse" and p.feasible)


def test_proposition4_fails_for_dense_standard():
    r = check_bounds("fa-paper-a100", ["standard"], ["proposition4-block-sparse"], **SMALL)
    assert not r.verdicts[0].holds and "band" in r.verdicts[0].reason


def test_cli_exit_codes(capsys):
    args = ["bounds", "--hw", "fa-paper-a100", "--seq-len", "512,1024,2048", "--head-dim", "32,64", "--jobs", "1"]
    assert main(args + ["--algo", "fa2-backward"]) == 0
    assert main(args + ["--algo", "standard-backward", "--claim", "theorem5-flash-backward"]) == 1
    capsys.readouterr()


def test_explore_accepts_the_family(capsys):
    """explore runs the backward pass and block-sparse masks, and compares with the backward tile."""
    from iosim import Problem
    from iosim.studies.explore import explore

    r = explore("h100-sxm", "fa2", Problem(seq_len=2048, head_dim=128), passes="backward", jobs=1,
                block_q=[64, 128], block_kv=[64, 128])
    assert (r.kernel.block_q, r.kernel.block_kv) == (64, 128)        # docs/spec/kernels.md §4
    sparse = explore("h100-sxm", "fa1", Problem(seq_len=2048, head_dim=64), block_mask="local:2", jobs=1,
                     block_q=[64], block_kv=[64, 128])
    dense = explore("h100-sxm", "fa1", Problem(seq_len=2048, head_dim=64), jobs=1, block_q=[64], block_kv=[64, 128])
    assert sparse.best.hbm_read_bytes < dense.best.hbm_read_bytes
    assert main(["explore", "--hw", "h100-sxm", "--algo", "fa2", "-N", "1024", "-d", "64", "--kv-heads", "1",
                 "--heads", "8", "--pass", "forward+backward", "--block-q", "64", "--block-kv", "64,128",
                 "--jobs", "1"]) == 0
    capsys.readouterr()
