"""Where a sweep's work runs: in this process, on this machine's cores, or on a Dask cluster.

A sweep is split into chunks of items; an executor runs each chunk as one task and yields
``(chunk index, results)`` as chunks finish, in whatever order they finish, so a progress
bar advances with the work instead of waiting for the first chunk. Each task carries the
sweep's initializer and its arguments (a hardware profile, the problem), so a worker needs
no state of its own: the same task runs in a local process pool and on a Dask worker.

>>> list(InlineExecutor().run(_square_all, [[1, 2], [3]]))
[(0, [1, 4]), (1, [9])]
"""

from __future__ import annotations

import multiprocessing
import re
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, Iterator, Protocol, Sequence

from ..errors import DependencyError, ProblemError

#: what ``--executor`` accepts
EXECUTORS = ("local", "dask")


#: what a Dask scheduler's address looks like (checked before connecting: a malformed one
#: left a half-made Client that hung 10 s at exit)
_ADDRESS = re.compile(r"((tcp|tls|ws|wss|ucx)://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}")

class Executor(Protocol):
    """Runs ``task(chunk)`` for every chunk; yields (index, result) as each finishes."""

    def run(self, task: Callable, chunks: Sequence[list]) -> Iterator[tuple[int, list]]: ...


class InlineExecutor:
    """Every chunk in this process, in order (small sweeps, and where processes can't start)."""

    def run(self, task: Callable, chunks: Sequence[list]) -> Iterator[tuple[int, list]]:
        for index, chunk in enumerate(chunks):
            yield index, task(chunk)


class LocalExecutor:
    """``jobs`` worker processes on this machine (forked where the platform allows)."""

    def __init__(self, jobs: int):
        self.jobs = jobs

    def run(self, task: Callable, chunks: Sequence[list]) -> Iterator[tuple[int, list]]:
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        with ProcessPoolExecutor(max_workers=self.jobs, mp_context=ctx) as pool:
            futures = {pool.submit(task, chunk): i for i, chunk in enumerate(chunks)}
            for future in as_completed(futures):
                yield futures[future], future.result()


class DaskExecutor:
    """The workers of a Dask cluster (``pip install "iosim[dask]"``), reached at ``address``
    (e.g. ``tcp://127.0.0.1:8786``, what ``dask scheduler`` prints)."""

    def __init__(self, address: str, connect_timeout_s: float = 5.0):
        try:
            from distributed import Client
        except ImportError:
            raise DependencyError('the Dask executor needs dask.distributed: pip install "iosim[dask]"') from None
        if not isinstance(address, str) or not _ADDRESS.fullmatch(address):
            raise ProblemError(f"scheduler={address!r} is not a Dask scheduler address (tcp://HOST:PORT or "
                               "HOST:PORT)", field="scheduler")
        self.address, self.connect_timeout_s = address, connect_timeout_s
        self._client_type = Client

    def run(self, task: Callable, chunks: Sequence[list]) -> Iterator[tuple[int, list]]:
        from distributed import as_completed as dask_completed

        try:
            client = self._client_type(self.address, timeout=f"{self.connect_timeout_s}s", set_as_default=False)
        except (OSError, TimeoutError, ValueError, TypeError) as exc:   # ValueError: a malformed address
            raise ProblemError(f"no Dask scheduler answers at {self.address!r}: {exc}", field="scheduler") from None
        with client, client.as_current():
            futures = client.map(task, list(chunks), pure=False)
            index = {f.key: i for i, f in enumerate(futures)}
            for future in dask_completed(futures):
                yield index[future.key], future.result()


def make_executor(name: str = "local", *, jobs: int = 1, scheduler: str | None = None) -> Executor:
    """The executor ``--executor NAME`` asks for (``local`` with one job runs inline)."""
    if name not in EXECUTORS:
        raise ProblemError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}", field="executor")
    if name == "dask":
        if not scheduler:
            raise ProblemError("executor='dask' needs scheduler=ADDRESS, the Dask scheduler's address", field="scheduler")
        return DaskExecutor(scheduler)
    if scheduler is not None:
        raise ProblemError(f"scheduler={scheduler!r} goes with executor='dask' only", field="scheduler")
    return InlineExecutor() if jobs <= 1 else LocalExecutor(jobs)


def _square_all(chunk: list) -> list:  # the doctest's task
    return [x * x for x in chunk]


__all__ = ["Executor", "InlineExecutor", "LocalExecutor", "DaskExecutor", "make_executor", "EXECUTORS"]
