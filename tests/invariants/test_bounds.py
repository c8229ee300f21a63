"""iosim bounds: exact counts against the spec's closed forms, verdicts that hold and fail
as they should, fitted exponents, the CLI's exit codes and JSON, and the plot.

The closed forms live here, never in the product code (docs/spec/algorithms.md).
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from fractions import Fraction

import pytest

from iosim.studies.bounds import (
    ALGORITHMS, BAND_LIMIT, CLAIMS, EXPONENT_TOLERANCE, Algorithm, _set_worker_profile, check_bounds,
    count_point, fit_exponents, rule_blocks,
)
from iosim.report.bounds_report import render_bounds
from iosim.cli.main import main
from iosim.errors import DependencyError, ProblemError
from iosim.studies.progress import ProgressBar, progress_map

import closed_forms as cf
from conftest import SMALL


# -- closed forms (tests/closed_forms.py, docs/spec/algorithms.md §2–§4), per head, exact tiles ---
def total(per_tensor: dict) -> int:
    return sum(r + w for r, w in per_tensor.values())


def paper_blocks(M, d):
    """Algorithm 1 line 1: B_c = ⌈M/4d⌉, B_r = min(B_c, d)."""
    bc = cf.ceil_div(M, 4 * d)
    return min(bc, d), bc


def standard_count(N, d, M):
    return total(cf.standard_forward(N, d))                     # 4Nd + 4N²


def fa1_count(N, d, M):
    return total(cf.fa1_forward(N, d, *paper_blocks(M, d), causal=False))   # 2Nd + T_c(3Nd + 4N)


def fa2_count(N, d, M, B_r=None):
    br, bc = paper_blocks(M, d)
    return total(cf.fa2_forward(N, d, B_r or br, bc, causal=False))        # 2Nd + N + 2·T_r·Nd


@pytest.fixture
def worker(paper_a100):
    _set_worker_profile(paper_a100)
    yield
    _set_worker_profile(None)


@pytest.mark.parametrize("N,d,M", [(1000, 64, 4096), (8192, 128, 98304), (4096, 64, 300), (777, 32, 24864),
                                   (2048, 128, 2048 * 128)])
def test_counts_match_the_closed_forms(worker, N, d, M):
    got = {a: count_point((ALGORITHMS[a], N, d, M, "paper", "fp16")).count for a in ALGORITHMS}
    assert got["standard"] == standard_count(N, d, M)
    assert got["fa1"] == fa1_count(N, d, M)
    assert got["fa2"] == fa2_count(N, d, M)
    assert got["row-by-row"] == fa2_count(N, d, M, B_r=1)       # K and V read once per query row


def test_spec_worked_example(worker):
    """docs/spec/algorithms.md §9.1: N = 8192, d = 128, M = 98,304."""
    counts = {a: count_point((ALGORITHMS[a], 8192, 128, 98304, "paper", "fp16")).count
              for a in ("standard", "fa1", "fa2")}
    assert counts == {"standard": 272_629_760, "fa1": 138_772_480, "fa2": 136_323_072}


def test_block_rules():
    fa1, fa2, rbr = ALGORITHMS["fa1"], ALGORITHMS["fa2"], ALGORITHMS["row-by-row"]
    blocks, capped = rule_blocks("paper", fa2, 98304, 128)
    assert (blocks.block_q, blocks.block_kv, capped) == (128, 192, "B_r")
    blocks, capped = rule_blocks("outer", fa2, 98304, 128)           # transposed for the Q-outer loop
    assert (blocks.block_q, blocks.block_kv, capped) == (192, 128, "B_c")
    blocks, _ = rule_blocks("outer", fa1, 98304, 128)                # FA1: the paper's rule
    assert (blocks.block_q, blocks.block_kv) == (128, 192)
    blocks, _ = rule_blocks("paper", rbr, 98304, 128)
    assert (blocks.block_q, blocks.block_kv) == (1, 192)
    with pytest.raises(ProblemError):
        rule_blocks("nope", fa1, 1024, 64)


# -- verdicts -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def paper_report(paper_a100):
    return check_bounds(paper_a100, ["standard", "fa1", "fa2", "row-by-row"],
                        ["theorem2-standard", "theorem2-flash", "proposition3-lower", "compulsory"], **SMALL)


def verdict(report, algo, claim):
    return next(v for v in report.verdicts if v.algorithm == algo and v.claim.id == claim)


@pytest.mark.parametrize("algo,claim,holds", [
    ("standard", "theorem2-standard", True),
    ("standard", "theorem2-flash", False),       # its count does not fall as 1/M
    ("fa1", "theorem2-flash", True),
    ("fa1", "theorem2-standard", False),
    ("fa2", "theorem2-flash", False),            # paper rule: B_r capped at d for M > 4d²
    ("row-by-row", "theorem2-flash", False),     # K, V re-read for every query row
    ("standard", "proposition3-lower", True),
    ("fa1", "proposition3-lower", True),
    ("fa2", "proposition3-lower", True),
    ("row-by-row", "proposition3-lower", True),
    ("standard", "compulsory", True),
    ("fa1", "compulsory", True),
    ("fa2", "compulsory", True),
])
def test_verdicts(paper_report, algo, claim, holds):
    v = verdict(paper_report, algo, claim)
    assert v.holds is holds, v.reason
    assert v.reason


def test_failures_say_why(paper_report):
    v = verdict(paper_report, "standard", "theorem2-flash")
    assert "M^" in v.reason and "band" in v.reason
    v = verdict(paper_report, "row-by-row", "theorem2-flash")
    assert abs(v.exponents["M"]) < 1e-9                    # flat in M: K/V read N times whatever M is
    assert "M^-1.00" in v.reason


def test_fa2_paper_rule_cap_is_reported(paper_report):
    v = verdict(paper_report, "fa2", "theorem2-flash")
    assert not v.holds
    assert any("B_r is capped at d" in n and "--block-rule outer" in n for n in v.notes)
    assert v.uncapped is not None and v.uncapped.holds        # fine where M ≤ 4d²
    assert "B_r is capped" in render_bounds(paper_report)


def test_outer_rule_makes_fa2_theta(paper_a100):
    report = check_bounds(paper_a100, ["fa2", "fa1"], ["theorem2-flash"], block_rule="outer", **SMALL)
    assert report.holds, [v.reason for v in report.verdicts]


def test_exponents_fa1_and_standard(paper_report):
    """Done-when: FA1 (paper rule) fits N² and M⁻¹; standard fits N² and no M dependence."""
    fa1 = verdict(paper_report, "fa1", "theorem2-flash").exponents
    assert abs(fa1["N"] - 2) <= EXPONENT_TOLERANCE and abs(fa1["M"] + 1) <= EXPONENT_TOLERANCE
    assert abs(fa1["d"] - 2) <= EXPONENT_TOLERANCE
    std = verdict(paper_report, "standard", "theorem2-standard").exponents
    assert abs(std["N"] - 2) <= EXPONENT_TOLERANCE and abs(std["M"]) < 1e-9


def test_ratio_band_and_exact_ratio(paper_report):
    v = verdict(paper_report, "standard", "theorem2-standard")
    assert v.ratio_min == v.ratio_max == 4.0                    # 4Nd + 4N² = 4·(Nd + N²) exactly
    v = verdict(paper_report, "fa1", "theorem2-flash")
    assert v.ratio_max <= BAND_LIMIT * v.ratio_min


def test_paper_constants(paper_a100):
    """FA1 ≈ 12·N²d²/M (docs/spec/algorithms.md §3.1) and the seed's ≈ 6.1 at N = 8,192 (d = 128, M = 98,304)."""
    report = check_bounds(paper_a100, ["standard", "fa1"], seq_lens=[8192], head_dims=[128], jobs=1)
    rows = {r["algorithm"]: r for r in report.profile_rows()}
    N, d, M = 8192, 128, 98304
    assert rows["fa1"]["count_elements"] == fa1_count(N, d, M)
    assert rows["fa1"]["ratio_flash"] == pytest.approx(float(Fraction(fa1_count(N, d, M) * M, N * N * d * d)))
    assert 12 < rows["fa1"]["ratio_flash"] < 12.5              # 12·(1 + 4/3d) + 2Nd/(N²d²/M), T_c rounded up
    assert round(rows["fa1"]["theorem2_expression_ratio"], 1) == 6.1
    text = render_bounds(report)
    assert "6.09" in text and "12.41" in text


