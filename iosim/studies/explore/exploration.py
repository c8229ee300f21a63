"""``explore()``: every (B_r, B_c) of a grid run through the schedule, ranked by the model
``iosim simulate`` uses, with the near-ties and the practical choice among them."""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ...errors import ProblemError, require_choice, require_positive_int
from ...hardware import HardwareProfile
from ...kernels.plan import KERNELS
from ...kernels.tile_tables import NoKernelTile, kernel_tile
from ...run import resolve_profile
from ...run.launches import l2_by_default
from ...schedules import SCHEDULES
from ...workload.layouts import padded_layout_notes
from ...workload.problem import Problem, paper_block_sizes, sram_elements
from ..progress import default_jobs, progress_map
from ..schedule_files import ScheduleFile, schedule_name, user_schedule
from . import measure
from .candidate import OBJECTIVES, Candidate, canonical_objective
from .registers import register_capacity, warp_rows
from .tile_grid import GRIDS, MMA_STEP, grid_axes, within_edge
from .ties import DEFAULT_REPLAYS, DEFAULT_TIE, Ranking, rank

#: schedule options explore runs each algorithm with
EXPLORE_OPTIONS: dict[str, dict] = {"standard": {"gemm": "tiled"}}
#: a tile's first count takes 1-3 ms: a worker process pays for itself from about this many
TILES_PER_JOB = 100
#: the most tile steps per head a replay (a count with the L2 model) in the ranking may take
#: where thread blocks are not in lockstep (past it simulate plays windows of the rounds, seconds
#: a tile: docs/cache.md, "Any length"): a tile with more keeps the bounds of its first count.
#: In lockstep the L2 model's budget of requests decides (its sample past it), as in simulate
REPLAY_STEPS = 4_000_000


@dataclass
class ExploreResult:
    """The candidates of one algorithm on one problem, ranked, with the reference tiles."""

    algorithm: str
    profile: str
    problem: Problem
    objective: str
    M: int                          # the profile's shared memory per block, in elements
    candidates: list
    best: Candidate
    paper: Candidate
    kernel: Candidate | None
    kernel_info: dict | None        # KernelTile.to_dict() of the real kernel's tile, or None
    kernel_reason: str              # why there is no kernel tile ("" when there is)
    allow_spill: bool = False
    grid_limits: dict = field(default_factory=dict)
    grid: str = "tensor-core"
    ranking: Ranking | None = None
    time_model: str = "roofline"    # which model gave every time (see describe_model)
    cache: bool = False             # whether the L2 model is part of it
    cache_asked: bool = True        # played as `simulate --cache` plays it (else as simulate decides by default)
    kernel_preset: str | None = None
    passes: str = "forward"
    registers_by: str = ""          # what caps a tile's registers where not the profile (.registers)

    @property
    def notes(self) -> tuple[str, ...]:
        """What every tile's run says, as simulate's notes do (a padded head dim's layout left behind)."""
        return padded_layout_notes(self.problem, self.kernel_preset)

    @property
    def practical(self) -> Candidate:
        return self.ranking.practical

    def compare(self, c: Candidate | None) -> dict | None:
        """A reference point as the JSON contract shows it, with its ratios to the best."""
        if c is None:
            return None
        best = self.best
        time_ratio = (c.predicted_s / best.predicted_s if c.predicted_s is not None and best.predicted_s else None)
        return {**self.candidate_dict(c), "hbm_ratio_vs_best": c.hbm_total_bytes / best.hbm_total_bytes,
                "time_ratio_vs_best": time_ratio}

    def candidate_dict(self, c: Candidate) -> dict:
        return {**c.to_dict(), "is_best": c is self.best or (c.block_q, c.block_kv) == (self.best.block_q,
                                                                                      self.best.block_kv),
                "near_tie": self.ranking.is_member(c),
                "practical": (c.block_q, c.block_kv) == (self.practical.block_q, self.practical.block_kv)}

    def to_dict(self) -> dict:
        p, r = self.problem, self.ranking
        return {
            "algorithm": self.algorithm, "profile": self.profile, "objective": self.objective,
            "passes": self.passes,
            "problem": {"batch": p.batch, "heads": p.heads, "kv_heads": p.kv_heads,
                        "seq_len_q": p.seq_len_q, "seq_len_kv": p.seq_len_kv,
                        "head_dim": p.head_dim, "dtype": p.dtype, "causal": p.causal, "layout": p.layout},
            "time_model": self.time_model, "cache": self.cache, "kernel_preset": self.kernel_preset,
            "registers_by": self.registers_by, "notes": list(self.notes),
            "M_elements": self.M, "allow_spill": self.allow_spill, "grid": self.grid, "grid_limits": self.grid_limits,
            "best": self.candidate_dict(self.best), "best_proven": r.best_proven,
            "ties": {"tolerance": r.tolerance, "members": [[c.block_q, c.block_kv] for c in r.members],
                     "undecided": [[c.block_q, c.block_kv] for c in r.undecided],
                     "practical": self.compare(self.practical), "practical_reason": r.practical_reason},
            "replays": {"ranking": r.replays, "budget": r.budget},
            "paper_default": self.compare(self.paper),
            "kernel_default": None if self.kernel is None else {**self.compare(self.kernel), "kernel": self.kernel_info},
            "kernel_reason": self.kernel_reason or None,
            "candidates": [self.candidate_dict(c) for c in self.candidates],
        }


