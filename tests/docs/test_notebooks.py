"""The notebooks of notebooks/ run, from a folder outside the repository, and say what they claim.

Each notebook is kept twice: ``NAME.py`` (jupytext's py:percent, the text form reviewed in
diffs) and ``NAME.ipynb`` (generated: ``jupytext --to ipynb notebooks/NAME.py``). Here

* every ``.ipynb`` has the cells jupytext makes from its ``.py`` (sources and kinds; the
  outputs and metadata are not compared);
* the tutorial and each assignment's notebook execute cell by cell with nbclient, in a fresh
  ``python3`` kernel of this interpreter, with the working directory a temporary folder
  outside the repository (what a user who ran ``pip install .`` has): no cell may fail, and
  the outputs carry the numbers the tutorial's text states (the exact HBM bytes of section
  1, the online softmax's sums, …), and, for an assignment, the starter and a failing grade
  of it;
* no code cell names a path into the repository, and no assignment notebook holds a solution.

The execution tests need nbclient, nbformat and ipykernel, and the sync test jupytext (all in
the ``test`` extra); without them they skip, naming what is missing.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
#: the assignment notebooks: (notebook, built-in assignment name, pack folder, starter file, graded function)
ASSIGNMENTS = [
    ("assignment-fa1-forward", "fa1", "fa1-forward", "fa1_forward.py", "fa1_forward"),
    ("assignment-fa2-forward", "fa2", "fa2-forward", "fa2_forward.py", "fa2_forward"),
    ("assignment-choose-blocks", "blocks", "choose-blocks", "choose_blocks.py", "choose_blocks"),
]
NAMES = ["tutorial", *(a[0] for a in ASSIGNMENTS)]
CELL_TIMEOUT_S = 180     # a grade takes a few seconds; a first import in a cold CI machine more

# Numbers the tutorial's text states, each printed by a cell: (in the text, in the outputs).
TUTORIAL_NUMBERS = [
    ("545,259,520", "standard 545,259,520 B"),
    ("280,363,008", "FA1 280,363,008 B"),
    ("272,662,528", "FA2 272,662,528 B"),
    ("128 MiB", "128 MiB of scores written, and 128 MiB read back"),
    ("1.1421", "running sum [1.1421, 1.6735]"),
    ("1.6735", "the whole row's sum 1.6735"),
    ("2.3954", "with the rescaling 1.6735, without it 2.3954"),
    ("98,304", "M = 98,304 elements"),
    ("128 × 192", "B_r × B_c = 128 × 192"),
    ("ratio of the two leading terms is 6.1", "Theorem 2's ratio 6.1"),
    ("T_c = 43", "T_c = 43 key blocks"),
    ("T_r = 64", "T_r = 64 query blocks"),
    ("64 × 64 = 4,096", "the largest score tile holds 4,096 values, standard attention's S 65,536"),
    ("50,576", "50,576 B like the built-in's 50,576 B"),
    ("a score of 100", "score 100/100"),
    ("432 × 16", "best          432 × 16      83,918,848 B  1.00× the best"),
    ("3.25×", "paper         128 × 227    272,662,528 B  3.25× the best"),
    ("6.5×", "standard attention moves 6.5× the best"),
    ("400 × 32", "by time: 400 × 32 tensor cores"),
    ("a quarter more", "(1.25×)"),
    ("65,536 bytes per head", "m and ℓ: 65,536 bytes per head"),
]


def need(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (the test extra: pip install '.[test]')")


def cells(notebook: dict) -> list[tuple[str, str]]:
    """(kind, source) of each cell: what the sync check compares."""
    return [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for c in notebook["cells"]]


def out_of_sync(py: pathlib.Path, ipynb: pathlib.Path) -> list[str]:
    """How ``ipynb``'s cells differ from those jupytext makes from ``py`` (empty: in sync)."""
    import jupytext

    want = cells(jupytext.read(py))
    have = cells(json.loads(ipynb.read_text()))
    problems = [f"{ipynb.name}: cell {n + 1} ({w[0]}) differs from {py.name}'s:\n{h[1][:300]!r}\n!=\n{w[1][:300]!r}"
                for n, (w, h) in enumerate(zip(want, have)) if w != h]
    if len(want) != len(have):
        problems.append(f"{ipynb.name} has {len(have)} cells, {py.name} makes {len(want)}")
    return problems


