"""Choose block sizes for one GPU and one attention shape (``iosim explore``).

Every (B_r, B_c) of a grid is *run* through the algorithm's schedule (counts come from
the engine), then judged:

* **feasible** when the tiles the schedule keeps in shared memory fit the profile's
  per-block shared memory (the paper's M); otherwise the reason gives the need against
  the capacity. The register file is checked the same way (the kernels keep S_ij and
  the O_i accumulator in registers, in fp32); a candidate that would spill is not
  chosen as best unless ``allow_spill`` is set.
* scored by the **objective**: ``hbm-bytes`` (HBM read + write bytes, summed over
  batch × heads) or ``time`` (the roofline prediction of :mod:`iosim.models.roofline`). Ties go to
  the other objective, then to the smaller shared-memory need (more thread blocks per
  SM), then to the larger tile.

The default grid holds the powers of two and the multiples of 16 up to what shared
memory allows along each axis (the largest B_r that fits with B_c = 1, and the
largest B_c with B_r = 1, both found by running the schedule), capped at the sequence
length. The paper's default (Algorithm 1 line 1, B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d))
and the real kernel's tile (:mod:`iosim.kernels.tile_tables`) are always evaluated too, so the best
is never worse than either when they are feasible.

For ``standard`` the blocks only matter when its matrix products are tiled, so explore
runs it with ``gemm="tiled"`` (the idealised count does not depend on blocks).

>>> from iosim import Problem
>>> res = explore("h100-sxm", "fa2", Problem(seq_len=4096, head_dim=128), block_q=[64, 128], block_kv=[64, 128])
>>> (res.best.block_q, res.best.block_kv), (res.kernel.block_q, res.kernel.block_kv)
((128, 64), (128, 64))
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

from ..errors import ProblemError, require_choice, require_positive_int
from ..hardware import HardwareProfile
from ..kernels.tile_tables import NoKernelTile, kernel_tile
from ..workload.problem import Problem, paper_block_sizes, sram_elements
from .progress import progress_map
from ..schedules import SCHEDULES
from ..run import Options, resolve_profile, simulate

OBJECTIVES = ("hbm-bytes", "time")
#: schedule options explore runs each algorithm with
EXPLORE_OPTIONS: dict[str, dict] = {"standard": {"gemm": "tiled"}}
_UNLIMITED_BYTES = 1 << 60


@dataclass(frozen=True)
class Candidate:
    """One (B_r, B_c), counted and judged."""

    block_q: int
    block_kv: int
    sram_need_bytes: int
    sram_capacity_bytes: int
    registers_bytes: int
    registers_capacity_bytes: int | None
    hbm_read_bytes: int
    hbm_write_bytes: int
    predicted_s: float
    bound: str
    sources: tuple = ("grid",)     # "grid", "paper", "kernel", "user"

    @property
    def feasible(self) -> bool:
        return self.sram_need_bytes <= self.sram_capacity_bytes

    @property
    def registers_fit(self) -> bool:
        return self.registers_capacity_bytes is None or self.registers_bytes <= self.registers_capacity_bytes

    def eligible(self, allow_spill: bool) -> bool:
        """Whether it may be chosen as best: it fits in shared memory, and in the register
        file unless ``allow_spill``."""
        return self.feasible and (allow_spill or self.registers_fit)

    @property
    def hbm_total_bytes(self) -> int:
        return self.hbm_read_bytes + self.hbm_write_bytes

    @property
    def reason(self) -> str:
        """Why the candidate is infeasible or would spill; "" when it fits."""
        parts = []
        if not self.feasible:
            parts.append(f"shared memory: needs {self.sram_need_bytes:,} B > {self.sram_capacity_bytes:,} B per block")
        if not self.registers_fit:
            parts.append(f"registers: needs {self.registers_bytes:,} B > {self.registers_capacity_bytes:,} B "
                         "per block (would spill)")
        return "; ".join(parts)

    def score(self, objective: str) -> tuple:
        main, other = ((self.hbm_total_bytes, self.predicted_s) if objective == "hbm-bytes"
                       else (self.predicted_s, self.hbm_total_bytes))
        return (main, other, self.sram_need_bytes, -self.block_q, -self.block_kv)

    def to_dict(self) -> dict:
        return {
            "block_q": self.block_q, "block_kv": self.block_kv, "feasible": self.feasible, "reason": self.reason,
            "registers_fit": self.registers_fit,
            "sram_need_bytes": self.sram_need_bytes, "sram_capacity_bytes": self.sram_capacity_bytes,
            "registers_bytes": self.registers_bytes, "registers_capacity_bytes": self.registers_capacity_bytes,
            "hbm_read_bytes": self.hbm_read_bytes, "hbm_write_bytes": self.hbm_write_bytes,
            "hbm_total_bytes": self.hbm_total_bytes, "predicted_s": self.predicted_s, "bound": self.bound,
            "sources": list(self.sources),
        }


@dataclass
class ExploreResult:
    """The candidates of one algorithm, with the best, the paper default and the real kernel's tile."""

    algorithm: str
    profile: str
    problem: Problem
    objective: str
    M: int                          # the profile's shared memory per block, in elements
    candidates: list
    best: Candidate
    paper: Candidate
    kernel: Candidate | None
    kernel_info: dict | None        # presets.KernelTile.to_dict(), or None
    kernel_reason: str              # why there is no kernel tile ("" when there is)
    allow_spill: bool = False
    grid_limits: dict = field(default_factory=dict)

    def compare(self, c: Candidate | None) -> dict | None:
        """A reference point as the JSON contract shows it, with its ratios to the best."""
        if c is None:
            return None
        d = {**c.to_dict(),
             "hbm_ratio_vs_best": c.hbm_total_bytes / self.best.hbm_total_bytes,
             "time_ratio_vs_best": c.predicted_s / self.best.predicted_s if self.best.predicted_s else None}
        return d

    def to_dict(self) -> dict:
        p = self.problem
        return {
            "algorithm": self.algorithm, "profile": self.profile, "objective": self.objective,
            "problem": {"batch": p.batch, "heads": p.heads, "kv_heads": p.kv_heads,
                        "seq_len_q": p.seq_len_q, "seq_len_kv": p.seq_len_kv,
                        "head_dim": p.head_dim, "dtype": p.dtype, "causal": p.causal},
            "M_elements": self.M, "allow_spill": self.allow_spill, "grid_limits": self.grid_limits,
            "best": self.best.to_dict(),
            "paper_default": self.compare(self.paper),
            "kernel_default": None if self.kernel is None else {**self.compare(self.kernel), "kernel": self.kernel_info},
            "kernel_reason": self.kernel_reason or None,
            "candidates": [c.to_dict() for c in self.candidates],
        }


