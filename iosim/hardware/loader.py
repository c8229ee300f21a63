"""Read hardware profiles from YAML, validate them, and build :class:`HardwareProfile` s.

Validation collects every problem in a file and raises one :class:`ProfileError` listing
each with its field path (``levels.smem.capacity_per_block: 300 KiB exceeds
capacity_per_sm (228 KiB)``), so a user fixes a file in one pass. The YAML is read by
:mod:`.yaml_reader`, which reports duplicate keys (at any depth) the same way. The schema
is documented field by field in ``hardware_profiles/README.md``.
"""

from __future__ import annotations

import difflib
import functools
import importlib.resources
import math
import os
from pathlib import Path
from typing import Any

import networkx as nx

from ..errors import ProfileError
from . import units
from .profile import COMPUTE_KEYS, MEASURED_KEYS, ROLES, HardwareProfile, Level, Link, Quantity
from .yaml_reader import join_path, parse_yaml

SCHEMA_VERSION = 1
_TOP_REQUIRED = ("schema_version", "name", "description", "vendor", "sm_count", "levels", "links")
_TOP_OPTIONAL = ("clock", "compute", "measured")
_PER_DEVICE = ("role", "capacity")  # dram, cache
_PER_SM = ("role", "capacity_per_sm", "capacity_per_block")  # scratchpad, registers
_LEVEL_REQUIRED = {"dram": _PER_DEVICE, "cache": _PER_DEVICE, "scratchpad": _PER_SM, "registers": _PER_SM}


# --------------------------------------------------------------------------- helpers


