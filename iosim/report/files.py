"""Output files the reports are written to, checked before any work (a sweep or a class of
grades can take minutes; a path that cannot be written must fail first, in one line)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ProblemError


def check_writable(path: str | os.PathLike, what: str) -> Path:
    """``path`` if a file can be written there: its folder exists, it is not a folder, and it
    opens for writing (tried here; a file this made is removed again). ``what`` names the
    option in the message (``--plot``, ``--csv``)."""
    p = Path(path)
    if not str(path):
        raise ProblemError(f"{what} '': give a file name")
    if not p.parent.exists():
        raise ProblemError(f"{what} {path}: folder {str(p.parent)!r} does not exist")
    if p.is_dir():
        raise ProblemError(f"{what} {path}: is a folder")
    existed = p.exists()
    try:
        with open(p, "ab"):
            pass
    except OSError as exc:
        raise ProblemError(f"{what} {path}: cannot write it ({exc.strerror or exc})") from None
    if not existed:
        p.unlink(missing_ok=True)
    return p
