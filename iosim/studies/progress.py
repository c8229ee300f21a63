"""Run many independent simulations, on every core, with a progress bar on a terminal.

Sweeps (``iosim bounds``, ``iosim explore``) call :func:`progress_map`. The bar is drawn
on stderr only when stderr is a terminal and the work has already taken more than
``delay_s`` (one second): a fast sweep, a pipe, a log file or CI see nothing.

Work is split over processes when there is enough of it to pay for them (``jobs``
workers, default one per core; fewer than :data:`MIN_ITEMS_PER_JOB` items per worker
runs in this process). Results come back in the order of ``items``.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence, TextIO

#: below this many items per worker, starting processes costs more than it saves
MIN_ITEMS_PER_JOB = 400


class ProgressBar:
    """``label [#######.......] 1,234/5,000  2.1 s`` on one terminal line, redrawn in place."""

    def __init__(self, total: int, label: str = "", stream: TextIO | None = None, delay_s: float = 1.0,
                 enabled: bool | None = None, width: int = 30):
        self.total, self.label, self.width, self.delay_s = total, label, width, delay_s
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.enabled = isatty() if enabled is None else enabled
        self.done = 0
        self.start = time.perf_counter()
        self._last_draw = 0.0
        self._drawn = False

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.start < self.delay_s or (now - self._last_draw < 0.1 and self.done < self.total):
            return
        self._last_draw = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        frac = self.done / self.total if self.total else 1.0
        filled = int(frac * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {self.done:,}/{self.total:,}  {now - self.start:.1f} s")
        self.stream.flush()
        self._drawn = True

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
    progress: bool | None = None,
) -> list:
    """``[fn(x) for x in items]``, over ``jobs`` processes when worth it, with a progress bar.

    ``fn`` must be a module-level function when ``jobs`` > 1; ``initializer(*initargs)``
    runs once in each worker (and once here when running in-process), so large shared
    objects (a hardware profile) travel once per worker instead of once per item.
    ``progress``: True/False forces the bar on or off; None draws it on a terminal only.
    """
    items = list(items)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    jobs = min(jobs, max(1, len(items) // MIN_ITEMS_PER_JOB))
    bar = ProgressBar(len(items), label, stream=stream, enabled=progress)
    with bar:
        if jobs == 1:
            if initializer is not None:
                initializer(*initargs)
            out = []
            for item in items:
                out.append(fn(item))
                bar.update()
            return out
        return _parallel(fn, items, jobs, initializer, initargs, bar)


def _parallel(fn, items, jobs, initializer, initargs, bar) -> list:
    # Chunks small enough for a smooth bar, large enough that pickling is not the cost.
    chunk = max(1, min(256, len(items) // (jobs * 8)))
    chunks = [items[i:i + chunk] for i in range(0, len(items), chunk)]
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    out: list = []
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=initializer, initargs=initargs) as pool:
        for result in pool.map(_run_chunk, [(fn, c) for c in chunks]):
            out.extend(result)
            bar.update(len(result))
    return out


def _run_chunk(args: tuple[Callable, list]) -> list:
    fn, chunk = args
    return [fn(x) for x in chunk]

