"""Every `$ iosim …` command in the docs runs, and reports the HBM total the page quotes."""

import json
import pathlib
import re
import shlex

import pytest

from iosim.cli.main import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND = re.compile(r"^\$ iosim (.+?)(?:\s+#.*)?$")
SHELL_TAIL = re.compile(r"\s*(;|\|\||&&|\||>|2>).*$")  # `; echo $?`, pipes and redirections are the shell's
TOTAL = re.compile(r"^# HBM total: ([\d,]+) bytes$")


def documented_commands():
    for page in PAGES:
        lines = page.read_text().splitlines()
        for number, line in enumerate(lines):
            match = COMMAND.match(line.strip())
            if match:
                command = SHELL_TAIL.sub("", match.group(1))
                following = lines[number + 1].strip() if number + 1 < len(lines) else ""
                total = TOTAL.match(following)
                yield pytest.param(command, int(total.group(1).replace(",", "")) if total else None,
                                   id=f"{page.name}:{number + 1}")


@pytest.mark.parametrize("command,total", list(documented_commands()))
def test_documented_command(capsys, tmp_path, monkeypatch, command, total):
    monkeypatch.chdir(tmp_path)  # commands that write plots write here
    argv = shlex.split(command)
    for flag, value in zip(argv, argv[1:]):
        if flag == "--plot":  # plots named in the docs go under tmp_path
            (tmp_path / value).parent.mkdir(parents=True, exist_ok=True)
    if argv[0] in ("profiles", "simulate") and total is not None:
        argv += ["--format", "json"]
    if "./my-gpu.yaml" in argv:  # the README's own-profile example
        from iosim.hardware import load_profile

        (tmp_path / "my-gpu.yaml").write_text(open(load_profile("h100-sxm").source_path).read())
    if any(a.startswith("my_schedule.py:") for a in argv):  # the README's own-loop-order example
        (tmp_path / "my_schedule.py").write_text("from iosim.schedules.fa2 import fa2_forward as my_fa2\n")
    if "submissions/" in argv:  # the README's class-grading example: a correct and a wrong submission
        instructor = ROOT / "examples" / "assignments" / "instructor"
        (tmp_path / "submissions").mkdir()
        (tmp_path / "submissions" / "alice.py").write_text((instructor / "fa2_solution.py").read_text())
        (tmp_path / "submissions" / "bob.py").write_text((instructor / "cheats" / "no_rescale.py").read_text())
    code = main(argv)
    out = capsys.readouterr().out
    assert code in (0, 1), command  # bounds exits 1 when a claim does not hold
    if total is not None:
        assert json.loads(out)["hbm"]["total_bytes"] == total
