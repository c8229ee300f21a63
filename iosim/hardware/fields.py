"""Check one field of a profile at a time: mappings, strings and sourced quantities.

The helpers of :mod:`.loader`. Each adds what is wrong to a :class:`Problems` list, with
the field path first, and quotes a value only as a short excerpt (:func:`describe`), so a
message never echoes a whole file.
"""

from __future__ import annotations

import difflib
import math
from typing import Any

from ..errors import ProfileError
from . import units
from .limits import MAX_PROBLEMS, REPRESENTABLE, excerpt, one_line
from .profile import Quantity
from .sanity import show
from .yaml_reader import RejectedNumber, join_path


def describe(value: Any) -> str:
    """How a YAML value reads in a message: a short excerpt, never a whole file."""
    if isinstance(value, RejectedNumber):
        return value.reason
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()} (booleans are not numbers)"
    if value is None:
        return "nothing (null)"
    if isinstance(value, str):
        return f"the string {excerpt(value)}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return excerpt(value)


class Problems(list):
    def add(self, path: str, message: str) -> None:
        self.append(one_line(f"{path or '(top level)'}: {message}"))


def fail(source: str, problems: list[str]) -> ProfileError:
    """The error listing ``problems``, at most :data:`~.limits.MAX_PROBLEMS` of them."""
    shown = list(problems[:MAX_PROBLEMS])
    if len(problems) > MAX_PROBLEMS:
        shown.append(f"(more): {len(problems) - MAX_PROBLEMS:,} more problems not listed")
    return ProfileError(source, shown)


def fields(obj: Any, path: str, required: tuple, optional: tuple, problems: Problems,
            what: str = "a mapping", context: str = "") -> dict | None:
    """Check ``obj`` is a mapping with the required keys and no others; ``context``
    is appended to unknown-key messages."""
    if not isinstance(obj, dict):
        problems.add(path, f"expected {what}, got {describe(obj)}")
        return None
    allowed = (*required, *optional)
    for key in obj:
        if key not in allowed:
            close = difflib.get_close_matches(str(key)[:64], allowed, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"expected one of {', '.join(allowed)}"
            problems.add(join_path(path, key), f"unknown key; {hint}{context}")
    for key in required:
        if key not in obj:
            problems.add(join_path(path, key), "missing required field")
    return obj


#: the longest name and description a profile may have (they are quoted in messages)
_MAX_CHARS = {"name": 64, "description": 500, "vendor": 64}


def string(data: dict, key: str, problems: Problems) -> str:
    value = data.get(key)
    if key in data and (not isinstance(value, str) or not value.strip()):
        problems.add(key, f"expected a non-empty string, got {describe(value)}")
    elif key in data and (len(value) > _MAX_CHARS[key] or not value.strip().isprintable()):
        problems.add(key, f"expected one line of at most {_MAX_CHARS[key]} printable characters, "
                          f"got {excerpt(value)}")
    return value if isinstance(value, str) else ""


def quantity(obj: Any, path: str, kind: str, problems: Problems) -> Quantity | None:
    """Parse ``{value, unit, source}``; ``kind`` is a key of :data:`units.UNITS` or "count"."""
    shape = "{value, source}" if kind == "count" else "{value, unit, source}"
    before = len(problems)
    d = fields(obj, path, ("value", "source"), ("unit",), problems,
                what=f"a quantity {shape} (every hardware number needs a source)")
    if d is None:
        return None
    value, unit, source = d.get("value"), d.get("unit"), d.get("source")
    if "value" in d:
        _check_number(value, f"{path}.value", kind, problems)
    if "source" in d and (not isinstance(source, str) or not source.strip()):
        problems.add(f"{path}.source", "must be a non-empty string saying where the number comes from")
    scale: float = 1
    if kind == "count":
        if "unit" in d:
            problems.add(f"{path}.unit", "a count takes no unit")
    elif "unit" not in d:
        problems.add(f"{path}.unit", f"missing unit; {units.KIND_NAMES[kind]} takes one of "
                                     f"{', '.join(units.UNITS[kind])}")
    elif not isinstance(unit, str):
        problems.add(f"{path}.unit", f"expected a unit string, got {describe(unit)}")
    else:
        try:
            scale = units.factor(unit, kind)
        except units.UnitError as e:
            problems.add(f"{path}.unit", str(e))
    if len(problems) > before:
        return None
    q = Quantity(value * scale, unit if kind != "count" else "", source.strip())
    written = f"{value:,}" if kind == "count" and isinstance(value, int) else f"{value:g}"
    written += f" {unit}" if kind != "count" else ""
    return q if _representable(q, written, path, kind, problems) else None


def _check_number(value: Any, path: str, kind: str, problems: Problems) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        problems.add(path, f"expected a number, got {describe(value)}")
    elif isinstance(value, float) and not math.isfinite(value):
        problems.add(path, f"must be a finite number > 0, got {value!r}")
    elif value <= 0:
        problems.add(path, f"must be > 0, got {excerpt(value)}")
    elif isinstance(value, int) and value.bit_length() > 128:
        problems.add(path, f"{excerpt(value)} is far too large")
    elif kind == "count" and value != int(value):
        problems.add(path, f"must be a whole number, got {value!r}")


def _representable(q: Quantity, written: str, path: str, kind: str, problems: Problems) -> bool:
    """Whether ``q`` (in base units) is finite and inside :data:`~.limits.REPRESENTABLE`."""
    low, high = REPRESENTABLE[kind]
    how = {"count": "count", "bytes": "bytes"}.get(kind, units.BASE_UNITS[kind])
    try:
        finite = math.isfinite(q.value)
    except OverflowError:
        finite = False
    if not finite:
        problems.add(path, f"{written} overflows to infinity in {units.BASE_UNITS[kind] or 'a count'}")
    elif not low <= q.value <= high:
        scaled = show(q.value, how)
        also = f" = {scaled}" if scaled != written else ""
        problems.add(path, f"{written}{also} is outside the range iosim computes with, "
                           f"{show(low, how)} to {show(high, how)} (allow_unusual or not)")
    else:
        return True
    return False


def whole_bytes(q: Quantity | None, path: str, problems: Problems) -> int | None:
    if q is None:
        return None
    n = round(q.value)
    if abs(q.value - n) > 1e-9 * q.value:
        in_bytes = f" = {q.value:g} B" if q.unit != "B" else ""
        problems.add(path, f"must be a whole number of bytes, got {q.as_written}{in_bytes}")
        return None
    return n
