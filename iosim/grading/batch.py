"""Grading a class: many submissions, one gradebook (``iosim grade DIR``).

:func:`submissions` finds the files (each ``.py`` under a folder, its student named by its
path below the folder, e.g. ``alice/fa2.py`` → ``alice/fa2``); :func:`grade_many` grades
them on ``jobs`` worker processes (each submission in its own sandbox, as
:func:`~iosim.grading.grade` runs it) and returns one :class:`GradebookRow` per student,
in the order found, with the report (or, for a file that cannot be graded at all, the
reason and a score of 0).
"""

from __future__ import annotations

import collections
import csv
import io
import os
import pathlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from ..errors import IosimError
from .feedback import SCORED, csv_cell, path_text, printable

#: the most submissions one command grades
MAX_SUBMISSIONS = 10_000


@dataclass
class GradebookRow:
    student: str
    file: str
    score: float
    verdicts: dict = field(default_factory=dict)   # check -> "pass" / "fail"
    reason: str = ""                               # the first failing check's detail, or why it was not graded
    report: dict | None = None                     # the whole report (None: not graded)
    assignment: str = ""                           # the assignment it was graded as ("": not graded)


def submissions(paths: list) -> list[tuple[str, pathlib.Path]]:
    """(student, file) for every submission the paths name: a file, or every ``.py`` under a
    folder (``__pycache__`` and hidden folders skipped), sorted; a path that is neither is
    :class:`~iosim.errors.IosimError`. A symbolic link under a folder is not followed but
    listed, so that its row says it was not graded (a link could hand in another's file); a
    folder given, link or not, is the instructor's and is entered."""
    found = []
    for given in paths:
        path = pathlib.Path(given)
        if path.is_file():
            found.append((path.stem, path))
        elif path.is_dir():
            found += _under(path)
        else:
            raise IosimError(f"{given}: no such file or folder")
    if not found:
        raise IosimError("no submissions (.py files) in " + ", ".join(map(str, paths)))
    if len(found) > MAX_SUBMISSIONS:
        raise IosimError(f"{len(found):,} submissions; at most {MAX_SUBMISSIONS:,} per command")
    return found


def _under(root: pathlib.Path) -> list[tuple[str, pathlib.Path]]:
    """The ``.py`` files and the symbolic links (to files or folders) below ``root`` (walked at its
    real path, so that a linked class folder is entered), sorted by student, without entering a
    linked folder below it."""
    found, root = [], root.resolve()
    for folder, dirs, files in os.walk(root):
        here = pathlib.Path(folder)
        dirs[:] = [d for d in dirs if not d.startswith((".", "__pycache__"))]
        linked = [d for d in dirs if (here / d).is_symlink()]
        dirs[:] = [d for d in dirs if d not in linked]
        for name in linked + [f for f in files if f.endswith(".py") and not f.startswith(".")]:
            rel = (here / name).relative_to(root)
            found.append((path_text(rel.with_suffix("") if name.endswith(".py") else rel), here / name))
    return sorted(found)


def grade_one(student: str, file: str, kwargs: dict) -> GradebookRow:
    """One submission's row (run in a worker process)."""
    from .grader import grade

    try:
        report = grade(file, **kwargs)
    except IosimError as exc:         # not gradable: no graded function, unreadable file, ...
        return GradebookRow(student, path_text(file), 0.0, reason=f"not graded: {exc}")
    failing = next((c for c in report.checks if not c.passed), None)
    return GradebookRow(student, path_text(file), report.score, {c.name: c.status for c in report.checks},
                        "" if failing is None else f"{failing.name}: {failing.detail}", report.to_dict(),
                        report.assignment)


def grade_many(found: list, jobs: int, progress=None, **kwargs) -> list[GradebookRow]:
    """Every submission of ``found`` graded (``kwargs`` go to :func:`~iosim.grading.grade`),
    on ``jobs`` processes; ``progress()`` is called as each one finishes."""
    jobs = min(jobs, len(found))
    if jobs <= 1:
        rows = []
        for student, file in found:
            rows.append(grade_one(student, str(file), kwargs))
            if progress:
                progress()
        return rows
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(grade_one, student, str(file), kwargs) for student, file in found]
        for f in futures:
            f.add_done_callback(lambda _: progress and progress())
        return [f.result() for f in futures]


def gradebook_csv(rows: list) -> str:
    """student, score, each scored check's verdict, the reason: one row per submission."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", "file", "assignment", "score", *SCORED, "reason"])
    for r in rows:
        writer.writerow([csv_cell(r.student), csv_cell(r.file), r.assignment, f"{r.score:g}",
                         *(r.verdicts.get(c, "") for c in SCORED), csv_cell(r.reason)])
    return out.getvalue()


def gradebook_table(rows: list) -> str:
    """The gradebook as text, a line per student."""
    width = max(len("student"), *(len(r.student) for r in rows))
    named = max(len("assignment"), *(len(r.assignment) for r in rows))
    lines = [f"{'student':{width}}  {'assignment':{named}}  score  " + " ".join(f"{c:9}" for c in SCORED)
             + "  reason"]
    for r in rows:
        verdicts = " ".join(f"{r.verdicts.get(c, '-'):9}" for c in SCORED)
        reason = r.reason if len(r.reason) <= 90 else r.reason[:89] + "…"
        lines.append(printable(f"{r.student:{width}}  {r.assignment or '-':{named}}  {r.score:5g}  {verdicts}  "
                               f"{reason}".replace("\n", " ")))
    mean = sum(r.score for r in rows) / len(rows)
    lines.append(f"\n{len(rows)} submissions, mean score {mean:.1f}, "
                 f"{sum(r.report is not None and r.report['passed'] for r in rows)} pass every check")
    return "\n".join(lines + mixed_assignments(rows))


def mixed_assignments(rows: list) -> list[str]:
    """A warning line where the graded rows were graded as more than one assignment (each file
    by the graded function it defines, when no assignment was given), else nothing."""
    counts = collections.Counter(r.assignment for r in rows if r.assignment)
    if len(counts) < 2:
        return []
    each = ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))
    return [printable(f"warning: graded as different assignments ({each}), each file by the graded function it "
                      "defines; give --assignment to grade every file as one")]
