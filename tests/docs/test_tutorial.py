"""docs/tutorial.md runs: its Python blocks, in order, in one namespace, from the repository root."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks() -> list[str]:
    return BLOCK.findall(TUTORIAL.read_text())


def test_tutorial_covers_the_article():
    text = TUTORIAL.read_text()
    for topic in ("memory-bound", "online softmax", "Tiling", "worked example", "iosim grade", "iosim explore",
                  "backward pass"):
        assert topic in text, topic
    assert len(python_blocks()) >= 8


def test_tutorial_executes(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    namespace = {"__name__": "tutorial"}
    for number, block in enumerate(python_blocks(), 1):
        code = compile(block, f"{TUTORIAL.name}, python block {number}", "exec")
        try:
            exec(code, namespace)
        except Exception as exc:  # name the block, not just the line inside it
            pytest.fail(f"python block {number} of docs/tutorial.md failed: {type(exc).__name__}: {exc}\n{block}")
    out = capsys.readouterr().out
    assert "128 MiB of scores written" in out and "result: PASS" in out