_WORKER: dict = {}


def _init_worker(profile: HardwareProfile, algorithm: str, problem: Problem, options: dict,
                 passes: str = "forward", block_mask: str | None = None) -> None:
    _WORKER.update(profile=profile, algorithm=algorithm, problem=problem, passes=passes,
                   options=Options(sram_bytes=_UNLIMITED_BYTES, block_mask=block_mask, **options))


def _measure(blocks: tuple[int, int]) -> tuple:
    """Run the schedule at (B_r, B_c) with unlimited shared memory; the raw numbers."""
    w = _WORKER
    r = simulate(w["profile"], w["algorithm"], w["problem"], passes=w["passes"], blocks=blocks,
                 options=w["options"])
    return (blocks[0], blocks[1], r.sram.peak_bytes, r.registers.peak_bytes, r.hbm.read_bytes, r.hbm.write_bytes,
            r.time.predicted_s, r.time.bound)


def _candidate(raw: tuple, sram_cap: int, reg_cap: int | None, sources: tuple) -> Candidate:
    bq, bkv, sram, regs, rd, wr, t, bound = raw
    return Candidate(bq, bkv, sram, sram_cap, regs, reg_cap, rd, wr, t, bound, sources)


def _largest_fitting(axis: str, hi: int, capacity: int) -> int:
    """The largest block along ``axis`` (other axis = 1) whose tiles fit ``capacity``: a
    bisection on the schedule's own shared-memory need."""
    def need(b):
        return _measure((b, 1) if axis == "q" else (1, b))[2]

    if need(1) > capacity:
        return 0
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if need(mid) <= capacity:
            lo = mid
        else:
            hi = mid - 1
    return lo


def default_grid(limit: int) -> list[int]:
    """Powers of two and multiples of 16, up to ``limit``."""
    values = {1 << k for k in range(limit.bit_length()) if 1 << k <= limit}
    values |= set(range(16, limit + 1, 16))
    return sorted(values)


