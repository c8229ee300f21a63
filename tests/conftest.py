"""Fixtures, and helpers the test files import (``from conftest import ...``).

The tests sit in folders by kind (counts/, invariants/, numeric/, golden/, cli/, gpu/, docs/);
this file's fixtures apply to all of them, and the helper modules next to it (this one and
closed_forms.py) are imported by their plain names from every folder: this folder is put on
sys.path here, whatever --import-mode or folder pytest is run with.
"""

import importlib.util
import os
import pathlib
import sys
import textwrap

import pytest

from iosim import load_profile
from iosim.cli.main import main
from iosim.grading.isolation import isolation_available
from iosim.run.heap import give_back, keep_freed_memory

TESTS = str(pathlib.Path(__file__).resolve().parent)

#: cli/redteam/ holds cheating submissions (data for cli/test_redteam.py), not tests; a
#: conftest.py of its own there would shadow this one for ``from conftest import``
collect_ignore_glob = ["cli/redteam/*"]
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

#: the L2 model's large arrays reuse the heap's pages within a test (iosim/run/heap.py), and each test gives
#: them back when it ends, so that parallel workers do not each hold their peak
keep_freed_memory()


@pytest.fixture(autouse=True)
def _heap_given_back():
    yield
    give_back()


#: a small grid for the bounds checks: quick, and enough points to fit the exponents
SMALL = {"seq_lens": [512, 1024, 2048, 4096], "head_dims": [32, 64], "jobs": 1}


#: whether `iosim grade` can isolate a submission here (Linux user namespaces); where it
#: cannot (a locked-down CI, macOS), the grading tests run the grader without the sandbox
#: (see the fixture below) and the sandbox's own tests skip with this reason.
#: IOSIM_TEST_NO_NAMESPACES=1 runs the suite as such a machine would.
NAMESPACES, WHY_NO_NAMESPACES = (False, "IOSIM_TEST_NO_NAMESPACES=1") \
    if os.environ.get("IOSIM_TEST_NO_NAMESPACES") == "1" else isolation_available()


@pytest.fixture(autouse=True)
def _grade_unisolated_without_namespaces(request, monkeypatch):
    """Without namespaces a grade refuses to run unless told --no-isolation: the grading
    tests (not about the sandbox: those are marked ``isolation``) then grade without it, so
    their verdicts are still checked."""
    if NAMESPACES or request.node.get_closest_marker("isolation"):
        return
    from iosim.grading import isolation, sandbox
    start = sandbox.StudentProcess.__init__

    def without_namespaces(self, timeout_s, memory_mb, isolation=True):
        start(self, timeout_s, memory_mb, isolation=False)

    monkeypatch.setattr(sandbox.StudentProcess, "__init__", without_namespaces)
    # `iosim grade` asks first, and would refuse: let it through to the unisolated process
    monkeypatch.setattr(isolation, "isolation_available", lambda: (True, "graded without namespaces in the tests"))


def run(capsys, *argv):
    """``iosim ARGV...`` in this process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_untraced(capsys, *argv):
    """As :func:`run`, argparse's exits included, and asserting no traceback was printed."""
    try:
        code = main(list(argv))
    except SystemExit as stop:        # argparse
        code = stop.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


#: a small valid hardware profile; the profile tests each change one thing in it (:func:`edit`)
TINY_PROFILE = """\
schema_version: 1
name: tiny
description: a test GPU
vendor: illustrative
sm_count: {value: 2, source: test}
levels:
  hbm: {role: dram, capacity: {value: 1, unit: GiB, source: test}}
  l2: {role: cache, capacity: {value: 1, unit: MiB, source: test}}
  smem:
    role: scratchpad
    capacity_per_sm: {value: 228, unit: KiB, source: test}
    capacity_per_block: {value: 227, unit: KiB, source: test}
  registers:
    role: registers
    capacity_per_sm: {value: 256, unit: KiB, source: test}
    capacity_per_block: {value: 256, unit: KiB, source: test}
links:
  - {between: [hbm, l2], bandwidth: {value: 1, unit: TB/s, source: test}}
  - {between: [l2, smem], bandwidth: {value: 2, unit: TB/s, source: test}}
  - {between: [smem, registers], bandwidth: {value: 4, unit: TB/s, source: test}}
compute:
  tensor_fp16: {value: 10, unit: TFLOP/s, source: test}
"""


def edit(text: str, *replacements: tuple[str, str]) -> str:
    """``text`` with each (old, new) replaced once; an ``old`` not in it fails the test."""
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def statuses(report) -> dict:
    """A grade report's checks as {name: "pass" or "fail"}."""
    return {c.name: c.status for c in report.checks}


def submission(tmp_path, body: str, name: str = "submission.py") -> pathlib.Path:
    """A submission file with ``body`` (dedented) in ``tmp_path``."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def note_figures(text: str) -> dict:
    """The figures a "not exact" note states (iosim/kernels/plan.py, flash_code.py): ``count``
    launches, the first range over the measured (or of the measured over the predicted),
    ``low``-``high``, and ``within`` (within 10 %) or ``median``."""
    import re
    low, high = re.search(r"(\d\.\d\d)-(\d\.\d\d) x the", text).groups()
    within = re.search(r"(?<!\w)(\d+) such \w+ .*?\((\d+) within 10 %", text)
    median = re.search(r"\(median (\d\.\d\d) over (\d+) launches", text)
    out = {"low": low, "high": high}
    if within:
        out.update(count=int(within.group(1)), within=int(within.group(2)))
    if median:
        out.update(count=int(median.group(2)), median=median.group(1))
    return out


def frozen_entries(path: pathlib.Path, rows: list) -> list:
    """(row, its config's entry in the frozen predictions at ``path``, benchmarks/sdpa_predict.py's JSON) of
    every comparison row, matched by head dim, lengths, batch, heads, K/V heads and causality."""
    import json
    q, k = (lambda c: c.get("seq_len_q") or c["seq_len"]), (lambda c: c.get("seq_len_kv") or c["seq_len"])
    key = (lambda c: (c["head_dim"], q(c), k(c), c["batch"], c["heads"], c.get("kv_heads") or c["heads"],
                      bool(c.get("causal"))))
    by = {key(f["config"]): f for f in json.loads(path.read_text())["rows"]}
    return [(r, by[key(r)]) for r in rows]


def assert_rows_are_frozen(path: pathlib.Path, rows: list) -> None:
    """Every comparison row predicts what the frozen predictions at ``path`` did: the DRAM reads exactly,
    the time to 1e-12 of itself (a float sum of the model's terms)."""
    for r, f in frozen_entries(path, rows):
        assert f["dram"][r["kernel"]]["read_bytes"] == r["predicted"]["dram_read"], (path, r["head_dim"])
        assert f["kernel_times"][r["kernel"]]["predicted_s"] == pytest.approx(r["predicted"]["time_s"], rel=1e-12)


def load_module(name, path):
    """The Python file at ``path``, imported as a module called ``name`` (not in sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def paper_a100():
    """The FlashAttention paper's illustrative A100 (M = 98,304 fp16 elements)."""
    return load_profile("fa-paper-a100")


@pytest.fixture(scope="session")
def h100():
    return load_profile("h100-sxm")


@pytest.fixture(scope="session")
def h200():
    return load_profile("h200")
