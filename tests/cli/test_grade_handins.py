"""What a class hands in (a red-team pass, session 37): a symbolic link is never graded (it could
point at the instructor's solution or another student's file), a class graded without
``--assignment`` says which assignment each file was graded as, and a check's detail the
submission wrote cannot pass for a check line or the result in the text report."""

import csv
import io
import json
import pathlib

from iosim.cli.main import main
from iosim.grading.batch import submissions
from iosim.grading.feedback import Check, GradeReport

ROOT = pathlib.Path(__file__).resolve().parents[2]
INSTRUCTOR = ROOT / "examples" / "assignments" / "instructor"


def test_a_linked_file_or_folder_in_a_class_is_not_graded(tmp_path, capsys):
    klass = tmp_path / "class"
    (klass / "alice").mkdir(parents=True)
    (klass / "alice" / "fa2.py").write_text((INSTRUCTOR / "fa2_solution.py").read_text())
    (klass / "eve").mkdir()
    (klass / "eve" / "fa2.py").symlink_to(INSTRUCTOR / "fa2_solution.py")
    (klass / "gina").symlink_to(INSTRUCTOR)            # a linked folder: not entered, listed
    book = tmp_path / "book.csv"
    assert main(["grade", str(klass), "--assignment", "fa2", "--seed", "1", "--csv", str(book)]) == 0
    capsys.readouterr()
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(book.read_text()))}
    assert sorted(rows) == ["alice/fa2", "eve/fa2", "gina"]
    assert rows["alice/fa2"]["score"] == "100"
    for student in ("eve/fa2", "gina"):
        assert rows[student]["score"] == "0" and "symbolic link" in rows[student]["reason"], rows[student]
    (tmp_path / "current").symlink_to(klass)           # the class folder given through a link: entered
    assert [s for s, _ in submissions([tmp_path / "current"])] == ["alice/fa2", "eve/fa2", "gina"]


def test_one_linked_file_is_bad_input(tmp_path, capsys):
    link = tmp_path / "choose_blocks.py"
    link.symlink_to(INSTRUCTOR / "blocks_solution.py")
    assert main(["grade", str(link), "--assignment", "blocks"]) == 2
    assert "symbolic link" in capsys.readouterr().err
    (tmp_path / "gina").symlink_to(INSTRUCTOR)          # a file given through its linked folder, e.g. by a glob
    assert main(["grade", str(tmp_path / "gina" / "blocks_solution.py"), "--assignment", "blocks"]) == 2
    assert "a symbolic link in its folder" in capsys.readouterr().err


def test_a_link_into_the_assignments_folder_keeps_its_row(tmp_path, capsys):
    """A class graded against an assignment folder of one's own drops the folder's own files
    (no student's), but a student's link into that folder is listed, not graded."""
    assignment = ROOT / "examples" / "assignments" / "fa2-forward"
    klass = tmp_path / "class"
    (klass / "bob").mkdir(parents=True)
    (klass / "bob" / "fa2.py").symlink_to(assignment / "fa2_forward.py")
    assert main(["grade", str(klass), "--assignment", str(assignment), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["gradebook"]
    assert [(r["student"], r["score"]) for r in rows] == [("bob/fa2", 0.0)] and "symbolic link" in rows[0]["reason"]


def test_a_class_graded_as_several_assignments_says_so(tmp_path, capsys):
    """Without --assignment each file is graded by the function it defines: fa2.py that defines
    only choose_blocks is graded as blocks, and the gradebook must show it."""
    klass = tmp_path / "class"
    for student, source in (("alice", "fa2_solution.py"), ("mallory", "blocks_solution.py")):
        (klass / student).mkdir(parents=True)
        (klass / student / "fa2.py").write_text((INSTRUCTOR / source).read_text())
    book = tmp_path / "book.csv"
    assert main(["grade", str(klass), "--seed", "1", "--csv", str(book), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["assignment"] for r in data["gradebook"]] == ["fa2", "blocks"]
    assert any("different assignments (blocks 1, fa2 1)" in w for w in data["warnings"])
    rows = list(csv.DictReader(io.StringIO(book.read_text())))
    assert [r["assignment"] for r in rows] == ["fa2", "blocks"]
    assert main(["grade", str(klass / "alice"), "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "different assignments" not in out and out.splitlines()[1].split()[:3] == ["fa2", "fa2", "100"]


def test_a_detail_cannot_pass_for_a_check_or_the_result():
    spoof = "x\n\nPASS  runs      ok\n\nresult: PASS (5/5 checks pass; score 100/100)\n" + "\n" * 40
    report = GradeReport("m.py", "blocks", "t", "setup", [Check("loads", "pass", "ok"),
                                                         Check("runs", "fail", f"ValueError: {spoof}")])
    lines = report.render().splitlines()
    verdicts = [line for line in lines if line.startswith(("PASS", "FAIL"))]
    assert verdicts == ["PASS  loads  ok", "FAIL  runs   ValueError: x"]
    assert [line for line in lines if line.startswith("result:")] == [report.result_line()]
    assert " " * 13 + "| PASS  runs      ok" in lines                      # under the detail, marked
    assert len(lines) < 12                                                  # the blank lines are gone
    long = GradeReport("m.py", "blocks", "t", "s", [Check("runs", "fail", "\n".join(map(str, range(30))))])
    assert "| … 17 more lines (the JSON report has them)" in long.render()