def describe_model(kernel_model: bool, kernel: str | None, cache: bool) -> str:
    """The time model, as the report names it."""
    base = f"{kernel}'s kernel time model" if kernel_model else "roofline"
    return f"{base} {'with' if cache else 'without'} the L2 model"


@dataclass(frozen=True)
class _Settings:
    objective: str
    grid: str
    kernel: str | None
    cache: bool | None
    tie: float
    replays: int
    allow_spill: bool
    dropout: bool
    passes: str
    block_mask: str | None
    jobs: int = 1


def explore(
    hw: str | os.PathLike | HardwareProfile, algorithm: str | Callable, problem: Problem, *,
    block_q: Sequence[int] | None = None, block_kv: Sequence[int] | None = None, objective: str | None = None,
    allow_spill: bool = False, dropout: bool = False, jobs: int | None = None, progress: bool | None = None,
    passes: str = "forward", block_mask: str | None = None, grid: str = "tensor-core", kernel: str | None = None,
    cache: bool | None = None, tie: float = DEFAULT_TIE, replays: int = DEFAULT_REPLAYS, executor=None,
) -> ExploreResult:
    """Evaluate a (B_r, B_c) grid for ``algorithm`` on ``problem`` and rank it.

    ``objective``: ``"time"`` (the time ``simulate`` predicts), ``"bytes"`` (HBM bytes
    requested; ``"hbm-bytes"`` is accepted) or ``"dram"`` (DRAM bytes from the L2 model);
    by default time with a ``kernel`` (its time model is the point of naming one), else bytes.
    ``grid``: ``"tensor-core"`` or ``"all"`` (:mod:`.tile_grid`); ``block_q`` / ``block_kv``
    replace an axis. ``kernel``: time each tile with a real kernel's launches and time model
    (``"flash-attn-2"``, ``"flash-attn-3"``). ``cache``: the L2 model on, off, or (None) as
    ``iosim simulate`` decides for the reference tile. ``tie``: the near-tie tolerance;
    ``replays``: how many L2 replays the ranking may take (:mod:`.ties`). ``passes`` and
    ``block_mask`` go to every run (a mask spec such as ``random:0.25`` is re-drawn per tiling).
    ``executor``: where the first counts run (:mod:`iosim.studies.executors`; default local
    processes, ``jobs``); the few L2 replays run on local processes.

    ``algorithm``: a built-in name, or a schedule of one's own — ``"FILE.py:FUNCTION"``
    (named so in the result; each worker process loads it) or a function (run in this
    process: a function may not pickle). No real kernel's tile applies to it
    (``kernel_reason`` says so) and it takes no ``kernel`` preset.
    """
    profile = resolve_profile(hw)
    name, schedule, mine = _algorithm(algorithm)
    if mine is not None and not isinstance(mine, ScheduleFile):    # a function stays in this process
        jobs, executor = 1, None
    s = _Settings(canonical_objective(objective or ("time" if kernel else "bytes")), grid, kernel, cache, tie,
                  replays, allow_spill, dropout, passes, block_mask, default_jobs() if jobs is None else jobs)
    _validate(name, mine is not None, s, block_q, block_kv)
    options = dict(block_mask=block_mask, kernel=kernel, **(EXPLORE_OPTIONS.get(name, {}) if mine is None else {}))
    measure.init_worker(profile, schedule, problem, passes, options, cache=False)
    sources: dict = {}
    paper_key = _paper_key(profile, problem, sources)
    kernel_info, kernel_reason, kernel_key = _kernel_reference(sources, profile, name, mine is not None, problem, s)
    use_cache = _use_cache(s, profile, kernel_key or paper_key)
    # a replay decides as simulate does for its tile: by the L2 model's budget, unless asked for
    replays_as = "auto" if use_cache and s.cache is None and s.objective != "dram" else use_cache
    worker_args = (profile, schedule, problem, passes, options, replays_as)
    measure.init_worker(*worker_args)
    warps = _warp_limits(profile, s)
    limits = _grid(sources, name, problem, block_q, block_kv, profile, s, warps)
    keys = list(sources)
    known = {k: measure.measured(k) for k in keys}              # counted by the grid's search, or None
    todo = [k for k, v in known.items() if v is None]
    known.update(zip(todo, progress_map(measure.measure, todo, label=f"iosim explore {name}", jobs=s.jobs,
                                        initializer=measure.init_worker, initargs=worker_args, progress=progress,
                                        executor=executor, min_items_per_job=TILES_PER_JOB)))
    measure.init_worker(*worker_args)
    cands = {k: _candidate(known[k], warps, profile, sources[k], use_cache) for k in keys}
    _check_candidates(name, cands, profile, allow_spill)
    ranking = _rank(cands, s, kernel_key, (paper_key, kernel_key), worker_args)
    return ExploreResult(name, profile.name, problem, s.objective, sram_elements(profile.scratchpad.per_block_bytes,
                         problem.dtype), sorted(cands.values(), key=lambda c: (c.block_q, c.block_kv)),
                         ranking.best, cands[paper_key], cands[kernel_key] if kernel_key else None, kernel_info,
                         kernel_reason, allow_spill, limits, grid, ranking, describe_model(known[keys[0]][10], kernel,
                         use_cache), use_cache, replays_as != "auto", kernel, passes, warps[1])


