"""What a class hands in, read as Python and the shell read it (a red-team pass, session 48): a file with a
byte-order mark or a coding line is graded like any other; a file name that is not UTF-8 keeps its row, shown
with its bytes as \\xNN, in the table and the CSV; the CSV's cells are printable and never read as a formula."""

import csv
import io
import os
import pathlib

import pytest

from iosim.cli.main import main
from iosim.grading.feedback import csv_cell, path_text

INSTRUCTOR = pathlib.Path(__file__).resolve().parents[2] / "examples" / "assignments" / "instructor"
SOLUTION = (INSTRUCTOR / "fa2_solution.py").read_bytes()


@pytest.mark.parametrize("head", [b"\xef\xbb\xbf", b"# -*- coding: latin-1 -*-\ncaf\xe9 = 1\n"], ids=["bom", "latin-1"])
def test_a_file_python_reads_is_graded(tmp_path, capsys, head):
    path = tmp_path / "fa2.py"
    path.write_bytes(head + SOLUTION)
    assert main(["grade", str(path), "--seed", "1"]) == 0
    assert "score 100/100" in capsys.readouterr().out


def test_a_file_name_that_is_not_utf8_keeps_its_row(tmp_path, capsys, monkeypatch):
    klass = tmp_path / "class"
    odd = os.fsencode(klass / "s") + b"/caf\xe9.py"
    os.makedirs(os.path.dirname(odd))
    with open(odd, "wb") as f:
        f.write(SOLUTION)
    (klass / "=cmd|calc").mkdir()
    (klass / "=cmd|calc" / "fa2.py").write_bytes(b"def fa2_forward(ctx):\n    raise ValueError('\\x1b[2J\\r=1+1')\n")
    book = tmp_path / "book.csv"
    book.write_text("an earlier gradebook\n")
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))    # strict, as a pipe's
    assert main(["grade", str(klass), "--assignment", "fa2", "--seed", "1", "--csv", str(book)]) == 0
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(book.read_text()))}
    assert sorted(rows) == ["'=cmd|calc/fa2", "s/caf\\xe9"]
    assert rows["s/caf\\xe9"]["score"] == "100" and rows["s/caf\\xe9"]["file"].endswith("s/caf\\xe9.py")
    reason = rows["'=cmd|calc/fa2"]["reason"]
    assert "ValueError" in reason and not any(c in reason for c in "\x1b\r\n"), reason


def test_the_cells_and_names():
    assert path_text(b"s/caf\xe9.py") == "s/caf\\xe9.py" and path_text("plain/é.py") == "plain/é.py"
    assert [csv_cell(t) for t in ("=1+1", "+1", "-x", "@a", "a=b", "x\x1by\nz")] == \
        ["'=1+1", "'+1", "'-x", "'@a", "a=b", "x?y z"]


def test_a_file_that_is_no_regular_file_is_named_so(tmp_path, capsys):
    fifo = tmp_path / "fa2.py"
    os.mkfifo(fifo)
    assert main(["grade", str(fifo), "--assignment", "fa2"]) == 2
    assert capsys.readouterr().err.strip() == f"iosim: error: {fifo}: not a regular file"
