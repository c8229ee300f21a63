"""``iosim grade FILE``: check a student's schedule for exactness, capacity and HBM traffic."""

from __future__ import annotations

import argparse
import json

from .arguments import positive_int


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
        description="Run a student's file in a separate process (time and memory limits) and check it on "
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
    p.add_argument("--seed", type=int, help="seed of the random inputs (default: a fresh one, printed)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..grading import grade

    report = grade(args.file, args.assignment, timeout_s=args.timeout, memory_mb=args.memory_mb, seed=args.seed)
    if args.format == "json":
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.render())
    return report.exit_code