def _algorithm(algorithm) -> tuple:
    """(the name reported, what the workers run, the schedule of one's own or None): a
    built-in name as it is; ``"FILE.py:FUNCTION"`` as a :class:`ScheduleFile`, named so."""
    mine = user_schedule(algorithm)
    if mine is None:
        if not isinstance(algorithm, str):
            raise ProblemError(f"algorithm: expected a name, 'FILE.py:FUNCTION' or a schedule function, got "
                               f"{algorithm!r}", field="algorithm")
        return algorithm, algorithm, None
    return schedule_name(mine), mine, mine


def _validate(name: str, mine: bool, s: _Settings, block_q, block_kv) -> None:
    """Check :func:`explore`'s names, numbers and block lists (``mine``: a schedule of one's own)."""
    if not mine:
        require_choice("algorithm", name, SCHEDULES)
    require_choice("objective", s.objective, OBJECTIVES)
    require_choice("grid", s.grid, GRIDS)
    if s.kernel is not None:
        require_choice("kernel", s.kernel, KERNELS)
        if s.kernel == "triton-fa2":
            raise ProblemError("kernel='triton-fa2' ranks the Triton kernel's (BLOCK_M, BLOCK_N, num_warps, num_stages) "
                               "configurations, not tiles: use iosim.studies.explore.triton_configs.explore_triton"
                               "(hw, problem), as `iosim explore --kernel triton-fa2` does", field="kernel")
        if mine:
            raise ProblemError(f"kernel={s.kernel!r} runs the real kernel's own launches, not {name} (a schedule of "
                               "your own): drop it", field="kernel")
        if s.passes == "forward+backward":
            raise ProblemError("kernel: the kernels use different tiles forward and backward; explore one pass "
                               "at a time", field="kernel")
        if s.block_mask is not None:
            raise ProblemError("kernel: the real kernels' presets take no block mask", field="kernel")
    if not (isinstance(s.tie, (int, float)) and 0 <= s.tie < 1):
        raise ProblemError(f"tie: expected a fraction in [0, 1), got {s.tie!r}", field="tie")
    if s.replays != 0:
        require_positive_int("replays", s.replays)
    for name, values in (("block_q", block_q), ("block_kv", block_kv)):
        if values is None:
            continue
        if not values:
            raise ProblemError(f"{name}: give at least one value", field=name)
        for v in values:
            require_positive_int(name, v)


def _check_candidates(name: str, cands: dict, profile: HardwareProfile, allow_spill: bool) -> None:
    """Something to rank: a tile that fits, and (a schedule of one's own may not) HBM traffic
    at every tile that does, which the ranking and its ratios divide by."""
    eligible = [c for c in cands.values() if c.eligible(allow_spill)]
    if not eligible:
        worst = min(cands.values(), key=lambda c: c.sram_need_bytes)
        raise ProblemError(f"{name}: no candidate fits on {profile.name} (smallest need: {worst.reason})")
    idle = next((c for c in eligible if c.hbm_total_bytes == 0), None)
    if idle is not None:
        raise ProblemError(f"{name} moves no HBM byte with B_r={idle.block_q}, B_c={idle.block_kv} (it reads none of "
                           "Q, K, V and writes no O there): explore ranks tiles by the traffic they move")


