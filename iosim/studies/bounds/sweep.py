"""The points ``iosim bounds`` runs: the (N, d, M) grid over Theorem 2's regime, each
algorithm's blocks there, and one engine run per distinct block size.

Every count comes from :func:`run_blocks`, the one place the checker calls
:func:`~iosim.simulate`; it is module-level (with :func:`_set_worker_profile` as the
pool's initializer) so that :func:`~iosim.studies.progress.progress_map` can run it in
worker processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...dtypes import width
from ...errors import ProblemError
from ...hardware import HardwareProfile
from ...run import Options, simulate
from ...workload.problem import Problem
from ..progress import progress_map
from ..schedule_files import ScheduleFile, resolve_schedule
from .claims import rule_blocks

#: a capacity no tile set reaches: points are simulated unconstrained, then compared with M
_UNLIMITED_BYTES = 1 << 60
#: block-sparse points whose T_r × T_c mask has more blocks than this are skipped (memory)
MAX_MASK_BLOCKS = 1 << 20


# --------------------------------------------------------------------------------------
# one simulated point
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Point:
    """One algorithm at one (N, d, M): the exact per-head counts and whether it fits."""

    algorithm: str
    N: int
    d: int
    M: int
    block_q: int
    block_kv: int
    capped: str | None
    count: int                     # HBM elements moved, per head
    reads: dict                    # tensor -> elements read, per head
    writes: dict                   # tensor -> elements written, per head
    sram_peak_bytes: int
    sram_bytes: int                # M in bytes
    density: float = 1.0           # s: the fraction of (i, j) blocks visited (block-sparse only)
    passes: str = "forward"

    @property
    def feasible(self) -> bool:
        return self.sram_peak_bytes <= self.sram_bytes

    def to_dict(self) -> dict:
        return {"algorithm": self.algorithm, "N": self.N, "d": self.d, "M": self.M, "block_q": self.block_q,
                "block_kv": self.block_kv, "capped": self.capped, "count_elements": self.count,
                "sram_peak_bytes": self.sram_peak_bytes, "sram_bytes": self.sram_bytes, "feasible": self.feasible}


_WORKER_PROFILE: HardwareProfile | None = None


def _set_worker_profile(profile: HardwareProfile) -> None:
    global _WORKER_PROFILE
    _WORKER_PROFILE = profile


def count_point(task: tuple) -> Point:
    """Simulate one point; ``task`` = (algorithm, N, d, M, block rule, dtype)."""
    algorithm, N, d, M, rule, dtype = task
    blocks, capped = rule_blocks(rule, algorithm, M, d)
    run = run_blocks((algorithm, N, d, blocks.block_q, blocks.block_kv, dtype))
    return _point(algorithm, N, d, M, blocks, capped, dtype, run)


def run_blocks(key: tuple) -> tuple:
    """Run the schedule once; ``key`` = (algorithm, N, d, B_r, B_c, dtype).

    Returns (elements per head, reads per tensor, writes per tensor, peak shared-memory
    bytes). Shared memory is unlimited here: the peak is compared with each M afterwards,
    so every M that gives the same blocks shares one run. Module-level so that
    :func:`~iosim.studies.progress.progress_map` can run it in worker processes.
    """
    algorithm, N, d, block_q, block_kv, dtype = key
    problem = Problem(seq_len=N, head_dim=d, dtype=dtype)
    r = simulate(_WORKER_PROFILE, resolve_schedule(algorithm.schedule), problem, passes=algorithm.passes,
                 blocks=(block_q, block_kv), options=Options(sram_bytes=_UNLIMITED_BYTES, block_mask=algorithm.block_mask))
    bh = problem.heads_total
    reads = {n: t.read_elements // bh for n, t in r.tensors.items()}
    writes = {n: t.write_elements // bh for n, t in r.tensors.items()}
    density = r.options.get("block_density_active", 1.0)
    return r.hbm.total_elements // bh, reads, writes, r.sram.peak_bytes, density


def _point(algorithm, N, d, M, blocks, capped, dtype, run) -> Point:
    count, reads, writes, peak, density = run
    return Point(algorithm.name, N, d, M, blocks.block_q, blocks.block_kv, capped, count, reads, writes, peak,
                 M * width(dtype), density, algorithm.passes)


# --------------------------------------------------------------------------------------
# the grid
# --------------------------------------------------------------------------------------
def default_sram_grid(N: int, d: int, steps: int | None = None) -> list[int]:
    """The M values swept at (N, d): d, 2d, 4d, … up to N·d (and N·d itself), or with
    ``steps``, that many values spaced evenly in log M from d to N·d (duplicates dropped)."""
    if steps is not None:
        if steps < 2:
            raise ProblemError(f"--sram-steps must be at least 2, got {steps}")
        return sorted({int(round(M)) for M in np.geomspace(d, N * d, steps)} | {d, N * d})
    grid, M = [], d
    while M <= N * d:
        grid.append(M)
        M *= 2
    if grid[-1] != N * d:
        grid.append(N * d)
    return grid


def regime_points(seq_lens, head_dims, sram, sram_steps, profile_M) -> tuple[list, list]:
    """The (N, d, M) of the sweep inside Theorem 2's regime d ≤ M ≤ N·d, and the exclusions
    for the M asked for (``sram``, or the profile's own M) that fall outside it."""
    coords, excluded = [], []
    for N in sorted(set(seq_lens)):
        for d in sorted(set(head_dims)):
            grid = sorted(set(sram)) if sram is not None else sorted(set(default_sram_grid(N, d, sram_steps)) | {profile_M})
            for M in grid:
                if d <= M <= N * d:
                    coords.append((N, d, M))
                elif sram is not None or M == profile_M:
                    excluded.append({"N": N, "d": d, "M": M, "algorithm": None,
                                     "reason": f"outside Theorem 2's regime d ≤ M ≤ N·d ({d:,} ≤ M ≤ {N * d:,})"})
    if not coords:
        raise ProblemError("no point of the sweep lies in Theorem 2's regime d ≤ M ≤ N·d; "
                           "widen --sram or --seq-len")
    return coords, excluded


def plan_points(algos, coords, block_rule: str, dtype: str) -> tuple[list, list]:
    """Each algorithm at each (N, d, M) with its blocks, as (algorithm, N, d, M, blocks,
    capped); and the exclusions for block masks too large to build."""
    planned = [(a, N, d, M, *rule_blocks(block_rule, a, M, d)) for a in algos for (N, d, M) in coords]
    # A block mask is a T_r × T_c matrix; at the smallest M it would have billions of
    # entries, so those points are reported and skipped rather than exhausting memory.
    kept, excluded = [], []
    for a, N, d, M, b, capped in planned:
        square = Problem(seq_len=N, head_dim=d, dtype=dtype)
        t_r, t_c = b.num_q_blocks(square), b.num_kv_blocks(square)
        if a.block_mask and t_r * t_c > MAX_MASK_BLOCKS:
            excluded.append({"N": N, "d": d, "M": M, "algorithm": a.name,
                             "reason": f"block mask of {t_r:,} × {t_c:,} blocks is over the "
                                       f"{MAX_MASK_BLOCKS:,}-block limit"})
        else:
            kept.append((a, N, d, M, b, capped))
    return kept, excluded


def run_points(profile: HardwareProfile, algos, planned, dtype: str, jobs, progress,
               executor=None) -> tuple[list, int]:
    """Every planned point counted, and the number of distinct runs: points with the same
    blocks share one (run in worker processes, or on ``executor``, when every schedule can
    travel there: a built-in one's name, or a schedule of one's own as FILE.py:FUNCTION,
    which each worker loads itself; a function object runs in this process)."""
    keys = list(dict.fromkeys((a, N, d, b.block_q, b.block_kv, dtype) for a, N, d, M, b, _ in planned))
    parallel_ok = all(isinstance(a.schedule, (str, ScheduleFile)) for a in algos)
    runs = progress_map(run_blocks, keys, label="iosim bounds", jobs=jobs if parallel_ok else 1,
                        initializer=_set_worker_profile, initargs=(profile,), progress=progress,
                        executor=executor if parallel_ok else None)
    _set_worker_profile(None)
    by_key = dict(zip(keys, runs))
    points = [_point(a, N, d, M, b, capped, dtype, by_key[a, N, d, b.block_q, b.block_kv, dtype])
              for a, N, d, M, b, capped in planned]
    return points, len(keys)


def infeasible(points: Sequence[Point]) -> list[dict]:
    """The exclusions for points whose tiles do not fit in M."""
    return [{"N": p.N, "d": p.d, "M": p.M, "algorithm": p.algorithm,
             "reason": f"tiles need {p.sram_peak_bytes:,} B of SRAM > M = {p.M:,} elements "
                       f"({p.sram_bytes:,} B) with B_r={p.block_q}, B_c={p.block_kv}"}
            for p in points if not p.feasible]


def sweep_points(profile: HardwareProfile, algos, *, seq_lens, head_dims, sram, sram_steps, block_rule: str, dtype: str,
          profile_M: int, jobs, progress, executor=None) -> tuple[list, list, int]:
    """The whole sweep: (every Point, feasible or not; the exclusions, in the order outside
    the regime, mask too large, tiles too big; the number of distinct runs)."""
    coords, outside = regime_points(seq_lens, head_dims, sram, sram_steps, profile_M)
    planned, too_large = plan_points(algos, coords, block_rule, dtype)
    points, runs = run_points(profile, algos, planned, dtype, jobs, progress, executor)
    return points, outside + too_large + infeasible(points), runs
