"""Read a profile's YAML text strictly: duplicate keys and syntax errors become problems.

Duplicate keys are errors at any depth: PyYAML silently keeps the last one, which once
dropped a whole memory level from a ZigZag profile. Every problem is reported with its
field path (``levels.smem.role``), not a bare line number, so :mod:`.loader` can list it
alongside the validation problems.

Reading is bounded (:mod:`.limits`): at most :data:`~.limits.MAX_PROFILE_BYTES` of text,
collections nested at most :data:`~.limits.MAX_YAML_DEPTH` deep, no aliases (``*name``,
which can expand a small file into billions of nodes), no NUL or control characters. Any
YAML error becomes a :class:`ProfileError`.

YAML 1.1 (PyYAML) reads some numbers in ways nobody writing a profile means: ``1:20`` is
80 (base 60), ``012`` is 10 (octal), ``1_000`` is 1000, while ``1e5`` is the *string*
"1e5". Numbers other than plain decimals are kept as :class:`RejectedNumber` strings,
which the loader reports wherever a number is expected, saying why; exponent forms
(``1e5``, ``2.5E-3``) are read as numbers, as YAML 1.2 does.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from ..errors import ProfileError
from .limits import (EXCERPT_CHARS, MAX_DIGITS, MAX_PROFILE_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES, excerpt,
                     one_line)

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")


def join_path(path: str, key: Any) -> str:
    """The field path of ``key`` inside ``path`` (``levels`` + ``smem`` → ``levels.smem``).

    A key longer than :data:`~.limits.EXCERPT_CHARS` is cut, so a path never quotes a
    whole file."""
    key = str(key)
    if len(key) > EXCERPT_CHARS:
        key = key[:EXCERPT_CHARS] + "…"
    return f"{path}.{key}" if path else key


class RejectedNumber(str):
    """A scalar YAML 1.1 would read as a number in a surprising way (``1:20``, ``012``),
    kept as its text; ``reason`` says what it is and how to write it."""

    reason: str = ""

    @classmethod
    def make(cls, text: str, reason: str) -> "RejectedNumber":
        out = cls(text)
        out.reason = reason
        return out


def _number_problem(text: str, tag: str) -> str | None:
    """Why the plain scalar ``text`` (resolved as ``tag``) is refused as a number, or None."""
    body = text.lstrip("+-")
    digits = sum(c.isdigit() for c in body)
    if digits > MAX_DIGITS:
        return f"a number with {digits:,} digits, far outside any hardware figure"
    if ":" in body:
        return (f"{text}, which YAML 1.1 reads as a base-60 (sexagesimal) number; "
                "write the number in plain decimal")
    if "_" in body:
        return f"{text}, which YAML 1.1 reads with '_' digit separators; write the digits without them"
    if tag == _INT and not _PLAIN_INT.fullmatch(text):
        base = {"0x": "hexadecimal", "0b": "binary"}.get(body[:2].lower(), "octal")
        return f"{text}, which YAML reads as {base}; write the number in plain decimal without a leading 0"
    return None


class _Strict:
    """What both loaders add to PyYAML's SafeLoader: duplicate mapping keys are recorded
    instead of the last one kept, and ambiguous numbers are kept as text.

    ``node_paths`` (filled before construction) maps each node to its field path, so a
    duplicate is reported as ``levels.smem.role`` rather than as a bare line number.
    """

    def __init__(self, stream: str):
        super().__init__(stream)
        self.duplicates: list[str] = []
        self.node_paths: dict[int, str] = {}

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        path = self.node_paths.get(id(node), "")
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue  # the base class rejects unhashable keys and expands merges (<<)
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in first_line:
                self.duplicates.append(
                    f"{join_path(path, key)}: duplicate key (first on line {first_line[key]}, "
                    f"again on line {line}); YAML would silently keep only the last"
                )
            else:
                first_line[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_number(self, node: yaml.ScalarNode) -> Any:
        text = str(node.value)
        reason = _number_problem(text, node.tag)
        if reason is not None:
            return RejectedNumber.make(text, reason)
        return int(text) if node.tag == _INT else self.construct_yaml_float(node)


class _Shape:
    """Counts nodes and nesting as events arrive, refusing aliases, explicit tags, nesting
    over :data:`~.limits.MAX_YAML_DEPTH` and more than :data:`~.limits.MAX_YAML_NODES`
    nodes, each before it is built."""

    def __init__(self):
        self.depth = self.nodes = 0

    def enter(self, event) -> None:
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(event.start_mark, "aliases (*name) are not allowed in a profile; write the value out in full")
        if getattr(event, "tag", None) not in (None, "!"):
            raise _Refused(event.start_mark, f"explicit tags such as {excerpt(event.tag)} are not allowed in a profile")
        self.nodes += 1
        if self.nodes > MAX_YAML_NODES:
            raise _Refused(event.start_mark, f"more than {MAX_YAML_NODES:,} values; a profile needs a few hundred")
        if isinstance(event, yaml.CollectionStartEvent):
            self.depth += 1
            if self.depth > MAX_YAML_DEPTH:
                raise _Refused(event.start_mark, f"nested more than {MAX_YAML_DEPTH} levels deep; a profile needs 4")

    def scan(self, loader) -> None:
        """Check every event of ``loader``'s document (the libyaml parser builds nodes in C,
        recursively, so the document is checked before it is composed)."""
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, (yaml.NodeEvent, yaml.CollectionStartEvent)):
                self.enter(event)
            elif isinstance(event, yaml.CollectionEndEvent):
                self.depth -= 1


class _StrictLoader(_Strict, yaml.SafeLoader):
    """The pure-Python loader: checks the shape as it composes each node."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self.shape = _Shape()

    def fetch_flow_collection_start(self, token_class):
        # Refuse deep [ and { nesting as it is scanned: PyYAML's scanner keeps a possible
        # simple key per flow level and rescans them all for each token (quadratic).
        if self.flow_level >= MAX_YAML_DEPTH:
            raise _Refused(self.get_mark(), f"nested more than {MAX_YAML_DEPTH} levels deep; a profile needs 4")
        super().fetch_flow_collection_start(token_class)

    def compose_node(self, parent, index):
        event = self.peek_event()
        self.shape.enter(event)
        node = super().compose_node(parent, index)
        if isinstance(event, yaml.CollectionStartEvent):
            self.shape.depth -= 1
        return node


