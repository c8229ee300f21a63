"""`iosim grade`: solutions pass, starters fail with hints, cheats fail for their reason,
and nothing a submission does (raise, crash, loop, eat memory) takes the grader down."""

import json
import pathlib
import time

import pytest

from conftest import statuses, submission
from iosim import Problem, simulate
from iosim.cli.main import main
from iosim.grading import ASSIGNMENTS as SPECS, GradingInputError, grade

ROOT = pathlib.Path(__file__).resolve().parents[2]
ASSIGNMENTS = ROOT / "examples" / "assignments"
INSTRUCTOR = ASSIGNMENTS / "instructor"
CHEATS = INSTRUCTOR / "cheats"


# -- instructor solutions and starters ------------------------------------------------------
@pytest.mark.parametrize("file,assignment,checks", [
    ("fa1_solution.py", "fa1", ["loads", "runs", "exactness", "capacity", "io"]),
    ("fa2_solution.py", "fa2", ["loads", "runs", "exactness", "capacity", "io", "answer"]),
    ("blocks_solution.py", "blocks", ["loads", "runs", "capacity", "io", "answer"]),
])
def test_instructor_solution_passes(file, assignment, checks):
    report = grade(INSTRUCTOR / file, seed=0)
    assert report.assignment == assignment  # recognised from the function it defines
    assert [c.name for c in report.checks] == checks
    assert report.passed, report.render()
    assert report.exit_code == 0


def test_fa2_starter_fails_with_hints():
    report = grade(ASSIGNMENTS / "fa2-forward" / "fa2_forward.py", seed=0)
    assert statuses(report) == {"loads": "pass", "runs": "pass", "exactness": "fail", "capacity": "fail",
                                "io": "fail", "answer": "fail"}
    assert report.check("capacity").detail.startswith("not credited:")       # it writes zeros
    assert report.score == 40
    assert "all zeros" in report.check("exactness").hint
    assert "K is never read" in report.check("io").hint and "once per query block" in report.check("io").hint
    assert "two sentences" in report.check("answer").hint
    assert report.exit_code == 1


def test_fa1_starter_fails_with_hints():
    report = grade(ASSIGNMENTS / "fa1-forward" / "fa1_forward.py", seed=0)
    assert statuses(report) == {"loads": "pass", "runs": "pass", "exactness": "fail", "capacity": "fail",
                                "io": "fail"}
    assert report.check("capacity").detail.startswith("not credited:")
    assert "never reached HBM" in report.check("exactness").hint
    assert "Q is never read" in report.check("io").hint


def test_blocks_starter_fails_with_hints():
    report = grade(ASSIGNMENTS / "choose-blocks" / "choose_blocks.py", seed=0)
    assert statuses(report) == {"loads": "pass", "runs": "pass", "capacity": "pass", "io": "fail", "answer": "fail"}
    io = report.check("io")
    assert "128×227" in io.detail and "the band is 10%" in io.detail   # the paper's default on h100
    assert "T_r = ⌈N/B_r⌉" in io.hint and "iosim explore" in io.hint


def test_blocks_that_do_not_fit_fail_capacity(tmp_path):
    path = submission(tmp_path, """
        JUSTIFICATION = "Taller query blocks mean fewer passes over K and V. So B_r is as large as it gets here."
        def choose_blocks(hw, problem):
            return (1024, 64)
    """)
    report = grade(path, seed=0)
    assert statuses(report) == {"loads": "pass", "runs": "pass", "capacity": "fail", "io": "fail", "answer": "pass"}
    assert "1024×64" in report.check("capacity").detail and "do not fit" in report.check("capacity").detail
    assert report.check("io").detail.startswith("not judged: no choice fits on chip")


def test_blocks_bad_return_value(tmp_path):
    path = submission(tmp_path, "def choose_blocks(hw, problem):\n    return 'big'\n")
    runs = grade(path, seed=0).check("runs")
    assert runs.status == "fail" and "returned 'big', not two positive integers" in runs.detail


def test_fa1_forgetting_line_2_gets_the_init_hint(tmp_path):
    source = (INSTRUCTOR / "fa1_solution.py").read_text()
    path = submission(tmp_path, source.replace('    ctx.init("O", 0.0)', '    pass  # ctx.init("O", 0.0)'))
    report = grade(path, seed=0)
    runs = report.check("runs")
    assert runs.status == "fail" and "read before anything was written" in runs.detail
    assert "ctx.init('O', 0.0)" in runs.hint


@pytest.mark.parametrize("name", ["fa1", "fa2"])
def test_a_built_in_schedule_passes_through_the_stand_in_ctx(tmp_path, name):
    # iosim's own schedules use ctx.mask_info, ctx.watch (and ctx.thread_block): the stand-ins
    # must behave like the engine's, and counts through the grader equal the direct ones. The
    # sandbox hides iosim.schedules from a submission (tests/cli/redteam/import_builtin_schedule.py),
    # so the schedule's own source is submitted, its relative imports made absolute.
    source = (ROOT / "iosim" / "schedules" / f"{name}.py").read_text().replace("from ..", "from iosim.")
    path = submission(tmp_path, source)
    report = grade(path, name, seed=1)
    assert all(report.check(c).passed for c in ("runs", "exactness", "capacity", "io")), report.render()


