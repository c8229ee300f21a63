"""Read a profile's YAML text strictly: duplicate keys and syntax errors become problems.

Duplicate keys are errors at any depth: PyYAML silently keeps the last one, which once
dropped a whole memory level from a ZigZag profile. Every problem is reported with its
field path (``levels.smem.role``), not a bare line number, so :mod:`.loader` can list it
alongside the validation problems.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..errors import ProfileError


def join_path(path: str, key: Any) -> str:
    """The field path of ``key`` inside ``path`` (``levels`` + ``smem`` → ``levels.smem``)."""
    return f"{path}.{key}" if path else str(key)


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that records duplicate mapping keys instead of keeping the last one.

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


def parse_yaml(text: str, source: str) -> tuple[Any, list[str]]:
    """The document's data and the duplicate-key problems found while building it."""
    loader = _StrictLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            raise ProfileError(source, ["(top level): the file is empty"])
        _index_paths(root, "", loader.node_paths)
        return loader.construct_document(root), loader.duplicates
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
        detail = e.problem or e.context or "unreadable YAML"
        raise ProfileError(source, [f"(yaml) {where}: syntax error: {detail}"]) from None
    except yaml.YAMLError as e:
        raise ProfileError(source, [f"(yaml): syntax error: {e}"]) from None
    finally:
        loader.dispose()