def _describe(value: Any) -> str:
    """How a YAML value reads in a message."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()} (booleans are not numbers)"
    if value is None:
        return "nothing (null)"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


class _Problems(list):
    def add(self, path: str, message: str) -> None:
        self.append(f"{path or '(top level)'}: {message}")


def _fields(obj: Any, path: str, required: tuple, optional: tuple, problems: _Problems,
            what: str = "a mapping", context: str = "") -> dict | None:
    """Check ``obj`` is a mapping with the required keys and no others; ``context``
    is appended to unknown-key messages."""
    if not isinstance(obj, dict):
        problems.add(path, f"expected {what}, got {_describe(obj)}")
        return None
    allowed = (*required, *optional)
    for key in obj:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"expected one of {', '.join(allowed)}"
            problems.add(join_path(path, key), f"unknown key; {hint}{context}")
    for key in required:
        if key not in obj:
            problems.add(join_path(path, key), "missing required field")
    return obj


def _string(data: dict, key: str, problems: _Problems) -> str:
    value = data.get(key)
    if key in data and (not isinstance(value, str) or not value.strip()):
        problems.add(key, f"expected a non-empty string, got {_describe(value)}")
    return value if isinstance(value, str) else ""


def _quantity(obj: Any, path: str, kind: str, problems: _Problems) -> Quantity | None:
    """Parse ``{value, unit, source}``; ``kind`` is a key of :data:`units.UNITS` or "count"."""
    shape = "{value, source}" if kind == "count" else "{value, unit, source}"
    before = len(problems)
    d = _fields(obj, path, ("value", "source"), ("unit",), problems,
                what=f"a quantity {shape} (every hardware number needs a source)")
    if d is None:
        return None
    value, unit, source = d.get("value"), d.get("unit"), d.get("source")
    if "value" in d:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.add(f"{path}.value", f"expected a number, got {_describe(value)}")
        elif not math.isfinite(value) or value <= 0:
            problems.add(f"{path}.value", f"must be > 0, got {value!r}")
        elif kind == "count" and value != int(value):
            problems.add(f"{path}.value", f"must be a whole number, got {value!r}")
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
        problems.add(f"{path}.unit", f"expected a unit string, got {_describe(unit)}")
    else:
        try:
            scale = units.factor(unit, kind)
        except units.UnitError as e:
            problems.add(f"{path}.unit", str(e))
    if len(problems) > before:
        return None
    return Quantity(value * scale, unit if kind != "count" else "", source.strip())


def _whole_bytes(q: Quantity | None, path: str, problems: _Problems) -> int | None:
    if q is None:
        return None
    n = round(q.value)
    if abs(q.value - n) > 1e-9 * q.value:
        in_bytes = f" = {q.value:g} B" if q.unit != "B" else ""
        problems.add(path, f"must be a whole number of bytes, got {q.as_written}{in_bytes}")
        return None
    return n


# --------------------------------------------------------------------------- sections


def _level(name: Any, obj: Any, quantities: dict, problems: _Problems) -> tuple[str | None, Level | None]:
    """Parse one entry of ``levels``; returns its role (if valid) and the Level (if valid)."""
    path = join_path("levels", name)
    if not isinstance(name, str) or not name:
        problems.add(path, f"a level name must be a non-empty string, got {_describe(name)}")
    if not isinstance(obj, dict):
        problems.add(path, f"expected a mapping with role and capacity fields, got {_describe(obj)}")
        return None, None
    role = obj.get("role")
    if role not in ROLES:
        if "role" in obj:
            close = difflib.get_close_matches(str(role), ROLES, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.add(f"{path}.role", f"unknown role {role!r}; expected one of {', '.join(ROLES)}{hint}")
        else:
            problems.add(f"{path}.role", f"missing required field; one of {', '.join(ROLES)}")
        return None, None
    before = len(problems)
    allowed = (*_LEVEL_REQUIRED[role], "description")
    _fields(obj, path, _LEVEL_REQUIRED[role], ("description",), problems,
            context=f" (a {role} level takes {', '.join(allowed)})")
    description = obj.get("description", "")
    if not isinstance(description, str):
        problems.add(f"{path}.description", f"expected a string, got {_describe(description)}")
    sizes = {}
    for key in _LEVEL_REQUIRED[role][1:]:
        if key in obj:
            q = _quantity(obj[key], f"{path}.{key}", "bytes", problems)
            sizes[key] = (q, _whole_bytes(q, f"{path}.{key}", problems))
            if q is not None:
                quantities[f"{path}.{key}"] = q
    if role in ("dram", "cache"):
        capacity, per_block = sizes.get("capacity", (None, None))[1], None
    else:
        (sm_q, capacity), (block_q, per_block) = (sizes.get(k, (None, None)) for k in _PER_SM[1:])
        if capacity and per_block and per_block > capacity:
            problems.add(f"{path}.capacity_per_block",
                         f"{block_q.as_written} exceeds capacity_per_sm ({sm_q.as_written})")
    if len(problems) > before or not isinstance(name, str) or not name:
        return role, None
    return role, Level(name, role, capacity, per_block, description.strip())


def _levels(raw: Any, quantities: dict, problems: _Problems) -> tuple[dict[str, Level], dict[str, str]]:
    """Parse ``levels``: the valid Levels by name, and the role of every level with a valid role."""
    if not isinstance(raw, dict) or not raw:
        problems.add("levels", f"expected a non-empty mapping of level name to level, got {_describe(raw)}")
        return {}, {}
    levels, roles = {}, {}
    for name, obj in raw.items():
        role, level = _level(name, obj, quantities, problems)
        if role is not None and isinstance(name, str):
            roles[name] = role
        if level is not None:
            levels[name] = level
    _check_roles(roles, problems)
    return levels, roles


def _check_roles(roles: dict[str, str], problems: _Problems) -> None:
    for role, rule in (("dram", "exactly one"), ("scratchpad", "exactly one"), ("registers", "at most one")):
        names = [n for n, r in roles.items() if r == role]
        if len(names) == 1 or (rule == "at most one" and not names):
            continue
        listed = f" ({', '.join(names)})" if names else ""
        problems.add("levels", f"needs {rule} level with role {role!r}, found {len(names)}{listed}")


def _links(obj: Any, names: list, quantities: dict, problems: _Problems) -> list[Link]:
    if not isinstance(obj, list):
        problems.add("links", f"expected a list of {{between: [a, b], bandwidth: ...}}, got {_describe(obj)}")
        return []
    links, seen = [], {}
    for i, item in enumerate(obj):
        path, before = f"links[{i}]", len(problems)
        d = _fields(item, path, ("between", "bandwidth"), (), problems)
        if d is None:
            continue
        between = d.get("between")
        if "between" in d and not (isinstance(between, list) and len(between) == 2
                                   and all(isinstance(x, str) for x in between)):
            problems.add(f"{path}.between", f"expected a list of two level names, got {_describe(between)}")
        elif "between" in d:
            for end in between:
                if end not in names:
                    close = difflib.get_close_matches(end, [str(n) for n in names], n=1, cutoff=0.5)
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    levels = ", ".join(str(n) for n in names)
                    problems.add(f"{path}.between", f"unknown level {end!r}; levels are {levels}{hint}")
            pair = frozenset(between)
            if len(pair) == 1:
                problems.add(f"{path}.between", f"a link must join two different levels, got {between[0]!r} twice")
            elif pair in seen:
                problems.add(f"{path}.between", f"duplicate link {between[0]}-{between[1]} (also links[{seen[pair]}])")
            seen.setdefault(pair, i)
        bw = _quantity(d["bandwidth"], f"{path}.bandwidth", "bandwidth", problems) if "bandwidth" in d else None
        if bw is not None:
            quantities[f"{path}.bandwidth"] = bw
        if len(problems) == before:
            links.append(Link(between[0], between[1], bw.value, bw.source))
    return links


def _check_connected(roles: dict[str, str], links: list[Link], problems: _Problems) -> None:
    graph = nx.Graph()
    graph.add_nodes_from(roles)
    graph.add_edges_from((link.a, link.b) for link in links)
    if len(graph) < 2 or nx.is_connected(graph):
        return
    root = next((n for n, r in roles.items() if r == "dram"), next(iter(roles)))
    cut_off = sorted(set(graph) - nx.node_connected_component(graph, root))
    problems.add("links", f"the hierarchy is not connected: no path from {root} to {', '.join(cut_off)}")


def _rates(obj: Any, section: str, kinds: dict[str, str], quantities: dict, problems: _Problems) -> dict[str, Quantity]:
    """A mapping of rate name -> quantity (``compute``, ``measured``); ``kinds`` gives each
    allowed name's unit kind."""
    d = _fields(obj, section, (), tuple(kinds), problems)
    out = {}
    for key, kind in kinds.items():
        if d and key in d:
            q = _quantity(d[key], f"{section}.{key}", kind, problems)
            if q is not None:
                out[key] = quantities[f"{section}.{key}"] = q
    return out


