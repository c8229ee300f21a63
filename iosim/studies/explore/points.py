"""``explore_points()``: :func:`~.exploration.explore` at many points (N, d, heads, …), a
best per point.

With more than one point the points are the sweep's items: each runs whole (its grid
search, its counts, its replays) in a worker process of the executor — local processes
(``jobs``) or a Dask cluster — and the progress bar advances a point at a time. A point
is a second or more of counting, so even two points pay for a second process, where
spreading one point's tiles would not (a tile's count is a few milliseconds). A schedule
given as a function cannot travel to a worker: its points run here, one after another.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from ...run import resolve_profile
from ...workload.problem import Problem
from ..progress import default_jobs, progress_map
from .exploration import ExploreResult, explore

_SWEEP = threading.local()   # per thread: a Dask worker may run several points at once


def explore_points(hw, algorithms: Sequence[str | Callable], problems: Sequence[Problem],
                   **kwargs) -> list[ExploreResult]:
    """:func:`explore` at every problem for every algorithm, problem-major: a best per point.
    ``jobs``, ``executor`` and ``progress`` spread the points (see the module docstring);
    every other keyword goes to :func:`explore`."""
    profile = resolve_profile(hw)
    work = [(p, algo) for p in problems for algo in algorithms]
    jobs, executor = kwargs.get("jobs"), kwargs.get("executor")
    spread = (len(work) > 1 and all(not callable(a) for _, a in work)
              and (executor is not None or (default_jobs() if jobs is None else jobs) > 1))
    if not spread:
        return [explore(profile, algo, p, **kwargs) for p, algo in work]
    per_point = {**kwargs, "jobs": 1, "executor": None, "progress": False}
    return progress_map(_explore_point, work, label="iosim explore", jobs=jobs, initializer=_set_sweep,
                        initargs=(profile, per_point), progress=kwargs.get("progress"), executor=executor,
                        min_items_per_job=1, cost=[_point_cost(p) for p, _ in work])


def _point_cost(problem: Problem) -> float:
    """About what a point costs, to start the costliest first: its grid holds the tiles that
    fit the shared memory, about as many as 1/d (677 at d = 64 on the H100, 370 at d = 128)."""
    return 1.0 / problem.head_dim


def _set_sweep(profile, kwargs: dict) -> None:
    _SWEEP.profile, _SWEEP.kwargs = profile, kwargs


def _explore_point(item: tuple) -> ExploreResult:
    problem, algorithm = item
    return explore(_SWEEP.profile, algorithm, problem, **_SWEEP.kwargs)


__all__ = ["explore_points"]