# -- cheating schedules ---------------------------------------------------------------------
@pytest.mark.parametrize("cheat,expected", [
    ("whole_matrix", {"runs": "pass", "exactness": "fail", "capacity": "fail", "io": "fail"}),
    # not attention on the ordinary inputs: its tiles and bytes, FA2's, are not credited (session 48)
    ("no_rescale", {"runs": "pass", "exactness": "fail", "capacity": "fail", "io": "fail"}),
    ("no_max", {"runs": "pass", "exactness": "fail", "capacity": "pass", "io": "pass"}),
    ("extra_traffic", {"runs": "pass", "exactness": "pass", "capacity": "pass", "io": "fail"}),
    ("row_of_scores", {"runs": "pass", "exactness": "fail", "capacity": "fail", "io": "fail"}),
])
def test_cheat_fails_for_its_reason(cheat, expected):
    report = grade(CHEATS / f"{cheat}.py", seed=0)
    got = statuses(report)
    assert {k: got[k] for k in expected} == expected, report.render()
    assert report.exit_code == 1
    if cheat == "no_rescale":
        for name in ("capacity", "io"):
            assert report.check(name).detail.startswith("not credited: the outputs are not attention's on 5 of the "
                                                        "ordinary inputs"), report.check(name).detail
        assert "HBM traffic equals FlashAttention-2 Algorithm 1's" in report.check("io").detail
    if cheat in ("whole_matrix", "row_of_scores"):  # stopped on every input: nothing else can be judged
        for name in ("exactness", "io"):
            assert report.check(name).detail.startswith("not judged: input 'square N=128, 2 heads' stopped at the "
                                                        "capacity check"), report.check(name).detail
    if cheat == "whole_matrix":
        assert "whole tensor, ctx.read" in report.check("capacity").detail
        assert "ctx.read brings a whole tensor on chip" in report.check("capacity").hint
    if cheat == "no_rescale":
        assert "e^{m − m_new}" in report.check("exactness").hint
    if cheat == "no_max":  # exact on ordinary scores; only the large-score inputs catch it
        failing = {c["input"] for c in report.check("exactness").cases if not c["ok"]}
        large = {c.name for c in SPECS["fa2"].cases if c.adversarial or c.score_scale > 1}
        assert failing == large
        assert "overflow" in report.check("exactness").hint
    if cheat == "extra_traffic":
        assert "Q read" in report.check("io").detail and "Q is read 4.00×" in report.check("io").hint
    if cheat == "row_of_scores":
        assert "after the loop iteration that held it" in report.check("capacity").detail


def test_peek_cannot_reach_the_grader_state():
    report = grade(CHEATS / "peek.py", seed=0)
    lines = [line for line in report.output.splitlines() if line.startswith("peek found:")]
    assert lines and all(line == "peek found: []" for line in lines), report.output
    assert report.check("exactness").status == "fail"


def test_peek_would_find_the_state_in_process(capsys):
    # The same search, run in this process as a plain simulate, finds the engine's state:
    # under the grader it finds nothing because the state is not in the student's process.
    from conftest import load_module

    peek = load_module("peek", CHEATS / "peek.py")
    simulate("toy", peek.fa2_forward, Problem(seq_len=32, head_dim=32), mode="numeric")
    out = capsys.readouterr().out
    assert "Context.hbm" in out and "Tile.data" in out


def test_tile_values_are_not_visible(tmp_path):
    path = submission(tmp_path, """
        def fa2_forward(ctx):
            for i in ctx.q_blocks():
                ctx.load("Q", i).data
    """)
    runs = grade(path, seed=0).check("runs")
    assert runs.status == "fail" and "tile values stay in the grader's process" in runs.detail


# -- safety ---------------------------------------------------------------------------------
def test_exception(tmp_path):
    path = submission(tmp_path, """
        def fa2_forward(ctx):
            for i in ctx.q_blocks():
                raise ValueError(f"boom in block {i.index}")
    """)
    runs = grade(path, seed=0).check("runs")
    assert runs.status == "fail"
    assert "exception: ValueError: boom in block 0" in runs.detail and "line 4" in runs.detail