def _paper_key(profile: HardwareProfile, problem: Problem, sources: dict) -> tuple[int, int]:
    paper = paper_block_sizes(sram_elements(profile.scratchpad.per_block_bytes, problem.dtype), problem.head_dim)
    key = (paper.block_q, paper.block_kv)
    sources[key] = sources.get(key, ()) + ("paper",)
    return key


def _kernel_reference(sources: dict, profile: HardwareProfile, algorithm: str, mine: bool, problem: Problem,
                      s: _Settings) -> tuple:
    """Add the real kernel's tile to ``sources``; (its table entry, why there is none, its key).
    With a kernel preset, the preset's own tile (what ``simulate --kernel`` runs); none for
    a schedule of one's own (``mine``)."""
    if mine:
        return None, (f"{algorithm} is a schedule of your own: no real kernel's tile applies (the tile tables are "
                      "flash-attn's, for the built-in schedules)"), None
    if s.kernel is not None:
        tile = measure.kernel_base().launches[0].tile
    else:
        try:
            if s.passes == "forward+backward":
                raise NoKernelTile("the kernels use different tiles forward and backward; explore one pass at a time")
            tile = kernel_tile(algorithm, problem.head_dim, profile, causal=problem.causal, dropout=s.dropout,
                               seq_len_kv=problem.seq_len_kv, direction="bwd" if s.passes == "backward" else "fwd")
        except NoKernelTile as exc:
            return None, str(exc), None
    key = (tile.block_q, tile.block_kv)
    sources[key] = sources.get(key, ()) + ("kernel",)
    return tile.to_dict(), "", key


def _use_cache(s: _Settings, profile: HardwareProfile, reference: tuple[int, int]) -> bool:
    """Whether the L2 model is part of the time (and needed for the dram objective): by
    default as ``simulate`` decides for the ``reference`` tile (:func:`iosim.run.launches.l2_by_default`)."""
    if s.objective == "dram":
        if profile.cache is None:
            raise ProblemError(f"objective dram: DRAM bytes come from the L2 model, and profile {profile.name} "
                               "describes no cache level; use --objective bytes or time", field="objective")
        if s.cache is False:
            raise ProblemError("objective dram needs the L2 model: drop --no-cache", field="objective")
        return True
    if s.cache is not None:
        if s.cache and profile.cache is None:
            raise ProblemError(f"profile {profile.name} describes no cache level to model", field="cache")
        return s.cache
    return l2_by_default(measure.tile_setup(reference))   # as simulate decides; a tile that does not fit still plans


def _grid(sources: dict, algorithm: str, problem: Problem, block_q, block_kv, profile: HardwareProfile,
          s: _Settings, warps: tuple) -> dict:
    """Add the grid's tiles to ``sources`` ("grid", or "user" when an axis was given);
    the largest fitting blocks of the axes the grid chose. ``warps``: :func:`_warp_limits`."""
    row_step = warps[2] or MMA_STEP
    limits, rows, cols = {}, block_q, block_kv
    if block_q is None or block_kv is None:
        limits, grid_rows, grid_cols = grid_axes(
            s.grid, measure.shared_memory_need, problem.seq_len_q, problem.seq_len_kv,
            profile.scratchpad.per_block_bytes, row_step, label=f"{algorithm} at d = {problem.head_dim}: ")
        rows = grid_rows if block_q is None else rows
        cols = grid_cols if block_kv is None else cols
        limits = {k: v for k, v in limits.items() if (block_q if k == "block_q" else block_kv) is None}
    source = "grid" if block_q is None and block_kv is None else "user"
    regs, holder = (None, "") if s.allow_spill else warps[:2]
    fit = functools.partial(measure.fits, sram_bytes=profile.scratchpad.per_block_bytes, register_bytes=regs)
    tiles = within_edge(sorted(set(rows)), sorted(set(cols)), fit)
    if source == "user" and not any(fit(key) for key in tiles):
        _none_fits(algorithm, problem, tiles[0], profile, regs, holder)
    for key in tiles:
        sources[key] = (source,) + sources.get(key, ())
    return limits


