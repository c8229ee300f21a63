"""Where a long play of the L2 model has got to, for whoever watches it (the command line's bar).

The model says which stage it is in (:func:`stage`: a partition's turn, or the one LRU) and how
far through that stage's sums it is (:func:`advance`). Nothing is kept or drawn unless a watcher
was set with :func:`watching`: a callable ``(stage, done, total)``, called in this thread. A play
of many requests spends its time in a few such stages (docs/performance.md), so the watcher sees
each stage's fraction move, not a count of requests.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

Watcher = Callable[[str, int, int], None]

_WATCHER: ContextVar[Watcher | None] = ContextVar("iosim_l2_watcher", default=None)
_STAGE: ContextVar[str] = ContextVar("iosim_l2_stage", default="L2 model")


def stage(label: str) -> None:
    """A new stage starts: ``label``, at 0 of 1."""
    _STAGE.set(label)
    advance(0, 1)


def advance(done: int, total: int) -> None:
    """``done`` of the current stage's ``total`` steps are done."""
    watcher = _WATCHER.get()
    if watcher is not None:
        watcher(_STAGE.get(), done, total)


@contextmanager
def watching(watcher: Watcher) -> Iterator[None]:
    """Plays within the block report to ``watcher``."""
    token, named = _WATCHER.set(watcher), _STAGE.set("L2 model")
    try:
        yield
    finally:
        _STAGE.reset(named)
        _WATCHER.reset(token)
