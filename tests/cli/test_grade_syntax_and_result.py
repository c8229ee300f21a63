"""`iosim grade`: a file that does not parse is graded with its SyntaxError and line,
whether or not its text shows the graded function (QA item 2); the result line names the
checks that failed, an unscored one as such (QA item 3)."""

import csv
import io
import json
import pathlib
import re

from conftest import submission
from iosim.cli.main import main
from iosim.grading import grade
from iosim.grading.feedback import Check, GradeReport

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "examples" / "assignments" / "instructor" / "fa2_solution.py"

NOT_PYTHON = "this is not python(\n"                                         # no def at all
BROKEN_LATER = "def fa2_forward(ctx):\n    pass\n\nx = (\n"                 # a def, then a syntax error


def test_not_python_is_graded_like_a_later_syntax_error(tmp_path, capsys):
    """Both report the SyntaxError with its line in the `loads` check, exit 1."""
    for body, line in ((NOT_PYTHON, 1), (BROKEN_LATER, 4)):
        path = submission(tmp_path, body)
        assert main(["grade", str(path), "--assignment", "fa2", "--seed", "0"]) == 1
        out = capsys.readouterr().out
        assert re.search(rf"^FAIL  loads +loading the file failed: SyntaxError: .* \(line {line}\)$", out, re.M), out
        assert "does not define" not in out
        report = grade(path, "fa2", seed=0)
        loads = report.check("loads")
        assert loads.status == "fail" and "SyntaxError" in loads.detail and f"line {line}" in loads.detail


def test_not_python_in_a_class_has_the_syntax_error_as_its_reason(tmp_path, capsys):
    klass = tmp_path / "class"
    klass.mkdir()
    (klass / "ann.py").write_text(NOT_PYTHON)
    (klass / "ben.py").write_text(BROKEN_LATER)
    book = tmp_path / "gradebook.csv"
    assert main(["grade", str(klass), "--assignment", "fa2", "--jobs", "1", "--csv", str(book)]) == 0
    capsys.readouterr()
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(book.read_text()))}
    for student, line in (("ann", 1), ("ben", 4)):
        assert rows[student]["reason"].startswith("loads: loading the file failed: SyntaxError: "), rows[student]
        assert rows[student]["reason"].endswith(f"(line {line})") and rows[student]["loads"] == "fail"


def test_not_python_without_an_assignment_names_the_syntax_error(tmp_path, capsys):
    """Without --assignment nothing tells which assignment it is (exit 2), and the message
    says why the file could not be read for its function."""
    path = submission(tmp_path, NOT_PYTHON)
    assert main(["grade", str(path)]) == 2
    err = capsys.readouterr().err
    assert "does not parse — SyntaxError: '(' was never closed (line 1) — and defines none of the graded " \
           "functions" in err and "--assignment" in err


# -- the result line ---------------------------------------------------------------------------
def test_correct_solution_without_the_answer_names_the_unscored_check(tmp_path, capsys):
    """5 of 6 checks pass and the score is 100: the FAIL says which check it is."""
    text = re.sub(r'WHY_TRAFFIC_DIFFERS = """.*?"""\n', "", SOLUTION.read_text(), flags=re.S)
    assert "WHY_TRAFFIC_DIFFERS" not in text
    path = submission(tmp_path, text)
    assert main(["grade", str(path), "--seed", "0"]) == 1
    out = capsys.readouterr().out
    assert out.rstrip().endswith("result: FAIL (5/6 checks pass; score 100/100; failed: answer (unscored))")
    assert main(["grade", str(path), "--seed", "0", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] is False and data["score"] == 100


def test_result_line_forms():
    def report(statuses, weights=None, assignment="fa2"):
        checks = [Check(name, status, "") for name, status in statuses.items()]
        return GradeReport("f.py", assignment, "t", "s", checks, weights=weights)

    everything = {"loads": "pass", "runs": "pass", "exactness": "pass", "capacity": "pass", "io": "pass"}
    assert report({**everything, "answer": "pass"}).result_line() == "result: PASS (6/6 checks pass; score 100/100)"
    assert report({**everything, "io": "fail", "answer": "fail"}).result_line() == \
        "result: FAIL (4/6 checks pass; score 80/100; failed: io, answer (unscored))"
    # a check the manifest weighs 0 counts for nothing: unscored too
    weights = {"loads": 1, "runs": 1, "exactness": 1, "capacity": 1, "io": 0}
    assert report({**everything, "io": "fail"}, weights).result_line() == \
        "result: FAIL (4/5 checks pass; score 100/100; failed: io (unscored))"
