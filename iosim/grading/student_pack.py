"""``iosim assignment export NAME|PATH DIR``: what a student gets of an assignment.

The student pack is the files the manifest lists under ``student`` (the README and the
starter), copied into a new or empty folder, and nothing else: never the manifest, the
reference schedule, or a file the manifest lists under ``instructor`` (the manifest's
checks refuse a ``student`` list that names one; the copy checks again). The instructor
material of the built-in assignments is in ``examples/assignments/instructor/``, in no
assignment's folder.
"""

from __future__ import annotations

import pathlib
import shutil

from .assignments import find_assignment
from .specs import GradingInputError


def _target(directory) -> pathlib.Path:
    """``directory`` if it is a new or empty folder, else :class:`GradingInputError`."""
    target = pathlib.Path(directory)
    if target.exists() or target.is_symlink():
        if not target.is_dir():
            raise GradingInputError(f"{target}: exists and is not a folder; give a new or empty folder")
        if any(target.iterdir()):
            raise GradingInputError(f"{target}: not empty; the student pack goes into a new or empty folder")
    return target


def export_pack(assignment, directory) -> tuple:
    """Copy the student pack of ``assignment`` (a built-in name or an assignment's folder)
    into ``directory`` (created; it must not exist or be empty): the paths written."""
    spec = find_assignment(assignment)
    source = spec.source
    target = _target(directory)
    private = set(source.private) | {source.manifest.name}
    written = []
    for rel in source.student:
        origin = source.directory / rel
        if rel in private or origin.is_symlink() or not origin.is_file():
            raise GradingInputError(f"{origin}: not a file of the student pack of {spec.name!r}")
        written.append((origin, target / rel))
    try:
        target.mkdir(parents=True, exist_ok=True)
        for origin, destination in written:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(origin, destination)
    except OSError as exc:
        raise GradingInputError(f"{target}: cannot write the student pack ({exc.strerror or exc})") from None
    return tuple(destination for _, destination in written)
