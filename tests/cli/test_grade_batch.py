"""Grading a class (issue 15): `iosim grade DIR` grades every submission under a folder, a
student each, in parallel, into a gradebook (table, JSON, CSV), and every report has a
numeric score, also when the submission cannot be graded."""

import csv
import io
import json
import pathlib

import pytest

from iosim.cli.main import main
from iosim.grading.batch import submissions

ROOT = pathlib.Path(__file__).resolve().parents[2]
INSTRUCTOR = ROOT / "examples" / "assignments" / "instructor"
CLASS = {
    "alice/fa2.py": (INSTRUCTOR / "fa2_solution.py").read_text(),              # correct
    "bob/fa2.py": (INSTRUCTOR / "cheats" / "no_rescale.py").read_text(),       # wrong: not attention
    "fred/fa2.py": (INSTRUCTOR / "cheats" / "no_max.py").read_text(),          # wrong on large scores only
    "carol.py": "def fa2_forward(ctx):\n    raise RuntimeError('boom')\n",     # crashes
    "dave.py": "x = 1\n",                                                      # no graded function
    "erin.py": "def fa2_forward(ctx:\n",                                       # does not parse
}
#: student -> (score, verdicts of loads, runs, exactness, capacity, io)
EXPECTED = {
    "alice/fa2": (100.0, ["pass"] * 5),
    "bob/fa2": (40.0, ["pass", "pass", "fail", "fail", "fail"]),   # its FA2 tiles and bytes not credited
    "fred/fa2": (80.0, ["pass", "pass", "fail", "pass", "pass"]),
    "carol": (20.0, ["pass", "fail", "fail", "fail", "fail"]),
    "dave": (0.0, [""] * 5),
    "erin": (0.0, ["fail", "", "", "", ""]),
}


@pytest.fixture
def klass(tmp_path):
    for name, text in CLASS.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "x.py").write_text("")
    return tmp_path


def test_a_folder_is_graded_into_a_gradebook(klass, tmp_path_factory, capsys):
    book = tmp_path_factory.mktemp("out") / "gradebook.csv"
    assert main(["grade", str(klass), "--assignment", "fa2", "--jobs", "2", "--seed", "1", "--csv", str(book),
                 "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["student"]: r for r in data["gradebook"]}
    assert list(rows) == sorted(EXPECTED)
    table = {r["student"]: r for r in csv.DictReader(io.StringIO(book.read_text()))}
    for student, (score, verdicts) in EXPECTED.items():
        assert rows[student]["score"] == score, student
        got = [table[student][c] for c in ("loads", "runs", "exactness", "capacity", "io")]
        assert (float(table[student]["score"]), got) == (score, verdicts), student
    assert table["dave"]["reason"].startswith("not graded:") and "fa2_forward" in table["dave"]["reason"]
    assert table["bob/fa2"]["reason"].startswith("exactness:")
    reports = {pathlib.Path(r["file"]).name: r for r in data["reports"] if r}
    assert reports["fa2.py"]["score"] in (100.0, 40.0, 80.0) and len(data["reports"]) == 6


def test_a_generated_class_in_one_command(tmp_path, capsys):
    """benchmarks/grade_class.py's generated class (correct, wrong, cheating, crashing), 12
    students here (its 100-student run takes minutes: docs/performance.md): one command,
    a gradebook row each, every verdict what its kind must get."""
    from conftest import load_module
    bench = load_module("grade_class", ROOT / "benchmarks" / "grade_class.py")
    (tmp_path / "class").mkdir()
    kinds = bench.make_class(tmp_path / "class", 12)
    assert sorted(kinds.values()) == sorted(["correct", "wrong", "cheat", "crash"] * 3)
    book = tmp_path / "gradebook.csv"
    assert main(["grade", str(tmp_path / "class"), "--assignment", "fa2", "--jobs", "2", "--csv", str(book)]) == 0
    capsys.readouterr()
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(book.read_text()))}
    assert len(rows) == 12 and bench.wrong_verdicts(kinds, rows) == []
    assert bench.wrong_verdicts(kinds, {**rows, "student001": {**rows["student001"], "score": "100"}})


def test_the_text_gradebook_and_one_file_as_before(klass, capsys):
    assert main(["grade", str(klass / "alice"), str(klass / "carol.py"), "--assignment", "fa2", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "alice/fa2" not in out and out.splitlines()[1].split()[:3] == ["fa2", "fa2", "100"]   # named below its folder
    assert "2 submissions, mean score 60.0, 1 pass every check" in out
    assert main(["grade", str(klass / "carol.py"), "--seed", "1"]) == 1                   # one file: its report
    assert "score 20/100" in capsys.readouterr().out


def test_an_ungradable_file_still_has_a_json_report(klass, capsys):
    assert main(["grade", str(klass / "dave.py"), "--format", "json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["score"] == 0.0 and data["graded"] is False and "fa2_forward" in data["error"]


def test_bad_class_arguments_fail_before_any_grade(klass, tmp_path_factory, capsys):
    assert main(["grade", str(klass / "nobody")]) == 2
    assert "no such file" in capsys.readouterr().err
    empty = tmp_path_factory.mktemp("empty")
    assert main(["grade", str(empty)]) == 2
    assert "no submissions" in capsys.readouterr().err
    assert main(["grade", str(klass), "--csv", str(klass / "missing" / "book.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert [s for s, _ in submissions([klass])] == sorted(EXPECTED)


def test_the_gradebook_shows_no_terminal_controls():
    """A student's exception message is printed in the gradebook: its escape sequences and
    bidi overrides are shown as '?', so it cannot repaint another student's line."""
    from iosim.grading.batch import GradebookRow, gradebook_table

    row = GradebookRow("mallory", "m.py", 20.0, {"loads": "pass", "runs": "fail"},
                       "runs: RuntimeError: \x1b[1A\x1b[2K alice 0\u202e\nmore")
    table = gradebook_table([row])
    assert "\x1b" not in table and "\u202e" not in table and "?[1A?[2K alice 0?" in table
    assert len(table.splitlines()) == 4          # header, the row, a blank line, the summary