# -- the text form and the notebook ---------------------------------------------------------------

def test_every_notebook_has_its_text_form():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(NAMES)
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.py")) == sorted(NAMES)
    for name in NAMES:
        text = (NOTEBOOKS / f"{name}.py").read_text()
        assert "format_name: percent" in text and "formats: ipynb,py:percent" in text, name


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_in_sync_with_its_text_form(name):
    need("jupytext")
    problems = out_of_sync(NOTEBOOKS / f"{name}.py", NOTEBOOKS / f"{name}.ipynb")
    assert not problems, ("regenerate it: jupytext --to ipynb notebooks/" + name + ".py\n" + "\n".join(problems))


def test_a_stale_notebook_is_reported(tmp_path):
    """The sync check can fail: a cell edited in the .py alone, or a cell added, is reported."""
    need("jupytext")
    py = tmp_path / "nb.py"
    py.write_text("# %% [markdown]\n# # Title\n\n# %%\nx = 1\nprint(x)\n")
    import jupytext

    ipynb = tmp_path / "nb.ipynb"
    jupytext.write(jupytext.read(py), ipynb, fmt="ipynb")
    assert out_of_sync(py, ipynb) == []
    py.write_text("# %% [markdown]\n# # Title\n\n# %%\nx = 2\nprint(x)\n")
    assert any("cell 2 (code) differs" in p for p in out_of_sync(py, ipynb))
    py.write_text("# %% [markdown]\n# # Title\n\n# %%\nx = 1\nprint(x)\n\n# %%\nprint(3)\n")
    assert out_of_sync(py, ipynb) == ["nb.ipynb has 2 cells, nb.py makes 3"]


# -- what the notebooks may contain ---------------------------------------------------------------

REPOSITORY_PATH = re.compile(r"examples/|instructor|hardware_profiles|docs/|tests/|\.\./|iosim/|notebooks/")


def code_of(name: str) -> str:
    notebook = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())
    return "\n".join(source for kind, source in cells(notebook) if kind == "code")


@pytest.mark.parametrize("name", NAMES)
def test_notebook_code_names_no_repository_path(name):
    """The notebooks run where only the installed package is: built-in profile names and
    iosim's API, never a file of the checkout (the instructor's least of all)."""
    found = sorted({m.group(0) for m in REPOSITORY_PATH.finditer(code_of(name))})
    assert not found, f"{name}: its code names repository paths {found}"


def test_the_path_check_can_fail():
    assert REPOSITORY_PATH.search('grade("examples/assignments/instructor/fa2_solution.py")')
    assert not REPOSITORY_PATH.search('simulate("fa-paper-a100", "fa2", problem)')


@pytest.mark.parametrize("name", [a[0] for a in ASSIGNMENTS])
def test_assignment_notebook_holds_no_solution(name):
    """A student's notebook shows the starter and never a schedule of its own: no tile is
    kept or stored, and the graded function is defined only in the student's file."""
    code = code_of(name)
    function = next(a[4] for a in ASSIGNMENTS if a[0] == name)
    assert "ctx." not in code and f"def {function}" not in code
    assert not re.search(r"\bblocks\s*=\s*\(\s*\d", code), "a notebook must not hard-code a block choice"


# -- executing them -------------------------------------------------------------------------------

