"""The assignments ``iosim grade`` knows: what a submission defines and what it is checked on.

An assignment is a folder with a manifest, ``assignment.yaml`` (:mod:`.manifest`; the
format is in docs/grading.md, "Adding an assignment"), the student's README and starter,
and, for a schedule graded against one of the instructor's own, the reference schedule.
The built-in ones are folders of ``examples/assignments/`` (installed, the package data
``iosim.assignments``), read into :data:`ASSIGNMENTS`; the instructor material (solutions,
cheats) is in ``examples/assignments/instructor/``, in no assignment's folder. Any other
folder is graded with ``iosim grade FILE --assignment PATH`` (:func:`find_assignment`),
without a change to iosim.

* ``fa1`` — ``fa1_forward(ctx)``: FlashAttention's forward pass, Algorithm 1. Checked on
  twelve inputs on the teaching GPU ``toy`` with the paper's blocks (B_r = B_c = 32 at
  d = 32): six random ones and six built to break the shortcuts of the online softmax
  (:mod:`.patterns`, :data:`SCORE_RANGE`); exact output and statistics ℓ, m; tiles within
  shared memory and registers; HBM traffic equal to the built-in ``fa1`` schedule's,
  tensor by tensor.
* ``fa2`` — ``fa2_forward(ctx)``: FlashAttention-2's forward pass, Algorithm 1; the same
  checks against ``fa2`` (output O and logsumexp L), plus a two-sentence answer.
* ``blocks`` — ``choose_blocks(hw, problem) -> (block_q, block_kv)`` for FA2 on three
  GPUs and shapes: the tiles fit (shared memory, no register spill) and the HBM traffic
  is within :data:`BLOCKS_BAND` of the best block sizes ``iosim explore`` finds.

Also what the grader learns before anything runs: a file's assignment, graded function and
written answer, from its syntax tree (:func:`resolve`); each input (:func:`build_inputs`)
and its float64 reference (:func:`reference_outputs`).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import os
import pathlib
import re
from dataclasses import dataclass

import numpy as np

from ..workload.reference import reference_attention, reference_statistics
from .manifest import load_assignment_folder
from .patterns import PATTERNS, SCORE_RANGE, build_inputs
from .specs import (ATOL, BLOCKS_BAND, RTOL, BlocksAssignment, Case, GradingInputError, ManifestError,
                    ScheduleAssignment, signature)

__all__ = ["ASSIGNMENTS", "ATOL", "BLOCKS_BAND", "BlocksAssignment", "Case", "GradingInputError", "ManifestError",
           "PATTERNS", "RTOL", "SCORE_RANGE", "ScheduleAssignment", "Submission", "build_inputs", "find_assignment",
           "function_names", "reference_outputs", "resolve", "signature"]

#: the largest file the grader reads
MAX_SOURCE_BYTES = 1 << 20
#: the built-in assignments' folders, in the order ``iosim grade --help`` lists them
BUILTIN_FOLDERS = ("fa1-forward", "fa2-forward", "choose-blocks")


def builtin_root() -> pathlib.Path:
    """The built-in assignments' folder: the package data ``iosim.assignments`` when
    installed, else the checkout's ``examples/assignments/``."""
    try:
        spec = importlib.util.find_spec("iosim.assignments")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return pathlib.Path(list(spec.submodule_search_locations)[0])
    return pathlib.Path(__file__).resolve().parents[2] / "examples" / "assignments"


def _builtins() -> dict:
    specs = [load_assignment_folder(builtin_root() / folder, builtin=True) for folder in BUILTIN_FOLDERS]
    return {spec.name: spec for spec in specs}


ASSIGNMENTS: dict = _builtins()


def find_assignment(assignment):
    """The spec ``assignment`` names: a built-in name (:data:`ASSIGNMENTS`), the folder of an
    assignment (or its ``assignment.yaml``), or a spec already; else :class:`GradingInputError`.
    A built-in name wins over a folder of that name in the working directory (``./fa2``
    names the folder)."""
    if isinstance(assignment, (ScheduleAssignment, BlocksAssignment)):
        return assignment
    if isinstance(assignment, str) and assignment in ASSIGNMENTS:
        return ASSIGNMENTS[assignment]
    if isinstance(assignment, (str, os.PathLike)) and os.fspath(assignment).strip():
        text = os.fspath(assignment)
        try:
            exists = "\0" not in text and pathlib.Path(text).exists()
        except (OSError, ValueError):
            exists = False
        if isinstance(assignment, os.PathLike) or exists or "/" in text or os.sep in text:
            return load_assignment_folder(text)
    raise GradingInputError(f"unknown assignment {assignment!r}; choose one of {', '.join(ASSIGNMENTS)}, or give "
                            "the folder of an assignment (with its assignment.yaml)", field="assignment")