@pytest.mark.parametrize("seq_lens,head_dims", [([1024, 4096], [64]), ([128, 256, 512], [16, 32])])
def test_fine_M_grids_and_small_shapes_keep_fa1_theta(paper_a100, seq_lens, head_dims):
    """⌈M/4d⌉ rounding on a fine M grid, and the lower-order terms (2Nd, 4N) that bend the
    fit at small N and d, stay inside the band and the exponent tolerance."""
    for rule, algos in (("paper", ["fa1"]), ("outer", ["fa1", "fa2"])):
        report = check_bounds(paper_a100, algos, ["theorem2-flash"], seq_lens=seq_lens, head_dims=head_dims,
                              sram_steps=40, block_rule=rule, jobs=1)
        assert report.holds, [v.reason for v in report.verdicts]


# A schedule with unlimited SRAM: each input read once, the output written once.
def one_pass(ctx):
    Q, K, V = ctx.read("Q"), ctx.read("K"), ctx.read("V")
    ctx.write("O", (Q @ K.T) @ V)


def skips_v(ctx):
    Q, K = ctx.read("Q"), ctx.read("K")
    ctx.write("O", (Q @ K.T) @ K)


def test_proposition3_fails_for_a_schedule_that_ignores_sram(paper_a100):
    algo = Algorithm("one-pass", one_pass, None, "reads every input once, whatever M is")
    report = check_bounds(paper_a100, [algo], ["proposition3-lower", "compulsory"], **SMALL)
    lower, compulsory = report.verdicts
    assert not lower.holds and "falls below" in lower.reason
    assert compulsory.holds