def execute(name: str, tmp_path: pathlib.Path, monkeypatch) -> tuple[pathlib.Path, list[str], str]:
    """Run notebooks/NAME.ipynb in a fresh kernel of this interpreter, in a new folder under
    ``tmp_path``: (the folder, the text of every output, the text of its markdown cells)."""
    need("nbclient", "nbformat", "ipykernel")
    import nbclient
    import nbformat
    from ipykernel.kernelspec import write_kernel_spec

    assert ROOT not in tmp_path.resolve().parents, "the notebooks must run outside the repository"
    # A python3 kernel spec of this interpreter, found first; nothing is installed for the user or the system.
    write_kernel_spec(str(tmp_path / "jupyter" / "kernels" / "python3"))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    work = tmp_path / "work"
    work.mkdir()
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    # coalesce_streams: the kernel flushes stdout on a timer, so one print may reach us as two stream
    # messages (the likely cause of a CI failure that lacked "by time: 400 × 32 tensor cores", which passes
    # here every time); a cell's text is one string.
    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=CELL_TIMEOUT_S, startup_timeout=120,
                                     resources={"metadata": {"path": str(work)}}, coalesce_streams=True)
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        pytest.fail(f"notebooks/{name}.ipynb: a cell failed:\n{str(exc)[-3000:]}")
    except nbclient.exceptions.CellTimeoutError as exc:
        pytest.fail(f"notebooks/{name}.ipynb: a cell ran past {CELL_TIMEOUT_S} s: {exc}")
    texts, errors = [], []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output["output_type"] == "error":
                errors.append(f"{output['ename']}: {output['evalue']}")
            elif output["output_type"] == "stream":
                texts.append(output["text"])
            else:
                texts += [v for k, v in output.get("data", {}).items() if k.startswith("text/")]
    assert not errors, f"notebooks/{name}.ipynb has error outputs: {errors}"
    assert not any("Traceback (most recent call last)" in t for t in texts), "a cell printed a traceback"
    prose = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    return work, texts, prose


@pytest.mark.slow
def test_tutorial_notebook_runs_outside_the_repository(tmp_path, monkeypatch):
    work, texts, prose = execute("tutorial", tmp_path, monkeypatch)
    out = "\n".join(texts)
    prose = " ".join(prose.split())
    for stated, printed in TUTORIAL_NUMBERS:
        assert stated in prose, f"the tutorial's text no longer states {stated!r}"
        assert printed in out, f"the tutorial's outputs lack {printed!r}; they are:\n{out}"
    # exact to rounding: the online softmax, the tiled worked example, the schedule of section 5
    for pattern, below in ((r"output off by (\S+)\n", 1e-15), (r"outputs differ by (\S+);", 1e-14),
                           (r"; error (\S+)\n", 1e-12)):
        match = re.search(pattern, out)
        assert match and float(match.group(1)) < below, (pattern, match and match.group(0))
    # section 5 graded the schedule it wrote into the working folder: every scored check passes
    assert (work / "my_fa2.py").read_text().count("def fa2_forward(ctx)") == 1
    for check in ("loads", "runs", "exactness", "capacity", "io"):
        assert re.search(rf"^PASS  {check} ", out, re.M), check


@pytest.mark.slow
@pytest.mark.parametrize("name,assignment,folder,starter,function", ASSIGNMENTS, ids=[a[1] for a in ASSIGNMENTS])
def test_assignment_notebook_runs_and_grades_the_starter(tmp_path, monkeypatch, name, assignment, folder, starter,
                                                         function):
    work, texts, prose = execute(name, tmp_path, monkeypatch)
    out = "\n".join(texts)
    # the student pack was written into the working folder, and the starter shown
    assert sorted(p.name for p in (work / folder).iterdir()) == sorted(["README.md", starter])
    shown = (work / folder / starter).read_text()
    assert f"def {function}(" in shown and shown in out
    assert f"--assignment {assignment}" in prose
    # the unmodified starter ran locally and was graded: a failing verdict, not a crash
    assert f"iosim grade {folder}/{starter}" in out
    assert re.search(r"^result: FAIL \(\d+/\d+ checks pass; score [\d.]+/100; failed: [^()]*(\(unscored\))?\)$", out,
                     re.M), out[-2000:]
    assert "PASS  loads" in out and re.search(r"^FAIL  io ", out, re.M)
    assert "exit code 1 " in out
    if assignment == "blocks":
        assert "toy, N=1024, d=32: your blocks 32 × 32 move 4,329,472 B" in out
    else:
        assert "N_q=70 N_kv=100 d=32 causal=True: blocks 32 × 32" in out and "   differs" in out
