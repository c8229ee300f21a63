"""Where a long play of the L2 model has got to, for whoever watches it (the command line's bar).

The model names the kernel it plays (:func:`kernel`), the stage it is in (:func:`stage`: a
partition's turn, the one LRU, a play request by request) and how far through one step of that
stage it is (:func:`advance`: the bands, the keys added back, the sums; each step runs from 0 to
its total, so the watcher is told which). Nothing is kept or drawn unless a watcher was set with
:func:`watching`: a callable ``(label, done, total)``, called only in the process and thread that
set it (a forked worker or another thread inherits the context, not the watcher). A play of many
requests spends its time in a few such stages (docs/performance.md), and the number of turns is
not known before they settle, so the watcher sees each step's fraction move, not a share of the run.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

Watcher = Callable[[str, int, int], None]

#: (the watcher, the process and thread that set it), or None
_WATCHER: ContextVar[tuple | None] = ContextVar("iosim_l2_watcher", default=None)
#: (the kernel, the stage)
_PLACE: ContextVar[tuple[str, str]] = ContextVar("iosim_l2_place", default=("", ""))


def _watcher() -> Watcher | None:
    held = _WATCHER.get()
    if held is None or held[1] != (os.getpid(), threading.get_ident()):
        return None
    return held[0]


def kernel(name: str) -> None:
    """The play of kernel ``name`` starts (its stages follow)."""
    if _watcher() is not None:
        _PLACE.set((name, ""))


def stage(label: str) -> None:
    """A new stage of the current kernel's play starts: ``label``."""
    if _watcher() is not None:
        _PLACE.set((_PLACE.get()[0], label))
        advance(0, 1)


def advance(done: int, total: int, step: str = "") -> None:
    """``done`` of the ``total`` parts of the current stage's ``step`` are done."""
    watcher = _watcher()
    if watcher is not None:
        name, label = _PLACE.get()
        where = ", ".join(x for x in (name, label, step) if x)
        watcher(f"L2 {where}" if where else "L2 model", done, total)


@contextmanager
def watching(watcher: Watcher) -> Iterator[None]:
    """Plays within the block report to ``watcher``."""
    token = _WATCHER.set((watcher, (os.getpid(), threading.get_ident())))
    place = _PLACE.set(("", ""))
    try:
        yield
    finally:
        _PLACE.reset(place)
        _WATCHER.reset(token)
