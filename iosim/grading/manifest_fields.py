"""Checking a manifest's fields one by one (:mod:`.manifest`): each check returns the value
or raises a one-line :class:`~.specs.ManifestError` naming the file and the field's path
(``cases[2].problem.seq_len``)."""

from __future__ import annotations

import difflib
import math
import pathlib

from ..errors import IosimError
from ..hardware.fields import describe
from ..hardware.limits import one_line
from ..workload.problem import Problem
from .specs import ManifestError

#: the longest string a manifest field may hold (a hint, a purpose)
MAX_TEXT = 4000
#: the most files the student pack (or the instructor's list) names
MAX_FILES = 64
PROBLEM_INTS = ("seq_len", "seq_len_q", "seq_len_kv", "head_dim", "batch", "heads", "kv_heads")


def join(where: str, key) -> str:
    return f"{where}.{key}" if where else str(key)


class Fields:
    """The checks, for the manifest at ``manifest`` (named in every message)."""

    def __init__(self, manifest: pathlib.Path):
        self.manifest = manifest

    def fail(self, field: str, message: str):
        raise ManifestError(one_line(f"{self.manifest}: {field}: {message}", 500))

    def keys(self, obj, where: str, required: tuple, optional: tuple) -> None:
        """``obj`` is a mapping with every field of ``required`` and none outside ``optional``."""
        if not isinstance(obj, dict):
            self.fail(where or "(the file)", f"expected a mapping, got {describe(obj)}")
        for key in required:
            if key not in obj:
                self.fail(join(where, key), "missing (a required field)")
        allowed = required + optional
        for key in obj:
            if key not in allowed:
                close = difflib.get_close_matches(str(key)[:64], allowed, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                self.fail(join(where, str(key)[:64]), f"unknown field; {hint}expected {', '.join(allowed)}")

    def string(self, obj: dict, key: str, where: str, *, empty: bool = False) -> str:
        value = obj.get(key)
        if not isinstance(value, str):
            self.fail(join(where, key), f"expected a string, got {describe(value)}")
        if not empty and not value.strip():
            self.fail(join(where, key), "empty")
        if len(value) > MAX_TEXT:
            self.fail(join(where, key), f"{len(value):,} characters; at most {MAX_TEXT:,}")
        return value.strip()

    def nonempty_list(self, value, where: str) -> list:
        if not isinstance(value, list) or not value:
            self.fail(where, f"expected a non-empty list, got {describe(value)}")
        return value

    def string_list(self, obj: dict, key: str, where: str) -> list:
        items = self.nonempty_list(obj.get(key), join(where, key))
        for k, item in enumerate(items):
            if not isinstance(item, str) or not item.strip():
                self.fail(f"{join(where, key)}[{k}]", f"expected a string, got {describe(item)}")
        return [item.strip() for item in items]

    def integer(self, obj: dict, key: str, where: str, *, lowest: int, highest: int | None = None) -> int:
        value = obj.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(join(where, key), f"expected a whole number, got {describe(value)}")
        if value < lowest or (highest is not None and value > highest):
            most = f" and at most {highest:,}" if highest is not None else ""
            self.fail(join(where, key), f"expected a whole number of at least {lowest}{most}, got {value}")
        return value

    def number(self, obj: dict, key: str, where: str, *, lowest: float, highest: float):
        value = obj.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(join(where, key), f"expected a number, got {describe(value)}")
        if not lowest <= value <= highest:
            self.fail(join(where, key), f"expected a number from {lowest:g} to {highest:g}, got {value:g}")
        return value

    def inside(self, text: str, where: str, directory: pathlib.Path) -> str:
        """``text`` as a relative path that stays inside ``directory`` (checked once resolved)."""
        rel = pathlib.PurePosixPath(text)
        if not text or rel.is_absolute() or "\\" in text or ".." in rel.parts or "\0" in text:
            self.fail(where, f"{describe(text)} is not a relative path inside the assignment's folder")
        try:
            (directory / rel).resolve().relative_to(directory.resolve())
        except (ValueError, OSError):
            self.fail(where, f"{text!r} leads outside the assignment's folder")
        return rel.as_posix()

    def files(self, obj: dict, key: str, directory: pathlib.Path, *, empty: bool = False) -> tuple:
        """The files a list names: plain files (no links) inside the folder, each once."""
        items = self.string_list(obj, key, "") if not (empty and obj.get(key) == []) else []
        if len(items) > MAX_FILES:
            self.fail(key, f"{len(items)} files; at most {MAX_FILES}")
        out = []
        for k, item in enumerate(items):
            rel = self.inside(item, f"{key}[{k}]", directory)
            path = directory / rel
            if path.is_symlink() or not path.is_file():
                what = "a link" if path.is_symlink() else "no such file"
                self.fail(f"{key}[{k}]", f"{rel!r}: {what} in the assignment's folder {directory}")
            if rel in out:
                self.fail(f"{key}[{k}]", f"{rel!r} is listed twice")
            out.append(rel)
        return tuple(out)


def problem_of(f: Fields, obj, where: str) -> Problem:
    """A :class:`~iosim.Problem` from its fields: head_dim, seq_len (or seq_len_q and
    seq_len_kv), and optionally batch, heads, kv_heads, causal, dtype."""
    f.keys(obj, where, ("head_dim",), tuple(k for k in PROBLEM_INTS if k != "head_dim") + ("causal", "dtype"))
    if "seq_len" in obj and ("seq_len_q" in obj or "seq_len_kv" in obj):
        f.fail(where, "seq_len, or seq_len_q and seq_len_kv: not both")
    if "seq_len" not in obj and not ("seq_len_q" in obj and "seq_len_kv" in obj):
        f.fail(join(where, "seq_len"), "missing (or give seq_len_q and seq_len_kv)")
    kwargs = {k: f.integer(obj, k, where, lowest=1) for k in PROBLEM_INTS if k in obj}
    if "causal" in obj:
        if not isinstance(obj["causal"], bool):
            f.fail(join(where, "causal"), f"expected true or false, got {describe(obj['causal'])}")
        kwargs["causal"] = obj["causal"]
    if "dtype" in obj:
        kwargs["dtype"] = f.string(obj, "dtype", where)
    try:
        return Problem(**kwargs)
    except IosimError as exc:
        f.fail(join(where, exc.field) if exc.field else where, str(exc))