#: unit kind of each ``compute`` key: FLOP rates, but exponentials per second for ``exp``
_COMPUTE_KINDS = {key: "ops" if key == "exp" else "flops" for key in COMPUTE_KEYS}


def profile_from_data(data: Any, source: str, problems: list[str] | None = None) -> HardwareProfile:
    """Validate parsed YAML ``data`` and build the profile; ``source`` names it in errors.

    ``problems`` carries problems found earlier (duplicate keys) so all are reported at once.
    """
    problems = _Problems(problems or [])
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(data, dict) and "schema_version" in data and (
            isinstance(version, bool) or version != SCHEMA_VERSION):
        problems.add("schema_version", f"unsupported version {_describe(version)}; "
                                       f"this iosim reads schema_version {SCHEMA_VERSION}")
        raise ProfileError(source, problems)  # the rest may follow another schema
    if _fields(data, "", _TOP_REQUIRED, _TOP_OPTIONAL, problems, what="a mapping of profile fields") is None:
        raise ProfileError(source, problems)
    name, description, vendor = (_string(data, k, problems) for k in ("name", "description", "vendor"))
    quantities: dict[str, Quantity] = {}
    sm = _quantity(data["sm_count"], "sm_count", "count", problems) if "sm_count" in data else None
    clock = _quantity(data["clock"], "clock", "frequency", problems) if "clock" in data else None
    for key, q in (("sm_count", sm), ("clock", clock)):
        if q is not None:
            quantities[key] = q
    levels, roles = _levels(data.get("levels", {}), quantities, problems) if "levels" in data else ({}, {})
    links: list[Link] = []
    if "links" in data:
        before_links = len(problems)
        names = list(data["levels"]) if isinstance(data.get("levels"), dict) else []
        links = _links(data["links"], names, quantities, problems)
        if len(problems) == before_links and roles:
            _check_connected(roles, links, problems)
    compute = _rates(data.get("compute", {}), "compute", _COMPUTE_KINDS, quantities, problems)
    measured = _rates(data.get("measured", {}), "measured", MEASURED_KEYS, quantities, problems)
    if problems:
        raise ProfileError(source, problems)
    return HardwareProfile(
        name=name, description=description.strip(), vendor=vendor, source_path=source,
        sm_count=int(sm.value), clock_hz=clock.value if clock else None,
        levels=levels, links=tuple(links), compute=compute, measured=measured, quantities=quantities,
    )


