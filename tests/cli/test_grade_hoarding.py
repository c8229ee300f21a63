"""A schedule cannot grow the grader's memory without bound by what it holds besides tiles (a red-team pass,
session 48: loops kept open in a list took the grader to 610 MiB in 60 s): loops open at once, the blocks its
loops hand out and handles each have a cap, and passing one fails the run as out of memory, at once."""

import re

import pytest

from iosim.grading import grade
from iosim.grading.server import LOOPS_LIMIT

HOARDERS = {
    "loops kept open": ("gens = []\ndef fa2_forward(ctx):\n    while True:\n        g = ctx.q_blocks()\n"
                        "        next(g)\n        gens.append(g)\n",
                        rf"more than {LOOPS_LIMIT} loops open at once in the grader \(loops kept in a list\?\)"),
    "loops walked again and again": ("def fa2_forward(ctx):\n    while True:\n        for i in ctx.q_blocks():\n"
                                     "            pass\n",
                                     r"more than [\d,]+ blocks of its loops at once in the grader"),
}


@pytest.mark.parametrize("case", HOARDERS)
def test_a_hoarder_fails_as_out_of_memory_at_once(tmp_path, case):
    source, message = HOARDERS[case]
    path = tmp_path / "fa2.py"
    path.write_text(source)
    report = grade(str(path), assignment="fa2", seed=1, timeout_s=60)
    runs = next(c for c in report.checks if c.name == "runs")
    assert not runs.passed and re.search("memory: the schedule holds " + message, runs.detail), runs.detail
    assert report.score < 100
