"""``iosim profiles``: the built-in hardware profiles and their key figures."""

from __future__ import annotations

import argparse
import json

from ..hardware import list_profiles, load_profile
from ..report.csv_rows import records_csv
from ..report.tables import render_table
from .commands import HELP


def register(subparsers) -> None:
    p = subparsers.add_parser("profiles", help=HELP["profiles"],
                              description="List the built-in hardware profiles with their key figures.")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    rows = [load_profile(name).summary_row() for name in list_profiles()]
    if args.format == "json":
        print(json.dumps({"schema_version": 1, "profiles": rows}, indent=2))
        return 0
    if args.format == "csv":
        print(records_csv(rows), end="")
        return 0
    # Descriptions are long; the table keeps to the figures (the JSON has everything).
    columns = [c for c in (rows[0] if rows else []) if c != "description"]
    print(render_table([[_cell(r[c]) for c in columns] for r in rows], columns))
    return 0


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.4g}"
    return str(value)