def test_compulsory_fails_when_an_input_is_not_read(paper_a100):
    algo = Algorithm("skips-v", skips_v, None, "never reads V")
    report = check_bounds(paper_a100, [algo], ["compulsory"], **SMALL)
    assert not report.holds
    assert "V read 0" in report.verdicts[0].reason


def test_regime_is_reported_not_used(paper_a100):
    report = check_bounds(paper_a100, ["fa1"], ["theorem2-flash"], seq_lens=[1024], head_dims=[64],
                          sram=[32, 1024, 8192, 10**6], jobs=1)
    outside = sorted(e["M"] for e in report.excluded if e["algorithm"] is None)
    assert outside == [32, 10**6]
    assert {p.M for p in report.points} == {1024, 8192}
    with pytest.raises(ProblemError, match="regime"):
        check_bounds(paper_a100, ["fa1"], seq_lens=[1024], head_dims=[64], sram=[10**7], jobs=1)


def test_a_claim_the_sweep_cannot_judge(paper_a100):
    # N·d < d²: no point has M ≥ d², where proposition3-lower is judged.
    report = check_bounds(paper_a100, ["fa1"], seq_lens=[64], head_dims=[128], jobs=1)
    assert [s["id"] for s in report.skipped] == ["proposition3-lower"]
    assert "not judged" in render_bounds(report)
    with pytest.raises(ProblemError, match="M ≥ d²"):
        check_bounds(paper_a100, ["fa1"], ["proposition3-lower"], seq_lens=[64], head_dims=[128], jobs=1)


def test_tiles_that_do_not_fit_are_excluded(paper_a100):
    report = check_bounds(paper_a100, ["fa2"], ["theorem2-flash"], seq_lens=[1024], head_dims=[64], jobs=1)
    tight = [e for e in report.excluded if e["algorithm"] == "fa2"]
    assert {e["M"] for e in tight} == {64, 128}               # Q_i + K_j + V_j need 3d elements
    assert all(p.M >= 3 * 64 for p in report.feasible("fa2"))


def test_fit_exponents():
    pts = [(n, d, m) for n in (256, 1024, 4096) for d in (32, 64) for m in (2048, 8192, 32768)]
    e = fit_exponents(pts, [n * n * d * d / m for n, d, m in pts])
    assert e == pytest.approx({"N": 2, "d": 2, "M": -1})
    e = fit_exponents([(n, 64, 4096) for n in (256, 512, 1024)], [n ** 1.5 for n in (256, 512, 1024)])
    assert e["N"] == pytest.approx(1.5) and e["d"] is None and e["M"] is None


def test_parallel_equals_serial(paper_a100, monkeypatch):
    monkeypatch.setattr("iosim.studies.progress.MIN_ITEMS_PER_JOB", 1)
    kw = dict(seq_lens=[512, 2048], head_dims=[64])
    a = check_bounds(paper_a100, ["fa1", "fa2"], jobs=1, **kw)
    b = check_bounds(paper_a100, ["fa1", "fa2"], jobs=2, **kw)
    assert [p.to_dict() for p in a.points] == [p.to_dict() for p in b.points]


# -- CLI ----------------------------------------------------------------------------------
CLI = ["bounds", "--hw", "fa-paper-a100", "-N", "512:4k", "-d", "32,64", "--jobs", "1"]


