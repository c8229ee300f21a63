"""Checks across a profile's fields: capacities ordered along the hierarchy, figures plausible.

Two kinds of check, run by :mod:`.loader` once every field has been read:

* :func:`check_ordering` — consistency, always an error: a cache holds no more than the
  DRAM behind it, and one SM's on-chip memory (scratchpad, registers) no more than any
  device-wide level (the per-block limit is checked against the per-SM one as each level
  is read). A profile that breaks these cannot describe a GPU, unusual or not.
* :func:`check_plausible` — each figure inside :data:`~.limits.PLAUSIBLE` (1 to 100,000
  SMs, bandwidths 1 MB/s to 10 PB/s, ...). Outside, the profile is an error unless it
  says ``allow_unusual: true``; then each becomes a warning recorded on the profile.

Both return ``(field path, message)`` pairs; the loader decides what they become.
"""

from __future__ import annotations

from collections.abc import Mapping

from .limits import PLAUSIBLE
from .profile import Level, Quantity
from .units import unit_kind
from .yaml_reader import join_path

_DEVICE, _ON_CHIP = ("dram", "cache"), ("scratchpad", "registers")

#: range key of PLAUSIBLE -> how a message names the figure
_WHAT = {
    "sm_count": "an SM count",
    "device capacity": "a device-wide capacity (dram, cache)",
    "on-chip capacity": "an on-chip capacity per SM or per block",
    "bandwidth": "a bandwidth",
    "flops": "a FLOP rate",
    "ops": "an operation rate",
    "frequency": "a clock",
    "time": "a duration",
}


def show(value: float, how: str) -> str:
    """``value`` in base units, readably: 1 PiB, 10 PB/s, 100,000."""
    if how == "count":
        return f"{value:,.0f}" if value < 1e15 else f"{value:.3g}"
    if how == "bytes":
        for unit, size in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20),
                           ("KiB", 2**10)):
            if value >= size:
                return f"{value / size:.4g} {unit}"
        return f"{value:.4g} B"
    if how == "s":
        for unit, size in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
            if value >= size:
                return f"{value / size:.4g} {unit}"
        return f"{value:.4g} s"
    if value >= 1e21:
        return f"{value:.3g} {how}"
    for prefix, size in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.4g} {prefix}{how}"
    return f"{value:.4g} {how}"


def _range_key(path: str, q: Quantity) -> str | None:
    if path == "sm_count":
        return "sm_count"
    if path.startswith("levels."):
        return "device capacity" if path.endswith(".capacity") else "on-chip capacity"
    if path == "measured.code_fetch_free":    # code an SM runs without waiting: on-chip, like its caches
        return "on-chip capacity"
    kind = unit_kind(q.unit)
    return kind if kind in PLAUSIBLE else None


def check_plausible(quantities: Mapping[str, Quantity]) -> list[tuple[str, str]]:
    """``(path, message)`` for each quantity outside its plausible range."""
    out = []
    for path, q in quantities.items():
        key = _range_key(path, q)
        if key is None:
            continue
        low, high, how = PLAUSIBLE[key]
        if not low <= q.value <= high:
            written = q.as_written if q.unit else show(q.value, how)
            out.append((path, f"{written} is outside the plausible range of {_WHAT[key]}, "
                              f"{show(low, how)} to {show(high, how)}"))
    return out


def check_ordering(levels: Mapping[str, Level], quantities: Mapping[str, Quantity]) -> list[tuple[str, str]]:
    """``(path, message)`` for each capacity larger than a level further out allows."""
    def written(level: Level, key: str) -> str:
        q = quantities.get(f"{join_path('levels', level.name)}.{key}")
        return q.as_written if q is not None else show(level.capacity_bytes, "bytes")

    out = []
    device = [lv for lv in levels.values() if lv.role in _DEVICE and lv.capacity_bytes]
    for cache in (lv for lv in device if lv.role == "cache"):
        for dram in (lv for lv in device if lv.role == "dram"):
            if cache.capacity_bytes > dram.capacity_bytes:
                out.append((f"{join_path('levels', cache.name)}.capacity",
                            f"{written(cache, 'capacity')} exceeds the capacity of the dram level "
                            f"{join_path('', dram.name)} ({written(dram, 'capacity')}); a cache holds "
                            "less than the memory behind it"))
    smallest = min(device, key=lambda lv: lv.capacity_bytes, default=None)
    for level in levels.values():
        if level.role in _ON_CHIP and smallest is not None and level.capacity_bytes > smallest.capacity_bytes:
            out.append((f"{join_path('levels', level.name)}.capacity_per_sm",
                        f"{written(level, 'capacity_per_sm')} per SM exceeds the capacity of the "
                        f"{smallest.role} level {join_path('', smallest.name)} ({written(smallest, 'capacity')}); "
                        "one SM's on-chip memory is smaller than every device-wide level"))
    return out
