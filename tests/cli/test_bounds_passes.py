"""`iosim bounds`: a claim is judged on the pass it is about (QA item 1).

Theorem 5 is about the backward pass: asked of a forward algorithm with a backward
(fa1, fa2, standard) it is judged on that algorithm's backward counts (fa1-backward, …),
said in the verdict's note; asked of one without (row-by-row, fa1-block-sparse, a schedule
of one's own) it is refused, exit 2. Theorem 2 asked of a backward algorithm is judged on
its forward pass the same way.
"""

import json

import pytest

from iosim.cli.main import main
from iosim.errors import ProblemError
from iosim.studies.bounds import ALGORITHMS, CLAIMS, check_bounds
from iosim.studies.bounds.claims import counted_on, judged_pairs

SWEEP = {"seq_lens": [256, 512], "head_dims": [16, 32], "jobs": 1}
CLI = ["bounds", "--hw", "fa-paper-a100", "-N", "256,512", "-d", "16,32", "--jobs", "1"]


def test_every_claim_names_its_pass():
    assert {c.id: c.passes for c in CLAIMS.values()} == {
        "theorem2-standard": "forward", "theorem2-flash": "forward", "proposition3-lower": "forward",
        "compulsory": None, "theorem5-standard-backward": "backward", "theorem5-flash-backward": "backward",
        "proposition4-block-sparse": "forward"}


@pytest.mark.parametrize("asked,judged", [("fa1", "fa1-backward"), ("fa2", "fa2-backward"),
                                          ("standard", "standard-backward"), ("fa1-backward", "fa1-backward")])
def test_a_backward_claim_is_judged_on_the_backward_pass(asked, judged):
    assert counted_on(CLAIMS["theorem5-flash-backward"], ALGORITHMS[asked]) is ALGORITHMS[judged]


@pytest.mark.parametrize("asked,judged", [("fa1-backward", "fa1"), ("fa2-backward", "fa2"),
                                          ("standard-backward", "standard"), ("row-by-row", "row-by-row")])
def test_a_forward_claim_is_judged_on_the_forward_pass(asked, judged):
    assert counted_on(CLAIMS["theorem2-flash"], ALGORITHMS[asked]) is ALGORITHMS[judged]


def test_compulsory_is_judged_on_the_pass_that_runs():
    for name, algorithm in ALGORITHMS.items():
        assert counted_on(CLAIMS["compulsory"], algorithm) is algorithm, name


def test_fa1_theorem5_counts_the_backward_pass():
    """The QA case: fa1 + theorem5-flash-backward held on fa1's *forward* counts."""
    report = check_bounds("fa-paper-a100", ["fa1"], ["theorem5-flash-backward"], **SWEEP)
    (v,) = report.verdicts
    assert v.algorithm == "fa1-backward" and report.algorithms == ["fa1-backward"]
    assert {p.passes for p in report.points} == {"backward"}
    assert v.notes[0].startswith("theorem5-flash-backward is about the backward pass: judged on the counts of "
                                 "fa1-backward") and "goes with fa1" in v.notes[0]
    direct = check_bounds("fa-paper-a100", ["fa1-backward"], ["theorem5-flash-backward"], **SWEEP)
    assert [p.count for p in report.points] == [p.count for p in direct.points]
    assert (v.holds, v.ratio_min, v.ratio_max) == (direct.verdicts[0].holds, direct.verdicts[0].ratio_min,
                                                   direct.verdicts[0].ratio_max)
    assert direct.verdicts[0].notes == []       # asked of the backward algorithm itself: nothing to say


def test_mixed_claims_judge_each_on_its_own_pass():
    pairs = judged_pairs([ALGORITHMS["fa1"]], ["theorem5-flash-backward", "compulsory", "theorem2-flash"])
    assert [(c, a.name, j.name) for c, a, j in pairs] == [
        ("theorem5-flash-backward", "fa1", "fa1-backward"), ("compulsory", "fa1", "fa1"),
        ("theorem2-flash", "fa1", "fa1")]
    # asked of fa1 and of fa1-backward: one verdict, not two
    pairs = judged_pairs([ALGORITHMS["fa1"], ALGORITHMS["fa1-backward"]], ["theorem5-flash-backward"])
    assert len(pairs) == 1


def test_cli_fa1_holds_and_standard_fails_on_the_backward_pass(capsys):
    assert main(CLI + ["--algo", "fa1", "--claim", "theorem5-flash-backward", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(c["id"], c["algorithm"], c["holds"]) for c in data["claims"]] == [
        ("theorem5-flash-backward", "fa1-backward", True)]
    assert data["algorithms"] == ["fa1-backward"] and "backward pass" in data["claims"][0]["notes"][0]
    # standard's backward (Algorithm 3) is not Θ(N²d²/M): it fails — on the backward counts
    assert main(CLI + ["--algo", "standard", "--claim", "theorem5-flash-backward"]) == 1
    out = capsys.readouterr().out
    assert "theorem5-flash-backward  standard-backward" in out and "FAILS" in out
    assert "judged on the counts of standard-backward" in out


@pytest.mark.parametrize("algo,why", [
    ("row-by-row", "row-by-row (FA2's loop order with B_r = 1: K, V re-read per query row) is counted on its "
                   "forward pass only"),
    ("fa1-block-sparse", "fa1-block-sparse (Algorithm 5: FA1 over a random:0.25 block mask) is counted on its "
                         "forward pass only"),
])
def test_cli_refuses_a_backward_claim_without_a_backward(capsys, algo, why):
    assert main(CLI + ["--algo", algo, "--claim", "theorem5-flash-backward"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"iosim: error: theorem5-flash-backward is about the backward pass, and {why}: ask it of " \
           "standard-backward, fa1-backward, fa2-backward (or standard, fa1, fa2, judged on their backward " \
           "passes)" in err


def test_cli_refuses_a_backward_claim_for_a_schedule_of_ones_own(tmp_path, capsys):
    (tmp_path / "mine.py").write_text("from iosim.schedules.fa2 import fa2_forward as mine\n")
    assert main(CLI + ["--algo", f"{tmp_path}/mine.py:mine", "--claim", "theorem5-standard-backward"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}/mine.py:mine (a schedule of your own) is counted forward only" in err


def test_api_refuses_a_forward_claim_for_a_backward_algorithm_without_a_forward():
    from iosim.studies.bounds import Algorithm

    backward_only = Algorithm("mine-backward", "fa2", "kv", "a backward pass", passes="backward")
    with pytest.raises(ProblemError, match="theorem2-flash is about the forward pass, and mine-backward"):
        check_bounds("fa-paper-a100", [backward_only], ["theorem2-flash"], **SWEEP)
