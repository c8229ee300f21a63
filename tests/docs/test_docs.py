"""Every `$ iosim …` command in the docs runs, reports the HBM total the page quotes, and prints what the page
shows under it.

What a page shows under a command (the lines up to the next `$ ` or the block's end) must be found in the command's
output in the same order, each line whole, with runs of spaces taken as one (a table's columns widen with their
contents). A line `…` stands for lines left out; a `…` inside a line for a part of it left out."""

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


def shown_output(lines: list, number: int) -> list:
    """The lines a page shows under the command on line ``number``: up to the next command or the block's end,
    without `#` comments and `…` (or `...`) lines."""
    shown = []
    for line in lines[number + 1:]:
        if line.strip().startswith(("$ ", "```")):
            break
        if line.strip() and not line.strip().startswith("#") and line.strip() not in ("…", "..."):
            shown.append(line)
    return shown


def documented_commands():
    for page in PAGES:
        lines = page.read_text().splitlines()
        for number, line in enumerate(lines):
            match = COMMAND.match(line.strip())
            if match:
                command = SHELL_TAIL.sub("", match.group(1))
                following = lines[number + 1].strip() if number + 1 < len(lines) else ""
                total = TOTAL.match(following)
                shown = shown_output(lines, number) if "echo $?" not in line else []
                yield pytest.param(command, int(total.group(1).replace(",", "")) if total else None, shown,
                                   id=f"{page.name}:{number + 1}")


def _squeezed(line: str) -> str:
    return " ".join(line.split())


def _matches(shown: str, printed: str) -> bool:
    """``printed`` is ``shown``, whose `…` each stand for a part left out."""
    parts = [_squeezed(p) for p in shown.split("…")]
    printed = _squeezed(printed)
    if len(parts) == 1:
        return printed == parts[0]
    if not (printed.startswith(parts[0]) and printed.endswith(parts[-1])):
        return False
    at = len(parts[0])
    for part in parts[1:-1]:
        at = printed.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return at <= len(printed) - len(parts[-1])


def missing_lines(shown: list, printed: str) -> list:
    """The lines of ``shown`` not found in ``printed``'s lines in order (the search goes on past a missing one)."""
    out, at, missing = printed.splitlines(), 0, []
    for line in shown:
        found = next((i for i in range(at, len(out)) if _matches(line, out[i])), None)
        if found is None:
            missing.append(line)
        else:
            at = found + 1
    return missing


def test_missing_lines_reads_ellipses():
    printed = "a  b   c\nnear-ties: 3 (x, y, z); pick x\nlast"
    assert missing_lines(["a b c", "near-ties: 3 (x, …); pick x", "last"], printed) == []
    assert missing_lines(["a b d", "last"], printed) == ["a b d"]
    assert missing_lines(["last", "a b c"], printed) == ["a b c"]      # in order
    assert missing_lines(["near-ties: 3 (x, …); pick y"], printed) == ["near-ties: 3 (x, …); pick y"]


@pytest.mark.parametrize("command,total,shown", list(documented_commands()))
def test_documented_command(capsys, tmp_path, monkeypatch, command, total, shown):
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
    missing = missing_lines(shown, out)
    assert not missing, f"{command}: the page shows lines it does not print:\n" + "\n".join(missing) + \
        "\n--- it prints:\n" + out
    if total is not None:
        assert json.loads(out)["hbm"]["total_bytes"] == total
