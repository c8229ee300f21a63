"""Units written in hardware-profile YAML, and their conversion to SI base units.

Every hardware number in a profile is written as ``{value, unit, source}`` so that a reader
sees the unit the vendor printed ("228 KiB", "3.35 TB/s") while the simulator only ever
sees base units (bytes, bytes/s, FLOP/s, op/s, Hz). Each field accepts one *kind* of
unit; a bandwidth written where a capacity belongs is an error, not a silent conversion.

Decimal prefixes are powers of 10 (1 KB = 1000 B, 1 TB/s = 10^12 B/s) and binary prefixes
are powers of 2 (1 KiB = 1024 B), matching the vendors: NVIDIA's "TB/s" is decimal, and
its CUDA tables' "KB" is really KiB, so profiles write KiB there.
"""

from __future__ import annotations

import difflib

#: kind -> {unit as written -> factor to the SI base unit}. Integer factors keep byte
#: sizes exact.
UNITS: dict[str, dict[str, int | float]] = {
    "bytes": {
        "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
        "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
    },
    "bandwidth": {
        "B/s": 1, "KB/s": 10**3, "MB/s": 10**6, "GB/s": 10**9, "TB/s": 10**12,
        "KiB/s": 2**10, "MiB/s": 2**20, "GiB/s": 2**30,
    },
    "flops": {"FLOP/s": 1, "GFLOP/s": 10**9, "TFLOP/s": 10**12, "PFLOP/s": 10**15},
    "ops": {"op/s": 1, "Gop/s": 10**9, "Top/s": 10**12},
    "frequency": {"Hz": 1, "MHz": 10**6, "GHz": 10**9},
    "time": {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9},
}

#: kind -> what the kind means, for error messages ("needs a byte size").
KIND_NAMES = {
    "bytes": "a byte size",
    "bandwidth": "a bandwidth",
    "flops": "a FLOP rate",
    "ops": "an operation rate",
    "frequency": "a clock frequency",
    "time": "a duration",
}


#: kind -> the base unit values are kept in ("" for a count), for messages
BASE_UNITS = {"count": "", "bytes": "B", "bandwidth": "B/s", "flops": "FLOP/s", "ops": "op/s",
              "frequency": "Hz", "time": "s"}


class UnitError(ValueError):
    """A unit that is unknown, or of the wrong kind for the field it was written in."""


def unit_kind(unit: str) -> str | None:
    """The kind ("bytes", "bandwidth", ...) a unit belongs to, or None if unknown."""
    for kind, table in UNITS.items():
        if unit in table:
            return kind
    return None


def factor(unit: str, kind: str) -> int | float:
    """The factor that turns a value written in ``unit`` into base units of ``kind``.

    Raises :class:`UnitError` with a message that names the accepted units (and the
    closest match) when ``unit`` is unknown or belongs to another kind.
    """
    table = UNITS[kind]
    if unit in table:
        return table[unit]
    accepted = ", ".join(table)
    other = unit_kind(unit)
    if other is not None:
        raise UnitError(
            f"{unit!r} is {KIND_NAMES[other]} unit, but this field needs "
            f"{KIND_NAMES[kind]} ({accepted})"
        )
    same_letters = [u for u in table if u.lower() == str(unit).lower()]
    close = same_letters or difflib.get_close_matches(str(unit), list(table), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UnitError(f"unknown unit {unit!r}; {KIND_NAMES[kind]} takes one of {accepted}{hint}")


def to_base(value: float, unit: str, kind: str) -> float:
    """``value`` written in ``unit`` converted to the base unit of ``kind``."""
    return value * factor(unit, kind)


def format_bytes(n: float) -> str:
    """A byte count in the largest binary unit that keeps it readable: 233472 -> '228 KiB'."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        size = UNITS["bytes"][unit]
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"