@pytest.mark.parametrize("body,reason", [
    ("import os\ndef fa2_forward(ctx):\n    os._exit(3)\n", "exited with code 3"),
    ("import ctypes\ndef fa2_forward(ctx):\n    ctypes.string_at(0)\n", "killed by SIGSEGV"),
])
def test_crash(tmp_path, body, reason):
    report = grade(submission(tmp_path, body), seed=0)
    runs = report.check("runs")
    assert runs.status == "fail" and "crash" in runs.detail and reason in runs.detail
    assert f"{len(SPECS['fa2'].cases) - 1} input(s) not run" in runs.detail and "died" in runs.hint
    for name in ("exactness", "capacity", "io"):  # all or nothing: nothing else can be judged either
        assert report.check(name).status == "fail" and report.check(name).detail.startswith("not judged: ")


def test_endless_loop(tmp_path, monkeypatch):
    monkeypatch.setattr("iosim.grading.grader.MIN_TIMEOUT_S", 1.0)  # 20 s by default; quicker to reach 4
    path = submission(tmp_path, """
        def fa2_forward(ctx):
            while True:
                pass
    """)
    start = time.monotonic()
    runs = grade(path, seed=0, timeout_s=4).check("runs")
    assert time.monotonic() - start < 30
    assert runs.status == "fail" and "timeout" in runs.detail and "endless loop" in runs.hint


def test_memory_bomb(tmp_path):
    path = submission(tmp_path, """
        def fa2_forward(ctx):
            hog = []
            while True:
                hog.append(bytearray(1 << 30))   # a GiB at a time, until something stops it
    """)
    report = grade(path, seed=0, memory_mb=512)
    runs = report.check("runs")
    assert runs.status == "fail" and "memory: MemoryError" in runs.detail and "512 MiB" in runs.hint


def test_hoarding_tiles_cannot_exhaust_the_grader(tmp_path, monkeypatch):
    monkeypatch.setattr("iosim.grading.server.TILE_BYTES_LIMIT", 1 << 20)  # 64 MiB by default; faster to reach 1
    path = submission(tmp_path, """
        def fa2_forward(ctx):
            for i in ctx.q_blocks():
                Q_i = ctx.load("Q", i)
                hoard = []
                while True:                  # views of a resident tile are not charged on chip
                    hoard.append(Q_i.T)      # (temporaries are), but each is data in the grader
    """)
    runs = grade(path, seed=0).check("runs")
    assert runs.status == "fail" and "more than 1,048,576 bytes of tiles" in runs.detail


def test_writing_to_the_grader_connection(tmp_path):
    path = submission(tmp_path, """
        def fa2_forward(ctx):
            ctx._link.channel.sock.sendall(b"not json\\n")
            for i in ctx.q_blocks():
                pass
    """)
    runs = grade(path, seed=0).check("runs")
    assert runs.status == "fail" and "protocol" in runs.detail


# -- bad input and the CLI --------------------------------------------------------------------
def test_missing_file_is_bad_input(tmp_path, capsys):
    assert main(["grade", str(tmp_path / "nope.py")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_file_without_the_function_is_bad_input(tmp_path, capsys):
    path = submission(tmp_path, "def forward(ctx):\n    pass\n")
    assert main(["grade", str(path)]) == 2
    assert "none of the graded functions" in capsys.readouterr().err
    assert main(["grade", str(path), "--assignment", "fa2"]) == 2
    assert "does not define fa2_forward(ctx)" in capsys.readouterr().err
    with pytest.raises(GradingInputError):
        grade(INSTRUCTOR / "fa1_solution.py", "fa2")


def test_syntax_error_is_a_failing_grade(tmp_path):
    path = submission(tmp_path, "def fa2_forward(ctx)\n    pass\n")
    report = grade(path, seed=0)
    assert report.check("loads").status == "fail" and "SyntaxError" in report.check("loads").detail
    assert report.exit_code == 1


def test_import_error_is_a_failing_grade(tmp_path):
    path = submission(tmp_path, "import no_such_module_here\ndef fa2_forward(ctx):\n    pass\n")
    loads = grade(path, seed=0).check("loads")
    assert loads.status == "fail" and "ModuleNotFoundError" in loads.detail and "line 1" in loads.detail


def test_cli_json(capsys):
    assert main(["grade", str(CHEATS / "whole_matrix.py"), "--seed", "0", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] is False and data["assignment"] == "fa2" and data["seed"] == 0
    assert [c["status"] for c in data["checks"]] == ["pass", "pass", "fail", "fail", "fail", "fail"]
    capacity = next(c for c in data["checks"] if c["name"] == "capacity")
    assert [c["status"] for c in capacity["cases"]] == ["capacity"] * len(SPECS["fa2"].cases)
    assert main(["grade", str(INSTRUCTOR / "blocks_solution.py"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True


def test_cli_exit_1_prints_hints(capsys):
    assert main(["grade", str(CHEATS / "extra_traffic.py"), "--seed", "0"]) == 1
    out = capsys.readouterr().out
    assert "PASS  exactness" in out and "FAIL  io" in out and "hint:" in out
    # io fails: 4 of the 5 scored checks; the written answer is missing too (a check, not scored)
    assert "result: FAIL (4/6 checks pass; score 80/100; failed: io, answer (unscored))" in out
