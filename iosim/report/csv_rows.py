"""Rows of dicts as CSV, for the subcommands whose table is a list of records (``profiles``,
``pebble``): one column per key of the first row, nested values as JSON."""

from __future__ import annotations

import csv
import io
import json


def records_csv(rows: list[dict], leading: dict | None = None) -> str:
    """``rows`` as CSV; ``leading`` columns (the same for every row, e.g. the instance) first."""
    leading = leading or {}
    columns = list(leading) + [c for c in (rows[0] if rows else {}) if c not in leading]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        merged = {**leading, **row}
        writer.writerow([_cell(merged.get(c)) for c in columns])
    return out.getvalue()


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True)
    return str(value)