def function_names() -> dict:
    """Function name → assignment name (how a file's assignment is recognised)."""
    return {a.function: name for name, a in ASSIGNMENTS.items()}


# -- the reference, float64 -------------------------------------------------------------------
def reference_outputs(inputs: dict, problem) -> dict:
    """O, and the row statistics m = rowmax(S), ℓ = rowsum(e^{S−m}), L = m + log ℓ, computed
    from private copies of ``inputs`` and returned read-only."""
    Q, K, V = (np.array(inputs[name], dtype=np.float64, copy=True) for name in ("Q", "K", "V"))
    with np.errstate(over="ignore", under="ignore"):
        out = {"O": reference_attention(Q, K, V, causal=problem.causal),
               **reference_statistics(Q, K, causal=problem.causal)}
    for array in out.values():
        array.setflags(write=False)
    return out


# -- which assignment ---------------------------------------------------------------------------
def _defined_names(tree: ast.Module) -> set:
    """Names a module binds at top level (also inside top-level if/try/with blocks)."""
    names, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo.extend(getattr(node, field, []) or [])
        elif isinstance(node, ast.ExceptHandler):
            todo.extend(node.body)
    return names


def _literal_strings(tree: ast.Module, wanted: set) -> dict:
    """The string each name in ``wanted`` is bound to by the file's last top-level assignment of
    it (also inside top-level if/try/with blocks), when that is a string literal."""
    found, todo = {}, list(tree.body)
    assignments = []
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Assign):
            assignments += [(node.lineno, t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            assignments.append((node.lineno, node.target.id, node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            assignments.append((node.lineno, node.target.id, None))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for name in ("body", "orelse", "finalbody", "handlers"):
                todo.extend(getattr(node, name, []) or [])
        elif isinstance(node, ast.ExceptHandler):
            todo.extend(node.body)
    for _, name, value in sorted(assignments, key=lambda a: a[0]):
        if name in wanted:
            ok = isinstance(value, ast.Constant) and isinstance(value.value, str)
            found[name] = value.value if ok else None
    return found


def syntax_message(exc: Exception) -> str:
    """A file's parse error in one line: its type, its message and its line."""
    line = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
    return f"{type(exc).__name__}: {getattr(exc, 'msg', None) or exc}{line}"


@dataclass
class Submission:
    """What the grader learns from the file itself, before any of it runs."""

    file: pathlib.Path
    spec: object
    syntax_error: Exception | None = None
    answers: dict = dataclasses.field(default_factory=dict)   # the written answer's string literal, by name


def resolve(path: str | pathlib.Path, assignment=None) -> Submission:
    """The file, its assignment (:func:`find_assignment`; by default recognised from the
    built-in graded function the file defines) and (from its syntax tree) its written answer,
    or :class:`GradingInputError`."""
    file = pathlib.Path(path)
    if file.is_symlink() or file.parent.is_symlink():
        raise GradingInputError(f"{path}: a symbolic link{'' if file.is_symlink() else ' in its folder'}, not graded: "
                                "hand in the file itself (a link can point at another's work)")
    if not file.is_file():
        raise GradingInputError(f"{path}: {'not a regular file' if file.exists() else 'no such file'}")
    spec = find_assignment(assignment) if assignment is not None else None
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise GradingInputError(f"{path}: cannot read it ({exc.strerror})") from None
    if len(raw) > MAX_SOURCE_BYTES:
        raise GradingInputError(f"{path}: {len(raw):,} bytes is too large for a submission")
    tree = None
    try:
        tree = ast.parse(raw, filename=str(file))      # bytes: a BOM and a coding line read as Python reads them
        names, syntax_error = _defined_names(tree), None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        # Graded as a failure when we know which assignment it is; a guess from the text otherwise.
        names = set(re.findall(r"^def\s+(\w+)", raw.decode("utf-8", "replace"), flags=re.M))
        syntax_error = exc
    if spec is None:
        known = function_names()
        found = sorted(known[n] for n in names if n in known)
        if len(found) != 1:
            wanted = ", ".join(f"{f} ({a})" for f, a in known.items())
            what = "several graded functions" if found else "none of the graded functions"
            broken = f" does not parse — {syntax_message(syntax_error)} — and" if syntax_error else ""
            raise GradingInputError(f"{path}{broken} defines {what}: {wanted}; say which with --assignment")
        spec = ASSIGNMENTS[found[0]]
    # A file that does not parse is graded (its `loads` check fails with the syntax error and
    # its line) whether or not the text shows the function: what it defines is not known.
    if spec.function not in names and syntax_error is None:
        raise GradingInputError(f"{path} does not define {spec.function}{signature(spec)}, the function assignment "
                                f"{spec.name!r} grades (see {spec.readme})")
    answers = _literal_strings(tree, {spec.answer}) if tree is not None and spec.answer else {}
    return Submission(file.resolve(), spec, syntax_error, answers)
