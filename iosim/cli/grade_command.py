"""``iosim grade FILE``: check a student's schedule for exactness, capacity and HBM traffic."""

from __future__ import annotations

import argparse
import json
import pathlib

from .arguments import non_negative_int, positive_int


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
        help="grade an assignment: exact output, tiles within SRAM, HBM traffic of the algorithm",
        description="Run a student's file in a sandboxed process (its own Linux namespaces: none of your files, "
                    "processes or network; time, memory and process limits) and check it on "
                    "several random inputs, ragged and causal among them: the output against a float64 reference, "
                    "the tiles against shared memory and registers, the HBM traffic against the algorithm's count "
                    "(or a band of the best blocks). Exit 0 when every check passes, 1 otherwise, 2 on bad input.",
        epilog="Assignments: " + "; ".join(f"{n}: {a.function}, {a.title}" for n, a in ASSIGNMENTS.items())
               + ". See examples/assignments/.",
    )
    p.add_argument("file", metavar="FILE", help="the student's Python file")
    p.add_argument("--assignment", choices=list(ASSIGNMENTS),
                   help="which assignment (default: recognised from the function the file defines)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT_S,
                   help="wall-clock limit for the student's code, all inputs together, seconds "
                        f"(default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--memory-mb", type=positive_int, default=DEFAULT_MEMORY_MB,
                   help=f"address-space limit of the student's process, MiB (default {DEFAULT_MEMORY_MB})")
    p.add_argument("--seed", type=non_negative_int, help="seed of the random inputs (default: a fresh one, printed)")
    p.add_argument("--no-isolation", action="store_true",
                   help="run the student's process without the sandbox's Linux namespaces, as your user with your "
                        "files and the network in reach (where namespaces are not available; trusted files only); "
                        "every report then carries a warning")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..grading import grade
    from ..grading.isolation import NO_ISOLATION_WARNING, IsolationUnavailable, isolation_available, unavailable_message

    isolation = not args.no_isolation
    if isolation and pathlib.Path(args.file).is_file():  # a missing file is bad input first
        available, reason = isolation_available()
        if not available:
            raise IsolationUnavailable(unavailable_message(reason))
    report = grade(args.file, args.assignment, timeout_s=args.timeout, memory_mb=args.memory_mb, seed=args.seed,
                   isolation=isolation)
    if args.format == "json":
        data = {**report.to_dict(), "isolation": isolation}
        if not isolation:
            data["warning"] = NO_ISOLATION_WARNING
        print(json.dumps(data, indent=2))
    else:
        print((NO_ISOLATION_WARNING + "\n\n" if not isolation else "") + report.render())
    return report.exit_code