@pytest.mark.parametrize("args,code", [
    (["--algo", "standard", "--claim", "theorem2-flash"], 1),
    (["--algo", "row-by-row", "--claim", "theorem2-flash"], 1),
    (["--algo", "fa2", "--claim", "theorem2-flash"], 1),
    (["--algo", "fa2", "--claim", "theorem2-flash", "--block-rule", "outer"], 0),
    (["--algo", "fa1,standard"], 0),
    (["--algo", "fa1", "--sram", "10000000"], 2),            # nothing in d ≤ M ≤ N·d
    (["--algo", "fa1", "--sram", "64", "--sram-steps", "4"], 2),
    (["--algo", "fa1", "--plot", "out.pdf"], 2),
    (["--algo", "fa1", "--hw", "no-such-gpu"], 2),
])
def test_cli_exit_codes(args, code, capsys):
    assert main(CLI + args) == code


def test_cli_bad_arguments_exit_2(capsys):
    for args in (["--algo", "fa9"], ["--algo", "fa1", "--claim", "theorem9"], ["--algo", "fa1", "-N", "8:4"]):
        with pytest.raises(SystemExit) as exc:
            main(CLI + args)
        assert exc.value.code == 2


def test_cli_json_contract(capsys):
    assert main(CLI + ["--algo", "standard", "--claim", "theorem2-flash", "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    claim = out["claims"][0]
    for key in ("id", "expression", "holds", "ratio_min", "ratio_max", "exponents", "rule"):
        assert key in claim
    assert set(claim["exponents"]) == {"N", "d", "M"}
    assert claim["id"] == "theorem2-flash" and claim["holds"] is False
    assert out["holds"] is False and out["points"] and out["excluded"] is not None


def test_cli_table_states_the_rule(capsys):
    main(CLI + ["--algo", "fa1"])
    out = capsys.readouterr().out
    assert "verdict rules:" in out and CLAIMS["theorem2-flash"].rule in out and "HOLDS" in out


# -- plots and progress -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bounds.png", "bounds.svg"])
def test_plot_written(tmp_path, name, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / name
    assert main(CLI + ["--algo", "standard,fa1,fa2,row-by-row", "--plot", str(path)]) == 1
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG") if name.endswith(".png") else b"<svg" in data[:2000]


@pytest.mark.parametrize("where,message", [
    ("{tmp}", "the file must end in .png or .svg"),
    ("", "the file must end in .png or .svg"),
    ("{tmp}/none/x.png", "does not exist"),
    ("{tmp}/folder.png", "is a folder"),
    ("/proc/iosim-test.png", "cannot write it"),
])
def test_a_plot_path_that_cannot_be_written_is_refused_before_the_sweep(tmp_path, capsys, monkeypatch, where,
                                                                         message):
    pytest.importorskip("matplotlib")
    (tmp_path / "folder.png").mkdir()
    monkeypatch.setattr("iosim.cli.bounds_command.check_bounds",
                        lambda *a, **k: pytest.fail("the sweep ran before the path was checked"))
    assert main(CLI + ["--algo", "fa1", "--plot", where.format(tmp=tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.png"]     # nothing left behind


def test_missing_matplotlib_is_a_dependency_error(tmp_path, monkeypatch, capsys):
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    from iosim.report.plots import require_matplotlib

    with pytest.raises(DependencyError, match="pip install"):
        require_matplotlib()
    assert main(CLI + ["--algo", "fa1", "--plot", str(tmp_path / "x.png")]) == 2
    assert "pip install" in capsys.readouterr().err


def test_progress_quiet_off_a_terminal():
    stream = io.StringIO()                      # not a TTY
    assert progress_map(math.isqrt, [4, 9, 16], stream=stream) == [2, 3, 4]
    assert stream.getvalue() == ""


def test_progress_bar_draws_when_enabled():
    stream = io.StringIO()
    with ProgressBar(3, "sweep", stream=stream, delay_s=0, enabled=True) as bar:
        for _ in range(3):
            bar.update()
    assert "sweep [" in stream.getvalue() and "3/3" in stream.getvalue()


def test_csv_has_a_row_per_simulated_point(capsys):
    main(CLI + ["--algo", "fa1,fa2", "--format", "json"])
    points = json.loads(capsys.readouterr().out)["points"]
    main(CLI + ["--algo", "fa1,fa2", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == len(points) > 0
    assert [(r["algorithm"], int(r["N"]), int(r["d"]), int(r["M"]), int(r["count_elements"])) for r in rows] == \
        [(p["algorithm"], p["N"], p["d"], p["M"], p["count_elements"]) for p in points]
    assert len({r["profile"] for r in rows}) == 1