def profile_from_yaml(text: str, source: str = "<string>") -> HardwareProfile:
    """Parse and validate one profile written as YAML text."""
    data, duplicates = parse_yaml(text, source)
    return profile_from_data(data, source, duplicates)


# --------------------------------------------------------------------------- finding profiles


def _builtin_dir():
    """The folder of built-in profiles: package data when installed, else the checkout's."""
    try:
        return importlib.resources.files("iosim.hardware_profiles")
    except (ModuleNotFoundError, TypeError):
        # Source checkout: hardware_profiles/ sits next to the iosim/ package.
        return Path(__file__).resolve().parents[2] / "hardware_profiles"


def list_profiles() -> list[str]:
    """Names of the built-in profiles, sorted (``load_profile`` accepts each)."""
    folder = _builtin_dir()
    if not folder.is_dir():
        return []
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ProfileError(str(path), ["(file): not UTF-8 text"]) from None
    except OSError as e:
        raise ProfileError(str(path), [f"(file): cannot read: {e.strerror or e}"]) from None


@functools.lru_cache(maxsize=None)
def _load_builtin(name: str) -> HardwareProfile:
    resource = _builtin_dir() / f"{name}.yaml"
    profile = profile_from_yaml(_read(resource), str(resource))
    if profile.name != name:
        raise ProfileError(str(resource), [f"name: {profile.name!r} does not match the file name {name!r}"])
    return profile


def _looks_like_path(text: str) -> bool:
    return "/" in text or os.sep in text or text.endswith((".yaml", ".yml"))


def load_profile(name_or_path: str | os.PathLike) -> HardwareProfile:
    """Load a built-in profile by name ("h100-sxm") or a user's YAML file by path.

    A string containing a path separator or ending in .yaml/.yml is a path; anything else
    is a built-in name. Raises :class:`ProfileError` listing every problem found, or, for
    an unknown name, listing the built-in names. Built-ins are loaded once and shared
    (profiles are immutable).
    """
    if isinstance(name_or_path, os.PathLike) or _looks_like_path(str(name_or_path)):
        path = Path(name_or_path)
        return profile_from_yaml(_read(path), str(path))
    names = list_profiles()
    if name_or_path not in names:
        close = difflib.get_close_matches(str(name_or_path), names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ProfileError(str(name_or_path), [
            f"(name): no built-in profile {name_or_path!r}; {hint}built-in profiles are "
            f"{', '.join(names) or '(none found)'}; or pass the path to a .yaml file"])
    return _load_builtin(name_or_path)
