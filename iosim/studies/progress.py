"""Run many independent simulations, on every core, with a progress bar on a terminal.

Sweeps (``iosim bounds``, ``iosim explore``) call :func:`progress_map`, and a long L2 play of
``iosim simulate`` draws its stages (:meth:`ProgressBar.show`). The bar is drawn
on stderr only when stderr is a terminal and the work has already taken more than
:data:`DELAY_S` (one second): a fast sweep, a pipe, a log file or CI see nothing.

Work is split into chunks of about equal estimated cost (``cost``: one number per item,
e.g. its tile steps; by default every item costs the same) and run by an executor
(:mod:`.executors`): this process, ``jobs`` local processes (default one per core, when
there are at least :data:`MIN_ITEMS_PER_JOB` items per worker), or a Dask cluster. The
bar advances as chunks finish, in any order; results come back in the order of ``items``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable, Sequence, TextIO

from .executors import Executor, InlineExecutor, LocalExecutor

#: below this many items per worker, starting processes costs more than it saves
MIN_ITEMS_PER_JOB = 400
#: a bar is drawn only once the work has taken this long (a fast run shows nothing)
DELAY_S = 1.0


class ProgressBar:
    """``label [#######.......] 1,234/5,000  2.1 s`` on one terminal line, redrawn in place."""

    def __init__(self, total: int, label: str = "", stream: TextIO | None = None, delay_s: float | None = None,
                 enabled: bool | None = None, width: int = 30):
        self.total, self.label, self.width = total, label, width
        self.delay_s = DELAY_S if delay_s is None else delay_s
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.enabled = isatty() if enabled is None else enabled
        self.done = 0
        self.start = time.perf_counter()
        self._last_draw = 0.0
        self._drawn = False
        self.percent, self._width = False, 0

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.start < self.delay_s or (now - self._last_draw < 0.1 and self.done < self.total):
            return
        self._last_draw = now
        self._draw(now)

    def show(self, label: str, done: int, total: int) -> None:
        """Stage ``label`` at ``done`` of ``total``, shown as a percentage (a watcher of
        :mod:`iosim.models.cache.watch`); a new stage is drawn at once, past the delay."""
        if label != self.label:
            self._last_draw = 0.0
        self.label, self.total, self.done, self.percent = label, total, done, True
        self.update(0)

    def _draw(self, now: float) -> None:
        frac = min(1.0, self.done / self.total) if self.total else 1.0
        count = f"{int(100 * frac):3d} %" if self.percent else f"{self.done:,}/{self.total:,}"
        tail = f"] {count}  {now - self.start:.1f} s"
        room = self._columns() - 1                       # the last column would wrap the line
        width = max(10, min(self.width, room - len(self.label) - len(tail) - 2))
        filled = int(frac * width)
        line = f"{self.label} [{'#' * filled}{'.' * (width - filled)}{tail}"
        line = line if len(line) <= room else f"...{line[len(line) - room + 3:]}"     # keep the count and time
        self.stream.write("\r" + line.ljust(self._width))          # blanks what a longer line left
        self._width = len(line)
        self.stream.flush()
        self._drawn = True

    def _columns(self) -> int:
        """The terminal's width (80 where the stream has none)."""
        try:
            return os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            return 80

    def close(self) -> None:
        """Finish the line (only if something was drawn)."""
        if self._drawn:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def default_jobs() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def progress_map(
    fn: Callable, items: Sequence, *, label: str = "", jobs: int | None = None,
    initializer: Callable | None = None, initargs: tuple = (), stream: TextIO | None = None,
    progress: bool | None = None, cost: Sequence[float] | None = None, executor: Executor | None = None,
    min_items_per_job: int | None = None,
) -> list:
    """``[fn(x) for x in items]``, chunked by cost, on an executor, with a progress bar.

    ``fn`` (and ``initializer``) must be module-level functions for processes or Dask;
    ``initializer(*initargs)`` runs before each chunk, wherever it runs, so large shared
    objects (a hardware profile) travel once per chunk instead of once per item.
    ``executor``: default local processes (``jobs``), or in this process when the sweep is
    too small to pay for them (fewer than ``min_items_per_job`` items a worker, by default
    :data:`MIN_ITEMS_PER_JOB`).
    ``progress``: True/False forces the bar on or off; None draws it on a terminal only.
    """
    items = list(items)
    if executor is None:
        jobs = default_jobs() if jobs is None else max(1, jobs)
        per_job = MIN_ITEMS_PER_JOB if min_items_per_job is None else max(1, min_items_per_job)
        jobs = min(jobs, max(1, len(items) // per_job))
        executor = InlineExecutor() if jobs == 1 else LocalExecutor(jobs)
    parts = 1 if isinstance(executor, InlineExecutor) else max(1, 8 * getattr(executor, "jobs", 8))
    chunks = cost_chunks(len(items), cost, parts)
    task = _Task(fn, initializer, initargs)
    results: list = [None] * len(chunks)
    with ProgressBar(len(items), label, stream=stream, enabled=progress) as bar:
        for index, out in executor.run(task, [[items[i] for i in c] for c in chunks]):
            results[index] = out
            bar.update(len(out))
    ordered: list = [None] * len(items)
    for c, out in zip(chunks, results):
        for i, value in zip(c, out):
            ordered[i] = value
    return ordered


def cost_chunks(n: int, cost: Sequence[float] | None, parts: int) -> list[list[int]]:
    """Item indices in ``parts`` runs of consecutive items of about equal total cost,
    costliest run first (so the longest work starts first)."""
    if n == 0:
        return []
    weights = [1.0] * n if cost is None else [max(float(c), 0.0) for c in cost]
    target = (sum(weights) or n) / max(1, min(parts, n))
    chunks, current, acc = [], [], 0.0
    for i, w in enumerate(weights):
        current.append(i)
        acc += w
        if acc >= target:
            chunks.append(current)
            current, acc = [], 0.0
    if current:
        chunks.append(current)
    return sorted(chunks, key=lambda c: -sum(weights[i] for i in c))


class _Task:
    """One chunk's work: the sweep's initializer, then ``fn`` on each item (picklable)."""

    def __init__(self, fn: Callable, initializer: Callable | None, initargs: tuple):
        self.fn, self.initializer, self.initargs = fn, initializer, initargs

    def __call__(self, chunk: list) -> list:
        if self.initializer is not None:
            self.initializer(*self.initargs)
        return [self.fn(x) for x in chunk]