def _none_fits(algorithm: str, problem: Problem, smallest: tuple[int, int], profile: HardwareProfile,
               register_bytes: int | None, holder: str) -> None:
    """Refuse block lists none of whose tiles fits (rather than rank the paper's or the
    kernel's tile, which were not asked for): the capacity, and the need of the ``smallest``
    tile asked for (both needs grow along both axes, so no other tile needs less)."""
    _, _, sram, regs, *_ = measure.measure(smallest)
    cap = profile.scratchpad.per_block_bytes
    M = sram_elements(cap, problem.dtype)
    where = f"{algorithm} at N = {problem.seq_len_q:,}, d = {problem.head_dim}: none of the tiles given fits"
    tile = f"the smallest asked, B_r×B_c = {smallest[0]}×{smallest[1]}"
    if sram > cap:
        raise ProblemError(f"{where}: {tile}, needs {sram:,} B of shared memory, and {profile.name} has {cap:,} B "
                           f"per block (M = {M:,} {problem.dtype} elements); give smaller --block-q/--block-kv",
                           field="block_q")
    has = f"{holder} {register_bytes:,} B without spilling" if holder else \
        f"{profile.name} has {register_bytes:,} B per block"
    raise ProblemError(f"{where}: {tile}, needs {regs:,} B of registers, and {has} (its {cap:,} B of shared memory "
                       "would do); give smaller --block-q/--block-kv, or --allow-spill to rank tiles that spill",
                       field="block_q")


def _warp_limits(profile: HardwareProfile, s: _Settings) -> tuple:
    """(the registers a tile may take a block, what sets them, B_r's step or None): what the
    exploration's real kernel, if any, allows a tile (:mod:`.registers`), read once."""
    launches = measure.kernel_base().launches if s.kernel else ()
    return (*register_capacity(profile, s.kernel, s.passes, launches), warp_rows(s.kernel, s.passes, launches))


def _candidate(raw: tuple, warps: tuple, profile: HardwareProfile, sources: tuple, cache: bool) -> Candidate:
    """``warps``: :func:`_warp_limits`; rows off B_r's step with a real kernel are listed, and
    not chosen, since the kernel's warps cannot split them."""
    bq, bkv, sram, regs, rd, wr, t_lo, t_hi, bound, steps, _ = raw
    reg_cap, _, step = warps
    rows = f"rows: {bq} is no multiple of {step}, the kernel's warps × 16" if step and bq % step else ""
    dram = (0, rd + wr) if cache else (None, None)   # see measure: without the replay, only an upper bound
    return Candidate(bq, bkv, sram, profile.scratchpad.per_block_bytes, regs, reg_cap, rd, wr, t_lo, t_hi, bound,
                     *dram, False, sources, steps, rows)


def _resolve(c: Candidate, replayed: tuple | None = None) -> Candidate:
    """``c`` replayed through the L2 model (or with ``replayed``, what :func:`measure.replay`
    returned for it): its exact time and DRAM bytes."""
    t, bound, dram = replayed or measure.replay((c.block_q, c.block_kv))
    return dataclasses.replace(c, time_min_s=t, time_max_s=t, bound=bound, dram_min_bytes=dram, dram_max_bytes=dram,
                               replayed=True)


def _rank(cands: dict, s: _Settings, kernel_key: tuple | None, references: tuple, worker_args: tuple) -> Ranking:
    """Rank ``cands``, then replay every tile the report names (best, practical choice,
    paper default, real kernel) whose numbers are not exact yet, so each shows what
    ``simulate`` gives; rank again with what those replays told (no further budget)."""
    cap = None if measure.tile_setup(references[0]).lockstep else REPLAY_STEPS
    ranking = rank(cands, s.objective, s.allow_spill, s.tie, s.replays, _resolve, kernel_key, cap)
    spent = ranking.replays
    for _ in range(4):
        named = {(c.block_q, c.block_kv) for c in (ranking.best, ranking.practical)} | set(references)
        todo = [cands[k] for k in named if k in cands and _needs_replay(cands[k], s.objective, cap)]
        if not todo:
            break
        keys = [(c.block_q, c.block_kv) for c in todo]
        for key, out in zip(keys, measure.replay_many(keys, worker_args, s.jobs)):  # in parallel: independent
            cands[key] = _resolve(cands[key], out)
        ranking = rank(cands, s.objective, s.allow_spill, s.tie, 0, _resolve, kernel_key, cap)
    return dataclasses.replace(ranking, replays=spent, budget=s.replays)


def _needs_replay(c: Candidate, objective: str, cap: int | None) -> bool:
    return (c.feasible and (cap is None or c.steps_per_head <= cap)
            and not (c.exact("time") and (objective != "dram" or c.exact("dram"))))


__all__ = ["explore", "ExploreResult", "describe_model", "EXPLORE_OPTIONS"]
