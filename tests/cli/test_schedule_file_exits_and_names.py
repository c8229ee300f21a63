"""Schedules of one's own (`--algo FILE.py:FUNCTION`): a file that calls sys.exit while it
is imported (or a schedule that does while it runs) is refused in one line, exit 2, in
simulate, bounds and explore (QA item 4); and simulate names the schedule FILE.py:FUNCTION
in its table, JSON and CSV as bounds and explore do, whatever the function's own name
(QA item 5)."""

import csv
import io
import json

import pytest

from iosim.cli.main import main
from iosim.errors import ScheduleError
from iosim.studies.schedule_files import ScheduleFile, load_schedule_file

COMMANDS = {
    "simulate": ["simulate", "--hw", "toy", "-N", "64", "-d", "16"],
    "bounds": ["bounds", "--hw", "toy", "-N", "256", "-d", "16"],
    "explore": ["explore", "--hw", "toy", "-N", "128", "-d", "16", "--block-q", "16", "--block-kv", "16"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("call,shown", [("sys.exit(3)", "sys.exit(3)"), ("sys.exit()", "sys.exit()"),
                                        ("sys.exit('bye')", "sys.exit('bye')"), ("exit(0)", "sys.exit(0)")])
def test_a_file_that_exits_while_imported_is_refused(tmp_path, monkeypatch, capsys, command, call, shown):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quits.py").write_text(f"import sys\n{call}\n\ndef f(ctx):\n    pass\n")
    with pytest.raises(SystemExit) as stop:
        main(COMMANDS[command] + ["--algo", "quits.py:f"])
    err = capsys.readouterr().err
    assert stop.value.code == 2, err
    assert f"error: argument --algo: quits.py exited ({shown}) while being imported" in err
    assert "Traceback" not in err


def test_keyboard_interrupt_still_interrupts(tmp_path):
    (tmp_path / "ctrl_c.py").write_text("raise KeyboardInterrupt\n\ndef f(ctx):\n    pass\n")
    with pytest.raises(KeyboardInterrupt):
        load_schedule_file(str(tmp_path / "ctrl_c.py"), "f")


def test_a_schedule_that_exits_while_running_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quits_later.py").write_text("import sys\n\ndef f(ctx):\n    sys.exit(4)\n")
    assert main(COMMANDS["simulate"] + ["--algo", "quits_later.py:f"]) == 2
    err = capsys.readouterr().err
    assert "quits_later.py:f exited (sys.exit(4)) while running (B_r=" in err and "Traceback" not in err
    with pytest.raises(ScheduleError, match=r"exited \(sys.exit\(4\)\) while running"):
        from iosim import Problem, simulate
        simulate("toy", ScheduleFile.from_text("quits_later.py:f").load(), Problem(seq_len=64, head_dim=16))


# -- the name simulate reports -----------------------------------------------------------------
@pytest.fixture
def renamed(tmp_path, monkeypatch):
    """The README's own-loop-order example: FA2 imported under another name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_schedule.py").write_text("from iosim.schedules.fa2 import fa2_forward as my_fa2\n")
    return "my_schedule.py:my_fa2"


def test_simulate_names_a_schedule_file_function(renamed, capsys):
    base = ["simulate", "--hw", "toy", "-N", "256", "-d", "16", "--algo", renamed]
    assert main(base) == 0
    assert capsys.readouterr().out.startswith("my_schedule.py:my_fa2 forward on toy")
    assert main(base + ["--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["algorithm"] == "my_schedule.py:my_fa2"
    assert main(base + ["--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows and {r["algorithm"] for r in rows} == {"my_schedule.py:my_fa2"}
    assert "fa2_forward" not in json.dumps(rows)


def test_simulate_bounds_and_explore_name_it_alike(renamed, capsys):
    assert main(["simulate", "--hw", "toy", "-N", "256", "-d", "16", "--algo", renamed, "--format", "json"]) == 0
    simulated = json.loads(capsys.readouterr().out)["algorithm"]
    assert main(["bounds", "--hw", "toy", "-N", "256", "-d", "16", "--algo", renamed, "--claim", "compulsory",
                 "--format", "json"]) == 0
    bounded = json.loads(capsys.readouterr().out)["algorithms"]
    assert main(COMMANDS["explore"] + ["--algo", renamed, "--no-cache", "--format", "json"]) == 0
    explored = json.loads(capsys.readouterr().out)["results"][0]["algorithm"]
    assert simulated == explored == renamed and bounded == [renamed]


def test_the_loaded_function_carries_the_name(renamed):
    function = ScheduleFile.from_text(renamed).load()
    assert function.__name__ == renamed and function.__wrapped__.__name__ == "fa2_forward"


def test_an_assignment_reference_that_exits_is_refused(tmp_path, capsys):
    """The same for an assignment folder's reference.py (the instructor's FILE.py:FUNCTION)."""
    from test_assignment_data import SOLUTION, _folder

    folder = _folder(tmp_path)
    reference = folder / "reference.py"
    reference.write_text("import sys\nsys.exit(5)\n" + reference.read_text())
    assert main(["grade", str(SOLUTION), "--assignment", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "reference: reference.py exited (sys.exit(5)) while being imported" in err
