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
import os
from pathlib import Path
from typing import Any


from ..errors import ProfileError
from .fields import Problems, describe, fail, fields, quantity, string, whole_bytes
from .limits import MAX_LEVELS, MAX_LINKS, MAX_PROFILE_BYTES, InputRefused, excerpt, one_line, read_bounded
from .profile import COMPUTE_KEYS, MEASURED_KEYS, ROLES, HardwareProfile, Level, Link, Quantity
from .sanity import check_ordering, check_plausible
from .yaml_reader import join_path, parse_yaml

SCHEMA_VERSION = 1
_TOP_REQUIRED = ("schema_version", "name", "description", "vendor", "sm_count", "levels", "links")
_TOP_OPTIONAL = ("clock", "compute", "measured", "allow_unusual")
_PER_DEVICE = ("role", "capacity")  # dram, cache
_PER_SM = ("role", "capacity_per_sm", "capacity_per_block")  # scratchpad, registers
_LEVEL_REQUIRED = {"dram": _PER_DEVICE, "cache": _PER_DEVICE, "scratchpad": _PER_SM, "registers": _PER_SM}


# --------------------------------------------------------------------------- sections


def _level(name: Any, obj: Any, quantities: dict, problems: Problems) -> tuple[str | None, Level | None]:
    """Parse one entry of ``levels``; returns its role (if valid) and the Level (if valid)."""
    path = join_path("levels", name)
    if not isinstance(name, str) or not name:
        problems.add(path, f"a level name must be a non-empty string, got {describe(name)}")
    if not isinstance(obj, dict):
        problems.add(path, f"expected a mapping with role and capacity fields, got {describe(obj)}")
        return None, None
    role = obj.get("role")
    if role not in ROLES:
        if "role" in obj:
            close = difflib.get_close_matches(excerpt(role, 20).strip("'"), ROLES, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.add(f"{path}.role", f"unknown role {excerpt(role)}; expected one of {', '.join(ROLES)}{hint}")
        else:
            problems.add(f"{path}.role", f"missing required field; one of {', '.join(ROLES)}")
        return None, None
    before = len(problems)
    optional = ("description", "partitions", "ways") if role == "cache" else ("description",)
    allowed = (*_LEVEL_REQUIRED[role], *optional)
    fields(obj, path, _LEVEL_REQUIRED[role], optional, problems,
           context=f" (a {role} level takes {', '.join(allowed)})")
    partitions = _partitions(obj, path, quantities, problems)
    ways = _ways(obj, path, partitions, quantities, problems)
    description = obj.get("description", "")
    if not isinstance(description, str):
        problems.add(f"{path}.description", f"expected a string, got {describe(description)}")
    sizes = {}
    for key in _LEVEL_REQUIRED[role][1:]:
        if key in obj:
            q = quantity(obj[key], f"{path}.{key}", "bytes", problems)
            sizes[key] = (q, whole_bytes(q, f"{path}.{key}", problems))
            if sizes[key][1] is not None:
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
    return role, Level(name, role, capacity, per_block, description.strip(), partitions, ways)


def _partitions(obj: dict, path: str, quantities: dict, problems: Problems) -> int:
    """A cache's ``partitions``: 1 (the default) or 2 (two halves, each caching what its half
    of the SMs reads: :mod:`iosim.models.cache.partitions`)."""
    if "partitions" not in obj:
        return 1
    q = quantity(obj["partitions"], f"{path}.partitions", "count", problems)
    if q is None:
        return 1
    if q.value not in (1, 2):
        problems.add(f"{path}.partitions", f"expected 1 or 2 (the L2 models no other), got {q.as_written}")
        return 1
    return int(q.value)


def _ways(obj: dict, path: str, partitions: int, quantities: dict, problems: Problems) -> int | None:
    """A cache's ``ways``: each of its two partitions is sets of so many ways on hashed lines
    (:mod:`iosim.models.cache.sets`); absent: a fully associative LRU."""
    if "ways" not in obj:
        return None
    q = quantity(obj["ways"], f"{path}.ways", "count", problems)
    if q is None:
        return None
    if q.value > 64:
        problems.add(f"{path}.ways", f"expected at most 64 ways, got {q.as_written}")
        return None
    if partitions != 2:
        problems.add(f"{path}.ways", "hashed sets are modelled for a cache of two partitions only "
                     "(partitions: 2)")
        return None
    return int(q.value)


def _levels(raw: Any, quantities: dict, problems: Problems) -> tuple[dict[str, Level], dict[str, str]]:
    """Parse ``levels``: the valid Levels by name, and the role of every level with a valid role."""
    if not isinstance(raw, dict) or not raw:
        problems.add("levels", f"expected a non-empty mapping of level name to level, got {describe(raw)}")
        return {}, {}
    if len(raw) > MAX_LEVELS:
        problems.add("levels", f"{len(raw):,} levels; a profile may have at most {MAX_LEVELS}")
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


def _check_roles(roles: dict[str, str], problems: Problems) -> None:
    for role, rule in (("dram", "exactly one"), ("scratchpad", "exactly one"), ("registers", "at most one")):
        names = [n for n, r in roles.items() if r == role]
        if len(names) == 1 or (rule == "at most one" and not names):
            continue
        listed = f" ({', '.join(names)})" if names else ""
        problems.add("levels", f"needs {rule} level with role {role!r}, found {len(names)}{listed}")


def _links(obj: Any, names: list, quantities: dict, problems: Problems) -> list[Link]:
    if not isinstance(obj, list):
        problems.add("links", f"expected a list of {{between: [a, b], bandwidth: ...}}, got {describe(obj)}")
        return []
    if len(obj) > MAX_LINKS:
        problems.add("links", f"{len(obj):,} links; a profile may have at most {MAX_LINKS}")
        return []
    links, seen, known = [], {}, set(names)
    for i, item in enumerate(obj):
        path, before = f"links[{i}]", len(problems)
        d = fields(item, path, ("between", "bandwidth"), (), problems)
        if d is None:
            continue
        between = d.get("between")
        if "between" in d and not (isinstance(between, list) and len(between) == 2
                                   and all(isinstance(x, str) for x in between)):
            problems.add(f"{path}.between", f"expected a list of two level names, got {describe(between)}")
        elif "between" in d:
            for end in between:
                if end not in known:
                    close = difflib.get_close_matches(end[:64], [str(n) for n in names], n=1, cutoff=0.5)
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    levels = ", ".join(join_path("", n) for n in names)
                    problems.add(f"{path}.between", f"unknown level {excerpt(end)}; levels are {levels}{hint}")
            pair = frozenset(between)
            if len(pair) == 1:
                problems.add(f"{path}.between", f"a link must join two different levels, got {excerpt(between[0])} twice")
            elif pair in seen:
                ends = "-".join(join_path("", end) for end in between)
                problems.add(f"{path}.between", f"duplicate link {ends} (also links[{seen[pair]}])")
            seen.setdefault(pair, i)
        bw = quantity(d["bandwidth"], f"{path}.bandwidth", "bandwidth", problems) if "bandwidth" in d else None
        if bw is not None:
            quantities[f"{path}.bandwidth"] = bw
        if len(problems) == before:
            links.append(Link(between[0], between[1], bw.value, bw.source))
    return links


def _check_connected(roles: dict[str, str], links: list[Link], problems: Problems) -> None:
    adjacent: dict = {name: set() for name in roles}
    for link in links:                 # a level whose role is wrong still joins what it links
        adjacent.setdefault(link.a, set()).add(link.b)
        adjacent.setdefault(link.b, set()).add(link.a)
    if len(adjacent) < 2:
        return
    root = next((n for n, r in roles.items() if r == "dram"), next(iter(roles)))
    reached, frontier = {root}, [root]
    while frontier:
        frontier = [v for u in frontier for v in sorted(adjacent[u]) if v not in reached and not reached.add(v)]
    cut_off = sorted(set(adjacent) - reached)
    if cut_off:
        problems.add("links", f"the hierarchy is not connected: no path from {root} to {', '.join(cut_off)}")


def _rates(obj: Any, section: str, kinds: dict[str, str], quantities: dict, problems: Problems) -> dict[str, Quantity]:
    """A mapping of rate name -> quantity (``compute``, ``measured``); ``kinds`` gives each
    allowed name's unit kind."""
    d = fields(obj, section, (), tuple(kinds), problems)
    out = {}
    for key, kind in kinds.items():
        if d and key in d:
            q = quantity(d[key], f"{section}.{key}", kind, problems)
            if q is not None:
                out[key] = quantities[f"{section}.{key}"] = q
    return out


#: unit kind of each ``compute`` key: FLOP rates, but exponentials per second for ``exp``
_COMPUTE_KINDS = {key: "ops" if key == "exp" else "flops" for key in COMPUTE_KEYS}


def profile_from_data(data: Any, source: str, problems: list[str] | None = None) -> HardwareProfile:
    """Validate parsed YAML ``data`` and build the profile; ``source`` names it in errors.

    ``problems`` carries problems found earlier (duplicate keys) so all are reported at once.
    """
    problems = Problems(one_line(p) for p in problems or [])  # duplicate keys may hold control characters
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(data, dict) and "schema_version" in data and (
            isinstance(version, bool) or version != SCHEMA_VERSION):
        problems.add("schema_version", f"unsupported version {describe(version)}; "
                                       f"this iosim reads schema_version {SCHEMA_VERSION}")
        raise fail(source, problems)  # the rest may follow another schema
    if isinstance(data, str):  # a text file that is not YAML of a profile (/etc/passwd): quote none of it
        problems.add("", f"expected a mapping of profile fields, got a string of {len(data):,} characters")
        raise fail(source, problems)
    if fields(data, "", _TOP_REQUIRED, _TOP_OPTIONAL, problems, what="a mapping of profile fields") is None:
        raise fail(source, problems)
    name, description, vendor = (string(data, k, problems) for k in ("name", "description", "vendor"))
    allow_unusual = data.get("allow_unusual", False)
    if not isinstance(allow_unusual, bool):
        problems.add("allow_unusual", f"expected true or false, got {describe(allow_unusual)}")
    quantities: dict[str, Quantity] = {}
    sm = quantity(data["sm_count"], "sm_count", "count", problems) if "sm_count" in data else None
    clock = quantity(data["clock"], "clock", "frequency", problems) if "clock" in data else None
    for key, q in (("sm_count", sm), ("clock", clock)):
        if q is not None:
            quantities[key] = q
    levels, roles = _levels(data.get("levels", {}), quantities, problems) if "levels" in data else ({}, {})
    links = _links_section(data, roles, quantities, problems)
    compute = _rates(data.get("compute", {}), "compute", _COMPUTE_KINDS, quantities, problems)
    measured = _rates(data.get("measured", {}), "measured", MEASURED_KEYS, quantities, problems)
    for path, message in check_ordering(levels, quantities):
        problems.add(path, message)
    caches = [lv for lv in levels.values() if lv.role == "cache"]
    for lv in caches:
        if lv.partitions == 2 and len(caches) > 1:
            problems.add(f"{join_path('levels', lv.name)}.partitions", "two partitions are modelled only for "
                         "a profile's one cache level (the L2 with no cache behind it); this profile has "
                         f"{len(caches)}")
    unusual = []
    for path, message in check_plausible(quantities):
        if allow_unusual is True:
            unusual.append(one_line(f"{path}: {message} (allowed by allow_unusual)"))
        else:
            problems.add(path, f"{message}; if the profile means it, set allow_unusual: true at its top")
    if problems:
        raise fail(source, problems)
    return HardwareProfile(
        name=name, description=description.strip(), vendor=vendor, source_path=source,
        sm_count=int(sm.value), clock_hz=clock.value if clock else None,
        levels=levels, links=tuple(links), compute=compute, measured=measured, quantities=quantities,
        warnings=tuple(unusual),
    )


def _links_section(data: dict, roles: dict[str, str], quantities: dict, problems: Problems) -> list[Link]:
    """Parse ``links`` and check the hierarchy is connected (skipped when levels are over the cap)."""
    raw_levels = data.get("levels")
    if "links" not in data or (isinstance(raw_levels, dict) and len(raw_levels) > MAX_LEVELS):
        return []
    before = len(problems)
    names = list(raw_levels) if isinstance(raw_levels, dict) else []
    links = _links(data["links"], names, quantities, problems)
    if len(problems) == before and roles:
        _check_connected(roles, links, problems)
    return links


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
    """The text of the profile file at ``path``: a regular file of at most
    :data:`~.limits.MAX_PROFILE_BYTES`, in UTF-8."""
    try:
        data = read_bounded(path, MAX_PROFILE_BYTES)
    except InputRefused as e:
        raise ProfileError(_cut(str(path)), [f"(file): {e}"]) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProfileError(_cut(str(path)), [f"(file) byte {e.start:,}: not UTF-8 text"]) from None


def _cut(source: str) -> str:
    """A file name or profile name to quote in a message, cut to 256 characters."""
    return source if len(source) <= 256 else source[:255] + "…"


@functools.lru_cache(maxsize=None)
def _load_builtin(name: str) -> HardwareProfile:
    resource = _builtin_dir() / f"{name}.yaml"
    # package data, trusted: read through the Traversable, which may sit in a zip
    profile = profile_from_yaml(resource.read_text(encoding="utf-8"), str(resource))
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
        hint = _did_you_mean(str(name_or_path)[:64], names)
        raise ProfileError(_cut(str(name_or_path)), [
            f"(name): no built-in profile {excerpt(name_or_path)}; {hint}built-in profiles are "
            f"{', '.join(names) or '(none found)'}; or pass the path to a .yaml file"])
    return _load_builtin(name_or_path)


def _did_you_mean(typed: str, names: list[str]) -> str:
    """The hint for an unknown profile name: the built-in names that start with what was typed
    (``h100``: h100-pcie or h100-sxm), else the closest one, else nothing."""
    starting = [n for n in names if typed and n.lower().startswith(typed.lower())]
    close = starting or difflib.get_close_matches(typed, names, n=1)
    return f"did you mean {' or '.join(map(repr, close))}? " if close else ""
