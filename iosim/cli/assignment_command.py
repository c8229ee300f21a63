"""``iosim assignment export NAME|PATH DIR``: write an assignment's student pack."""

from __future__ import annotations

import argparse

from .commands import HELP


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "assignment", help=HELP["assignment"],
        description="Work with an assignment: a built-in one (fa1, fa2, blocks) or the folder of your own, with its "
                    "assignment.yaml (docs/grading.md, \"Adding an assignment\").")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    export = actions.add_parser(
        "export", help="write the student pack (README and starter) into a new or empty folder",
        description="Copy the files the assignment's manifest lists under `student` (its README and starter) into "
                    "DIR, and nothing else: never the manifest, the reference schedule or the instructor's files. "
                    "DIR must be new or empty.")
    export.add_argument("assignment", metavar="NAME|PATH", help="a built-in assignment or an assignment's folder")
    export.add_argument("directory", metavar="DIR", help="where the pack goes (a new or empty folder)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..grading.student_pack import export_pack

    written = export_pack(args.assignment, args.directory)
    print(f"wrote the student pack ({len(written)} files) into {args.directory}:")
    for path in written:
        print(f"  {path}")
    return 0