#: libyaml's loader when PyYAML was built with it (ten times faster); its events are
#: checked by _Shape.scan before it composes them
_CSafeLoader = getattr(yaml, "CSafeLoader", None)
_FastStrictLoader = type("_FastStrictLoader", (_Strict, _CSafeLoader), {}) if _CSafeLoader else None
#: whether parse_yaml uses libyaml (tests set it False to check the pure-Python path)
USE_LIBYAML = _FastStrictLoader is not None


class _Refused(yaml.MarkedYAMLError):
    """YAML that is well-formed but beyond what a profile may hold (aliases, deep nesting)."""

    def __init__(self, mark, problem: str):
        super().__init__(problem=problem, problem_mark=mark)


for _loader in filter(None, (_StrictLoader, _FastStrictLoader)):
    _loader.add_constructor(_INT, _Strict.construct_number)
    _loader.add_constructor(_FLOAT, _Strict.construct_number)
    # YAML 1.2 numbers that YAML 1.1 reads as strings: 1e5, 1.5e5 and 1.5E+5 become floats,
    # and 0o12 an int (refused as octal above), so each is reported as what the writer meant.
    _loader.add_implicit_resolver(
        _FLOAT, re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"), list("-+0123456789."))
    _loader.add_implicit_resolver(_INT, re.compile(r"^[-+]?0o[0-7_]+$"), list("-+0"))


def _index_paths(node: yaml.Node, path: str, out: dict[int, str]) -> None:
    if id(node) in out:  # an alias seen before
        return
    out[id(node)] = path
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            _index_paths(value_node, join_path(path, key), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index_paths(item, f"{path}[{i}]", out)


def _where(text: str, position: int) -> str:
    line = text.count("\n", 0, position)
    column = position - (text.rfind("\n", 0, position) + 1)
    return f"line {line + 1}, column {column + 1}"


def _check_text(text: str, source: str) -> None:
    if not isinstance(text, str):
        raise ProfileError(source, [f"(file): expected YAML text, got {excerpt(text)}"])
    if len(text) > MAX_PROFILE_BYTES:
        raise ProfileError(source, [f"(file): {len(text):,} characters is over the limit of "
                                    f"{MAX_PROFILE_BYTES:,} characters for a profile"])
    nul = text.find("\x00")
    if nul >= 0:
        raise ProfileError(source, [f"(file) {_where(text, nul)}: a NUL byte; a profile is UTF-8 text"])


def _compose(text: str) -> tuple[Any, Any]:
    """The loader and the document's root node (None when empty), shape checked."""
    if USE_LIBYAML and _FastStrictLoader is not None:
        checker = _FastStrictLoader(text)
        try:
            _Shape().scan(checker)
        finally:
            checker.dispose()
        loader = _FastStrictLoader(text)
    else:
        loader = _StrictLoader(text)
    try:
        return loader, loader.get_single_node()
    except BaseException:
        loader.dispose()
        raise


def parse_yaml(text: str, source: str) -> tuple[Any, list[str]]:
    """The document's data and the duplicate-key problems found while building it.

    Raises :class:`ProfileError` for text over the size limit, NUL bytes, YAML errors of
    any kind, aliases, explicit tags, and documents over the depth and node limits."""
    _check_text(text, source)
    loader = None
    try:
        loader, root = _compose(text)
        if root is None:
            raise ProfileError(source, ["(top level): the file is empty"])
        _index_paths(root, "", loader.node_paths)
        return loader.construct_document(root), loader.duplicates
    except _Refused as e:
        raise ProfileError(source, [f"(yaml) {_mark(e.problem_mark)}: {e.problem}"]) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        detail = one_line(e.problem or e.context or "unreadable YAML", 120)
        raise ProfileError(source, [f"(yaml) {_mark(mark)}: syntax error: {detail}"]) from None
    except yaml.reader.ReaderError as e:
        char = e.character if isinstance(e.character, int) else ord(str(e.character)[:1] or "?")
        raise ProfileError(source, [f"(yaml) {_where(text, e.position)}: character {char:#06x} "
                                    f"is not allowed in YAML ({one_line(str(e.reason), 60)})"]) from None
    except yaml.YAMLError as e:
        raise ProfileError(source, [f"(yaml): {one_line(str(e), 160)}"]) from None
    except RecursionError:
        raise ProfileError(source, ["(yaml): nested too deeply"]) from None
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as e:  # e.g. a date 2026-13-45
        raise ProfileError(source, [f"(yaml): a value cannot be read: {one_line(str(e), 120)}"]) from None
    finally:
        if loader is not None:
            loader.dispose()


def _mark(mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
