"""``explore --kernel triton-fa2``: every configuration (BLOCK_M, BLOCK_N, num_warps,
num_stages) of iosim's Triton kernel, ranked by its kernel time model
(:mod:`iosim.models.triton_time`; docs/triton.md).

A configuration's counts depend on its tile (BLOCK_M × BLOCK_N) and, through the L2 model's
concurrency, on how many of its blocks an SM holds; its time on all four knobs. So each
(tile, blocks per SM) is counted once — with the L2 model where it is on — and every
configuration sharing it is timed from that count.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ...errors import ProblemError
from ...hardware import HardwareProfile
from ...kernels.measured_steps import covers
from ...kernels.tile_tables import gpu_info
from ...kernels.triton_preset import (DEFAULT_CONFIG, TritonConfig, infeasible_reason, mma_version,
                                      registers_per_thread, search_space, shared_bytes, triton_tile)
from ...models import triton_time
from ...run import Options, prepare, resolve_profile
from ...run.kernel_timing import kernel_traffic
from ...run.launches import l2_by_default, run_launches
from ...workload.problem import Problem
from ..progress import progress_map
from .measure import sampled_note
from .ties import DEFAULT_TIE

#: a candidate whose steps the analytic model times (no measurement for it on this GPU)
ANALYTIC = "analytic"
#: why a configuration is not ranked where others of its head dim were measured on the GPU
NOT_MEASURED = ("not ranked: its steps were not measured on this GPU, where other configurations' were "
                "(an analytic time would not compare with theirs)")


@dataclass(frozen=True)
class ConfigCandidate:
    """One configuration, judged: why it cannot run ("" when it can), else its predicted time."""

    config: TritonConfig
    reason: str
    shared_bytes: int
    registers: int
    mma: int
    blocks_per_sm: int = 0
    predicted_s: float | None = None
    bound: str = ""
    dram_bytes: int | None = None
    hbm_bytes: int = 0
    #: what timed its steps: the measurement's source, or "analytic" (:func:`triton_time.model_name`)
    steps: str = ""

    @property
    def feasible(self) -> bool:
        return not self.reason

    def to_dict(self) -> dict:
        c = self.config
        return {"block_m": c.block_m, "block_n": c.block_n, "num_warps": c.num_warps, "num_stages": c.num_stages,
                "feasible": self.feasible, "reason": self.reason or None, "shared_bytes": self.shared_bytes,
                "registers_per_thread": self.registers, "mma": f"v{self.mma}", "blocks_per_sm": self.blocks_per_sm,
                "predicted_s": self.predicted_s, "bound": self.bound or None, "dram_bytes": self.dram_bytes,
                "hbm_bytes": self.hbm_bytes, "steps": self.steps or None}


@dataclass
class TritonExploreResult:
    """Every configuration on one problem, ranked."""

    profile: str
    problem: Problem
    cache: bool
    candidates: list
    tie: float = DEFAULT_TIE

    @property
    def ranked(self) -> list:
        return sorted((c for c in self.candidates if c.feasible), key=_rank_key)

    @property
    def best(self) -> ConfigCandidate:
        return self.ranked[0]

    @property
    def steps(self) -> str:
        """What timed the ranked configurations' steps, in words: all of them one way, since an
        unmeasured configuration is not ranked beside measured ones (:data:`NOT_MEASURED`)."""
        steps = self.ranked[0].steps
        return steps if steps != ANALYTIC else "analytic steps (none measured for this head dim on this GPU)"

    @property
    def near_ties(self) -> list:
        best = self.best.predicted_s
        return [c for c in self.ranked if c.predicted_s <= best * (1 + self.tie)]

    def to_dict(self) -> dict:
        p = self.problem
        return {"kernel_preset": "triton-fa2", "profile": self.profile, "cache": self.cache,
                "time_model": f"triton-fa2's kernel time model {'with' if self.cache else 'without'} the L2 model; "
                              f"{self.steps}",
                "problem": {"batch": p.batch, "heads": p.heads, "seq_len": p.seq_len_q, "head_dim": p.head_dim,
                            "dtype": p.dtype, "causal": p.causal},
                "best": self.best.to_dict(), "ties": {"tolerance": self.tie,
                                                      "members": [c.config.label() for c in self.near_ties]},
                "candidates": [c.to_dict() for c in self.candidates]}


def _rank_key(c: ConfigCandidate) -> tuple:
    """Time, then the smaller shared memory, then fewer stages and warps (cheaper to compile)."""
    return c.predicted_s, c.shared_bytes, c.config.num_stages, c.config.num_warps


def explore_triton(hw: str | os.PathLike | HardwareProfile, problem: Problem, *, configs=None,
                   cache: bool | None = None, tie: float = DEFAULT_TIE, jobs: int | None = 1,
                   executor=None, progress: bool | None = False) -> TritonExploreResult:
    """Rank ``configs`` (default: :func:`~iosim.kernels.triton_preset.search_space`) on
    ``problem``. ``cache``: the L2 model on, off, or (None) as ``iosim simulate`` decides for
    the preset's default configuration. The tiles are timed one per task on ``jobs`` local
    processes (or ``executor``), with a progress bar where ``progress`` asks for one."""
    profile = resolve_profile(hw)
    configs = [TritonConfig.parse(c) for c in (configs or search_space())]
    if problem.dtype not in ("fp16", "bf16"):
        raise ProblemError(f"kernel triton-fa2 runs fp16 and bf16, got {problem.dtype}", field="dtype")
    use_cache = _use_cache(profile, problem, cache)
    tiles: dict = {}     # (BLOCK_M, BLOCK_N) -> {blocks an SM: [(index, config, tile)]}
    out = []
    for cfg in configs:
        reason = infeasible_reason(cfg, problem.head_dim, problem.dtype, profile)
        if not reason and (cfg.block_m > problem.seq_len_q or cfg.block_n > problem.seq_len_kv):
            reason = f"tile {cfg.block_m}x{cfg.block_n} is larger than N = {problem.seq_len_q:,}"
        if reason:
            out.append(_infeasible(cfg, reason, problem, profile))
            continue
        tile = triton_tile(cfg, problem.head_dim, problem.dtype, profile)
        if tile.measured is None and covers("triton-fa2", profile.name, problem.head_dim):
            out.append(_infeasible(cfg, NOT_MEASURED, problem, profile))
            continue
        by_occupancy = tiles.setdefault((cfg.block_m, cfg.block_n), {})
        by_occupancy.setdefault(triton_time.blocks_per_sm(tile, profile), []).append((len(out), cfg, tile))
        out.append(None)
    items = [(profile, problem, use_cache, list(groups.values())) for groups in tiles.values()]
    cost = [1.0 / (bm * bn) for bm, bn in tiles]          # smaller tiles: longer streams
    for timed in progress_map(_time_tile, items, label=f"triton-fa2 tiles, N={problem.seq_len_q:,}", jobs=jobs,
                              cost=cost, executor=executor, progress=progress, min_items_per_job=4):
        for index, candidate in timed:
            out[index] = candidate
    if not any(c.feasible for c in out):
        raise ProblemError(f"kernel triton-fa2: no configuration fits on {profile.name} at d = {problem.head_dim}")
    return TritonExploreResult(profile.name, problem, bool(use_cache), out, tie)


def _time_tile(item: tuple) -> list:
    """(index, candidate) of every configuration of one tile: counted once without the L2
    model, then each group of one occupancy timed (:func:`_time_group`)."""
    profile, problem, use_cache, groups = item
    counted = _count(profile, problem, groups[0][0][1], False)
    return [pair for members in groups for pair in _time_group(members, profile, problem, use_cache, counted)]


def _time_group(members: list, profile, problem: Problem, use_cache: bool | str, result) -> list:
    """Time every configuration of one (tile, blocks per SM); ``result``: the tile's count
    without the L2 model. Where even every requested byte going to DRAM would not bound a
    configuration's time, that time is exact; otherwise (L2 model on) the group is replayed
    through it."""
    def timed(traffic) -> dict:
        return {i: triton_time.predict(profile, problem.dtype, tile, *traffic, causal=problem.causal)["main"]
                for i, _, tile in members}
    times = timed(kernel_traffic(result))
    dram_bound = any(t.per_resource_s["DRAM"] >= t.predicted_s - t.per_resource_s["launch"] for t in times.values())
    dram_bytes, off = None, ""
    if use_cache and dram_bound:
        replayed = _count(profile, problem, members[0][1], use_cache)
        if replayed.cache is None:       # past the L2 model's budget ("auto"): as simulate runs it
            off = f"; {replayed.l2_off}"
        else:
            off = sampled_note(replayed.cache)
            traffic = kernel_traffic(replayed)
            dram_bytes = sum(traffic[1].get("main", (0, 0)))
            times = timed(traffic)
    return [(index, ConfigCandidate(cfg, "", tile.shared_bytes, tile.registers, tile.mma,
                                    triton_time.blocks_per_sm(tile, profile), times[index].predicted_s,
                                    times[index].bound + off, dram_bytes, result.hbm.total_bytes,
                                    tile.measured.source if tile.measured else ANALYTIC))
            for index, cfg, tile in members]


def _infeasible(cfg: TritonConfig, reason: str, problem: Problem, profile) -> ConfigCandidate:
    version = mma_version(cfg, gpu_info(profile))
    return ConfigCandidate(cfg, reason, shared_bytes(cfg, problem.head_dim, problem.dtype),
                           registers_per_thread(cfg, problem.head_dim, version), version)


def _count(profile, problem: Problem, cfg: TritonConfig, cache: bool | str):
    options = Options(kernel="triton-fa2", kernel_config=cfg.key(), cache=cache)
    return run_launches(prepare(profile, "fa2", problem, options=options), "count", None)


def _use_cache(profile, problem: Problem, cache: bool | None) -> bool | str:
    """True (``--cache``: every replay up to the model's hard limit), False, or "auto" where
    simulate would model the L2 for the preset's default configuration: then each
    configuration's replay is on within the model's default budget, as simulate runs it."""
    if cache is not None:
        if cache and profile.cache is None:
            raise ProblemError(f"profile {profile.name} describes no cache level to model", field="cache")
        return cache
    on = l2_by_default(prepare(profile, "fa2", problem, options=Options(kernel="triton-fa2",
                                                                       kernel_config=DEFAULT_CONFIG)))
    return "auto" if on else False


__all__ = ["explore_triton", "ConfigCandidate", "TritonExploreResult", "NOT_MEASURED"]
