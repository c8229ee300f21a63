"""Grade a generated class in one command (issue 15): N submissions — correct, wrong,
cheating and crashing — graded by `iosim grade DIR --assignment fa2 --jobs J --csv FILE`
into a gradebook, each checked against the verdict its kind must get.

    python benchmarks/grade_class.py [--students 100] [--jobs 2] [--out gradebook.csv]

Kinds, in turn: the instructor's solution (passes, score 100); a solution whose online
softmax forgets to rescale (fails exactness); the instructor's cheats and the red-team
cheats of tests/cli/redteam/ (fail); a file that raises, one that does not parse, one
without the graded function (score 0-20, never 100). Prints the time and a summary line;
exits 1 if any student's verdict is not what its kind must get.
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
INSTRUCTOR = ROOT / "examples" / "assignments" / "instructor"
CRASHING = ["def fa2_forward(ctx):\n    raise RuntimeError('boom')\n", "def fa2_forward(ctx:\n", "x = 1\n"]


def cheats() -> list[str]:
    """Every cheat whose header names the fa2 assignment (red team) and the instructor's."""
    out = [p.read_text() for p in sorted((INSTRUCTOR / "cheats").glob("*.py"))]
    for p in sorted((ROOT / "tests" / "cli" / "redteam").glob("*.py")):
        text = p.read_text()
        if "def fa2_forward" in text:
            out.append(text)
    return out


def make_class(folder: pathlib.Path, students: int) -> dict:
    """Write ``students`` submissions under ``folder``; student -> kind."""
    solution = (INSTRUCTOR / "fa2_solution.py").read_text()
    wrong = (INSTRUCTOR / "cheats" / "no_rescale.py").read_text()
    pool = cheats()
    kinds = {}
    for k in range(students):
        kind = ("correct", "wrong", "cheat", "crash")[k % 4]
        text = {"correct": solution, "wrong": wrong, "cheat": pool[(k // 4) % len(pool)],
                "crash": CRASHING[(k // 4) % len(CRASHING)]}[kind]
        (folder / f"student{k:03d}.py").write_text(text)
        kinds[f"student{k:03d}"] = kind
    return kinds


def wrong_verdicts(kinds: dict, rows: dict) -> list:
    """(student, kind, score) of every student whose gradebook row is missing or whose score
    is not what its kind must get: 100 for a correct submission, below 100 for any other."""
    wrong = []
    for student, kind in kinds.items():
        score = float(rows[student]["score"]) if student in rows else None
        if score is None or (kind == "correct") != (score == 100.0):
            wrong.append((student, kind, score))
    return wrong


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default="gradebook.csv")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kinds = make_class(pathlib.Path(tmp), args.students)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "iosim", "grade", tmp, "--assignment", "fa2", "--jobs", str(args.jobs),
                        "--csv", args.out], stdout=subprocess.DEVNULL)
        took = time.perf_counter() - start
    with open(args.out) as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    wrong = wrong_verdicts(kinds, rows)
    print(f"{len(rows)} of {args.students} students in the gradebook in {took:.1f} s with --jobs {args.jobs}; "
          f"{len(wrong)} verdicts not what their kind must get{': ' + str(wrong[:5]) if wrong else ''}")
    return 1 if wrong or len(rows) != args.students else 0


if __name__ == "__main__":
    sys.exit(main())