def explore(
    hw: str | os.PathLike | HardwareProfile,
    algorithm: str,
    problem: Problem,
    *,
    block_q: Sequence[int] | None = None,
    block_kv: Sequence[int] | None = None,
    objective: str = "hbm-bytes",
    allow_spill: bool = False,
    dropout: bool = False,
    jobs: int | None = None,
    progress: bool | None = None,
    passes: str = "forward",
    block_mask: str | None = None,
) -> ExploreResult:
    """Evaluate a (B_r, B_c) grid for ``algorithm`` on ``problem`` and pick the best.

    ``passes`` and ``block_mask`` are passed to :func:`iosim.simulate` for every candidate
    (a block-mask spec such as ``random:0.25`` is re-drawn for each tiling).
    """
    profile = resolve_profile(hw)
    _validate(algorithm, objective, block_q, block_kv)
    sram_cap = profile.scratchpad.per_block_bytes
    regs = profile.registers
    reg_cap = regs.per_block_bytes if regs is not None else None
    M = sram_elements(sram_cap, problem.dtype)
    worker_args = (profile, algorithm, problem, EXPLORE_OPTIONS.get(algorithm, {}), passes, block_mask)
    _init_worker(*worker_args)

    limits, sources = _grid(algorithm, problem, block_q, block_kv, sram_cap)
    paper = paper_block_sizes(M, problem.head_dim)
    paper_key = (paper.block_q, paper.block_kv)
    sources[paper_key] = sources.get(paper_key, ()) + ("paper",)
    kernel_info, kernel_reason, kernel_key = _kernel_reference(sources, profile, algorithm, problem, passes, dropout)

    keys = list(sources)
    raw = progress_map(_measure, keys, label=f"iosim explore {algorithm}", jobs=jobs,
                       initializer=_init_worker, initargs=worker_args, progress=progress)
    by_key = {k: _candidate(r, sram_cap, reg_cap, sources[k]) for k, r in zip(keys, raw)}
    candidates = sorted(by_key.values(), key=lambda c: (c.block_q, c.block_kv))
    best = _best(candidates, algorithm, profile.name, objective, allow_spill)
    return ExploreResult(algorithm, profile.name, problem, objective, M, candidates, best, by_key[paper_key],
                         by_key[kernel_key] if kernel_key else None, kernel_info, kernel_reason, allow_spill, limits)


def _validate(algorithm: str, objective: str, block_q, block_kv) -> None:
    """Check :func:`explore`'s names and block lists (each a non-empty list of positive integers)."""
    require_choice("algorithm", algorithm, SCHEDULES)
    require_choice("objective", objective, OBJECTIVES)
    for name, values in (("block_q", block_q), ("block_kv", block_kv)):
        if values is None:
            continue
        if not values:
            raise ProblemError(f"{name}: give at least one value", field=name)
        for v in values:
            require_positive_int(name, v)


def _grid(algorithm: str, problem: Problem, block_q, block_kv, sram_cap: int) -> tuple[dict, dict]:
    """The grid's largest fitting blocks (for the axes not given) and each (B_r, B_c) of
    the grid with its source ("grid", or "user" when either axis was given)."""
    limits = {}
    if block_q is None:
        limits["block_q"] = _largest_fitting("q", problem.seq_len_q, sram_cap)
    if block_kv is None:
        limits["block_kv"] = _largest_fitting("kv", problem.seq_len_kv, sram_cap)
    if 0 in limits.values():
        raise ProblemError(f"{algorithm}: even 1-row tiles do not fit in {sram_cap:,} B of shared memory "
                           f"at d = {problem.head_dim}")
    rows = sorted(set(block_q)) if block_q is not None else default_grid(limits["block_q"])
    cols = sorted(set(block_kv)) if block_kv is not None else default_grid(limits["block_kv"])
    sources: dict[tuple[int, int], tuple] = {(r, c): ("grid" if block_q is None and block_kv is None else "user",)
                                             for r in rows for c in cols}
    return limits, sources


def _kernel_reference(sources: dict, profile: HardwareProfile, algorithm: str, problem: Problem, passes: str,
                      dropout: bool) -> tuple:
    """Add the real kernel's tile to ``sources``; (its table entry, why there is none, its key)."""
    kernel_info, kernel_reason, kernel_key = None, "", None
    try:
        if passes == "forward+backward":
            raise NoKernelTile("the kernels use different tiles forward and backward; explore one pass at a time")
        tile = kernel_tile(algorithm, problem.head_dim, profile, causal=problem.causal, dropout=dropout,
                           seq_len_kv=problem.seq_len_kv, direction="bwd" if passes == "backward" else "fwd")
        kernel_info, kernel_key = tile.to_dict(), (tile.block_q, tile.block_kv)
        sources[kernel_key] = sources.get(kernel_key, ()) + ("kernel",)
    except NoKernelTile as exc:
        kernel_reason = str(exc)
    return kernel_info, kernel_reason, kernel_key


def _best(candidates: list, algorithm: str, profile_name: str, objective: str, allow_spill: bool) -> Candidate:
    """The eligible candidate that scores best; an error when none is eligible."""
    eligible = [c for c in candidates if c.eligible(allow_spill)]
    if not eligible:
        worst = min(candidates, key=lambda c: c.sram_need_bytes)
        raise ProblemError(f"{algorithm}: no candidate fits on {profile_name} (smallest need: {worst.reason})")
    return min(eligible, key=lambda c: c.score(objective))


__all__ = ["explore", "ExploreResult", "Candidate", "default_grid", "OBJECTIVES"]
