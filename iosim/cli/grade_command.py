"""``iosim grade FILE``: check a student's schedule for exactness, capacity and HBM traffic."""

from __future__ import annotations

import argparse
import json
import pathlib

from ..grading.batch import grade_many, gradebook_csv, gradebook_table, mixed_assignments, submissions
from ..report.files import check_writable
from .arguments import bounded_int, non_negative_int, positive_int
from .commands import HELP


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def register(subparsers) -> None:
    from ..grading import ASSIGNMENTS, DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S

    p = subparsers.add_parser(
        "grade",
        help=HELP["grade"],
        description="Run a student's file in a sandboxed process (its own Linux namespaces: none of your files, "
                    "processes or network; time, memory and process limits) and check it on "
                    "several random inputs, ragged and causal among them: the output against a float64 reference, "
                    "the tiles against shared memory and registers, the HBM traffic against the algorithm's count "
                    "(or a band of the best blocks). Exit 0 when every check passes, 1 otherwise, 2 on bad input.",
        epilog="Assignments: " + "; ".join(f"{n}: {a.function}, {a.title}" for n, a in ASSIGNMENTS.items())
               + ". See examples/assignments/; an assignment of your own is a folder with an assignment.yaml "
                 "(docs/grading.md, \"Adding an assignment\").",
    )
    p.add_argument("files", metavar="FILE", nargs="+",
                   help="the student's Python file; several files or folders (every .py under them, a student "
                        "each, named by its path) grade a class into a gradebook")
    p.add_argument("--assignment", metavar="NAME|PATH",
                   help=f"which assignment: {', '.join(ASSIGNMENTS)}, or the folder of one with its assignment.yaml "
                        "(default: recognised from the built-in function the file defines)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT_S,
                   help="wall-clock limit for the student's code, all inputs together, seconds "
                        f"(default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--memory-mb", type=positive_int, default=DEFAULT_MEMORY_MB,
                   help=f"address-space limit of the student's process, MiB (default {DEFAULT_MEMORY_MB})")
    p.add_argument("--seed", type=non_negative_int, help="seed of the random inputs (default: a fresh one, printed)")
    p.add_argument("--jobs", type=bounded_int(256), default=1,
                   help="submissions graded at once, each in its own sandbox (class grading; default 1, at most 256)")
    p.add_argument("--csv", metavar="GRADEBOOK", help="also write the gradebook (student, score, each check, the "
                   "reason) to this CSV file (class grading)")
    p.add_argument("--no-isolation", action="store_true",
                   help="run the student's process without the sandbox's Linux namespaces, as your user with your "
                        "files and the network in reach (where namespaces are not available; trusted files only); "
                        "every report then carries a warning")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..grading import GradingInputError, grade
    from ..grading.isolation import NO_ISOLATION_WARNING, IsolationUnavailable, isolation_available, unavailable_message

    isolation = not args.no_isolation
    spec = _assignment(args.assignment)
    single = len(args.files) == 1 and not pathlib.Path(args.files[0]).is_dir() and args.csv is None
    found = None if single else _not_the_assignment(submissions(args.files), spec)   # missing files: bad input
    if isolation and (found or pathlib.Path(args.files[0]).is_file()):
        available, reason = isolation_available()
        if not available:
            raise IsolationUnavailable(unavailable_message(reason))
    if not single:
        return _grade_class(args, found, isolation)
    try:
        report = grade(args.files[0], spec, timeout_s=args.timeout, memory_mb=args.memory_mb,
                       seed=args.seed, isolation=isolation)
    except GradingInputError as exc:
        if args.format != "json":
            raise
        # scripts reading the JSON get a report too: not graded, score 0, and why (exit 2 all the same)
        print(json.dumps({"schema_version": 1, "file": args.files[0], "assignment": args.assignment, "passed": False,
                          "score": 0.0,
                          "graded": False, "error": str(exc)}, indent=2))
        return 2
    if args.format == "json":
        data = {**report.to_dict(), "isolation": isolation}
        if not isolation:
            data["warning"] = NO_ISOLATION_WARNING
        print(json.dumps(data, indent=2))
    else:
        print((NO_ISOLATION_WARNING + "\n\n" if not isolation else "") + report.render())
    return report.exit_code


def _assignment(given: str | None):
    """The assignment --assignment names, or None: a bad name or folder, or a bad manifest, is bad
    input before any sandbox starts or any file is read (exit 2, one line; a manifest's own
    problem names the file and the field)."""
    from ..grading.assignments import ManifestError, find_assignment
    from ..grading.specs import GradingInputError

    if given is None:
        return None
    try:
        return find_assignment(given)
    except ManifestError:
        raise
    except GradingInputError as exc:
        raise GradingInputError(f"--assignment: {exc}") from None


def _not_the_assignment(found: list, spec) -> list:
    """The submissions, less the files of an assignment folder of one's own (its reference, the
    instructor's solution), which a class folder may hold too: they are no student's."""
    from ..grading.specs import GradingInputError

    if spec is None or spec.source is None or spec.source.builtin:
        return found
    folder = spec.source.directory.resolve()
    kept = [(student, file) for student, file in found     # a link stays, for its row to say it was not graded
            if file.is_symlink() or not file.resolve().is_relative_to(folder)]
    if not kept:
        raise GradingInputError(f"no submissions outside the assignment's folder {spec.source.directory}")
    return kept


def _grade_class(args: argparse.Namespace, found: list, isolation: bool) -> int:
    """Every submission into a gradebook: the table (or, with --format json, the gradebook and
    every report) on stdout, the CSV in --csv; exit 0 once every submission has a row."""
    from ..grading.isolation import NO_ISOLATION_WARNING
    from ..studies.progress import ProgressBar

    if args.csv is not None:
        check_writable(args.csv, "--csv")
    kwargs = dict(assignment=args.assignment, timeout_s=args.timeout, memory_mb=args.memory_mb, seed=args.seed,
                  isolation=isolation)
    with ProgressBar(len(found), "grading") as bar:
        rows = grade_many(found, args.jobs, progress=bar.update, **kwargs)
    if args.csv is not None:
        pathlib.Path(args.csv).write_bytes(gradebook_csv(rows).encode("utf-8"))   # whole before the file is opened
    warning = [] if isolation else [NO_ISOLATION_WARNING]
    if args.format == "json":
        print(json.dumps({"schema_version": 1, "isolation": isolation, "warnings": warning + mixed_assignments(rows),
                          "gradebook": [{k: v for k, v in vars(r).items() if k != "report"} for r in rows],
                          "reports": [r.report for r in rows]}, indent=2))
    else:
        print("\n\n".join(warning + [gradebook_table(rows)]))
    return 0
