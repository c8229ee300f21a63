"""Run a schedule on a problem and a hardware profile: the function the CLI calls.

>>> from iosim import Problem, simulate
>>> r = simulate("fa-paper-a100", "fa2", Problem(seq_len=8192, head_dim=128))
>>> (r.blocks.block_q, r.blocks.block_kv)          # the paper's B_r = min(⌈M/4d⌉, d), B_c = ⌈M/4d⌉
(128, 192)
>>> r.hbm.total_elements                           # fa-io-spec.md §4.2: FA2 forward
136323072
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable

import numpy as np

from ..engine.context import Context
from ..engine.residency import ResidencyTracker
from ..errors import CapacityError, ProblemError
from ..hardware import HardwareProfile, load_profile
from ..workload.masks import density, parse_block_mask
from ..workload.problem import BlockSizes, Problem, paper_block_sizes, sram_elements
from ..models.cache import occupancy, replay
from ..kernels.plan import plan
from .result import HbmTraffic, LevelOccupancy, Result, TensorTraffic, combine_results
from ..schedules import SCHEDULES, get_schedule, options_for
from ..models.theory import THEOREM_BY_PASSES, theorem2
from ..models import kernel_time
from ..models.kernel_time import WarpLayout
from ..models.roofline import in_sequence, predict_time


def resolve_profile(hw: str | os.PathLike | HardwareProfile) -> HardwareProfile:
    """A profile object from a built-in name, a YAML path, or a profile already loaded."""
    return hw if isinstance(hw, HardwareProfile) else load_profile(hw)


def choose_blocks(problem: Problem, M: int, block_q: int | None, block_kv: int | None) -> tuple[BlockSizes, str]:
    """B_r × B_c: the user's where given, the paper's rule (Algorithm 1 line 1) elsewhere."""
    if block_q is not None and block_kv is not None:
        blocks, rule = BlockSizes(block_q, block_kv), "user"
    else:
        paper = paper_block_sizes(M, problem.head_dim)
        blocks = BlockSizes(block_q if block_q is not None else paper.block_q,
                            block_kv if block_kv is not None else paper.block_kv)
        rule = "paper" if block_q is None and block_kv is None else "paper+user"
    blocks.check(problem)
    return blocks, rule


def random_inputs(problem: Problem, seed: int = 0, gradient: bool = False) -> dict[str, np.ndarray]:
    """Standard-normal Q, K, V (and dO with ``gradient``), float64, shaped (batch, heads, rows, d);
    K and V have ``kv_heads`` heads."""
    rng = np.random.default_rng(seed)
    b, h, hk, d = problem.batch, problem.heads, problem.kv_heads, problem.head_dim
    inputs = {
        "Q": rng.standard_normal((b, h, problem.seq_len_q, d)),
        "K": rng.standard_normal((b, hk, problem.seq_len_kv, d)),
        "V": rng.standard_normal((b, hk, problem.seq_len_kv, d)),
    }
    if gradient:
        inputs["dO"] = rng.standard_normal((b, h, problem.seq_len_q, d))
    return inputs


def simulate(
    hw: str | os.PathLike | HardwareProfile,
    algorithm: str | Callable,
    problem: Problem,
    *,
    block_q: int | None = None,
    block_kv: int | None = None,
    mode: str = "count",
    inputs: dict[str, np.ndarray] | None = None,
    seed: int = 0,
    tiles: str = "exact",
    count_init: bool = False,
    residency: str = "kernel",
    sram_bytes: int | None = None,
    schedule_options: dict | None = None,
    passes: str = "forward",
    block_mask: str | np.ndarray | None = None,
    kernel: str | None = None,
    cache: bool = False,
    threads_per_block: int = 128,
    registers_per_thread: int | None = None,
) -> Result:
    """Run ``algorithm`` on ``problem`` under ``hw`` and return every count.

    ``mode``: ``"count"`` (fast, shapes only), ``"trace"`` (shapes only, every iteration
    one by one) or ``"numeric"`` (float64 NumPy on ``inputs`` or random ones from
    ``seed``; the result's ``outputs`` hold O and the statistics, shaped (B, H, N, ·)).
    ``passes``: ``"forward"``, ``"backward"`` or ``"forward+backward"`` (built-in
    algorithms; a backward-only numeric run first computes the forward outputs it needs,
    uncounted). ``sram_bytes`` overrides the profile's per-block scratchpad (and so M).
    ``tiles``, ``count_init``: conventions C4 and C5 of the spec. ``residency``:
    ``"kernel"`` or ``"sram"`` (see :mod:`iosim.engine.residency`). ``block_mask``: a
    block-sparsity mask (a T_r × T_c array or a spec for :func:`iosim.workload.masks.parse_block_mask`).
    ``kernel``: ``"flash-attn-2"`` or ``"flash-attn-3"`` runs the launches the real kernels
    make, with their tiles (:mod:`iosim.kernels.plan`); the blocks are then the kernels'.
    ``cache``: also play every access through the profile's L2 (:mod:`iosim.models.cache`, with
    ``threads_per_block`` threads, and ``registers_per_thread`` registers each when given, per
    thread block for occupancy) and report ``l2``/``dram``.
    """
    profile = resolve_profile(hw)
    if kernel is not None:
        if block_q is not None or block_kv is not None or block_mask is not None:
            raise ProblemError("--kernel picks the kernels' own tiles; drop --block-q/--block-kv/--block-mask")
        return _simulate_kernel(profile, kernel, algorithm, problem, mode=mode, inputs=inputs, seed=seed,
                                passes=passes, schedule_options=schedule_options or {}, tiles=tiles,
                                count_init=count_init, residency=residency, sram_bytes=sram_bytes, cache=cache)
    layout = SCHEDULES[algorithm].layout if isinstance(algorithm, str) and algorithm in SCHEDULES else None
    if layout is not None and layout(problem) != problem:
        return _run_in_layout(layout(problem), problem, profile, algorithm, mode=mode, inputs=inputs, seed=seed,
                              block_q=block_q, block_kv=block_kv, tiles=tiles, count_init=count_init,
                              residency=residency, sram_bytes=sram_bytes, schedule_options=schedule_options,
                              passes=passes, block_mask=block_mask, cache=cache, threads_per_block=threads_per_block,
                              registers_per_thread=registers_per_thread)
    scratch = profile.scratchpad
    capacity = scratch.per_block_bytes if sram_bytes is None else sram_bytes
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
        raise ProblemError(f"sram_bytes must be a positive integer, got {capacity!r}")
    M = sram_elements(capacity, problem.dtype)
    blocks, rule = choose_blocks(problem, M, block_q, block_kv)
    mask = None
    if block_mask is not None:
        mask = parse_block_mask(block_mask, blocks.num_q_blocks(problem), blocks.num_kv_blocks(problem),
                                blocks.block_q, blocks.block_kv)
    schedule = get_schedule(algorithm, passes) if isinstance(algorithm, str) else algorithm
    name = algorithm if isinstance(algorithm, str) else getattr(algorithm, "__name__", "custom")

    level_names, tracker = _on_chip_levels(profile, capacity, residency)
    if mode == "numeric":
        if inputs is None:
            inputs = random_inputs(problem, seed, gradient="backward" in passes)
        if passes == "backward" and isinstance(algorithm, str):
            # The backward pass reads what the forward pass left in HBM (O, L or ℓ, m, P).
            forward = simulate(profile, algorithm, problem, block_q=blocks.block_q, block_kv=blocks.block_kv,
                               mode="numeric", inputs=inputs, sram_bytes=capacity, residency=residency,
                               block_mask=mask,
                               schedule_options=options_for(algorithm, "forward", schedule_options))
            inputs = {**inputs, **forward.outputs}
    ctx = Context(
        problem, blocks, mode=mode, residency=tracker, level_names=level_names,
        path_links=lambda a, b: profile.path(a, b) if a in profile.levels and b in profile.levels else [],
        inputs=inputs if mode == "numeric" else None, tiles=tiles, count_init=count_init, block_mask=mask,
        sm_count=profile.sm_count,
    )
    try:
        schedule(ctx, **(schedule_options or {}))
    except CapacityError as exc:
        raise CapacityError(exc.detail, exc.advice,
                            (*exc.where, f"B_r={blocks.block_q}, B_c={blocks.block_kv}", f"{rule} rule, {passes}")) from None
    options = {"tiles": tiles, "count_init": count_init, "residency": residency, "sram_bytes": capacity,
               **(schedule_options or {})}
    cache_report = None
    if cache:
        cache_report = _cache_model(profile, schedule, problem, blocks, mask, residency, schedule_options,
                                    tracker, threads_per_block, registers_per_thread)
    if ctx.num_splits is not None:
        options["num_splits"] = ctx.num_splits
    if mask is not None:
        options.update(block_mask=block_mask if isinstance(block_mask, str) else "array",
                       block_density=density(mask), block_density_active=float(ctx.mask_info.sparse.mean()))
    return _collect(profile, name, problem, blocks, rule, mode, ctx, tracker, M, passes, options, cache_report)


def _simulate_kernel(profile, kernel, algorithm, problem, *, mode, inputs, seed, passes, schedule_options,
                     cache=False, **conventions) -> Result:
    """Run each launch of a real-kernel preset and report them together."""
    launches = plan(kernel, algorithm, problem, profile, passes, schedule_options.get("num_splits"))
    if mode == "numeric":
        inputs = inputs if inputs is not None else random_inputs(problem, seed, gradient="backward" in passes)
        if passes == "backward":  # the backward kernels read O and L from a forward pass
            forward = simulate(profile, "fa2", problem, block_q=64, block_kv=64, mode="numeric", inputs=inputs)
            inputs = {**inputs, "O": forward.outputs["O"], "L": forward.outputs["L"]}
    results = []
    for launch in launches:
        run = dict(block_q=launch.tile.block_q, block_kv=launch.tile.block_kv, mode=mode, inputs=inputs,
                   seed=seed, schedule_options=launch.schedule_options, cache=cache,
                   threads_per_block=32 * launch.tile.warps, registers_per_thread=launch.tile.registers,
                   **conventions)
        if launch.problem != problem:  # e.g. decode's GQA swap (Launch.problem is what the kernel runs)
            result = _run_in_layout(launch.problem, problem, profile, launch.algorithm, **run)
        else:
            result = simulate(profile, launch.algorithm, problem, **run)
        if mode == "numeric" and launch.passes == "forward":
            inputs = {**inputs, "O": result.outputs["O"], "L": result.outputs["L"]}
        results.append(_with_kernel_times(result, profile, launch))
    options = {**results[0].options, "kernel": kernel, "launches": [l.describe() for l in launches]}
    theorem = THEOREM_BY_PASSES[passes]
    combined = combine_results(results, algorithm=algorithm, passes=passes, options=options,
                               block_rule=f"{kernel} kernel tiles")
    return dataclasses.replace(combined, theorem2=dataclasses.replace(combined.theorem2, name=theorem),
                               mode=mode, problem=problem)


def _with_kernel_times(result: Result, profile, launch) -> Result:
    """Add the kernel time model's prediction for each kernel of one launch; the launch's
    ``time`` becomes their sum, bound by its longest kernel's bound."""
    tile, p = launch.tile, launch.problem
    if launch.passes == "forward":
        layout = WarpLayout(tile.warps)
    elif tile.warp_grids is not None:
        layout = WarpLayout(tile.warps, tile.warp_grids, tile.block_q, tile.block_kv, p.head_dim)
    else:
        return result  # warp layout unchecked for this tile: no model
    try:
        times = kernel_time.predict(result, profile, {k: layout for k in result.cta_work})
    except ValueError:
        return result  # the profile lacks a rate the model needs; the roofline stays
    return dataclasses.replace(result, kernel_times=times, time=in_sequence(times))


def _run_in_layout(kernel_problem: Problem, problem: Problem, profile, algorithm, *, mode, inputs, seed,
                   **kwargs) -> Result:
    """Run the problem the kernel really runs (e.g. decode's GQA swap), reporting the user's.

    Query-side arrays (B, H, N_q, ·) are the kernel's (B, H', N_q', ·) with H·N_q = H'·N_q'
    in the same order, so inputs and outputs convert by reshaping; counts are totals over
    heads and need no conversion.
    """
    if mode == "numeric":
        inputs = inputs if inputs is not None else random_inputs(problem, seed)
        kp = kernel_problem
        inputs = {k: (v.reshape((kp.batch, kp.heads, kp.seq_len_q) + v.shape[3:]) if k in ("Q", "dO") else v)
                  for k, v in inputs.items()}
    result = simulate(profile, algorithm, kernel_problem, mode=mode, inputs=inputs, seed=seed, **kwargs)
    outputs = {k: v.reshape((problem.batch, -1, problem.seq_len_q) + v.shape[3:])
               if v.shape[1] * v.shape[2] == problem.heads * problem.seq_len_q else v
               for k, v in result.outputs.items()}
    options = {**result.options, "kernel_problem": {"heads": kernel_problem.heads,
                                                    "seq_len_q": kernel_problem.seq_len_q,
                                                    "causal": kernel_problem.causal}}
    return dataclasses.replace(result, problem=problem, outputs=outputs, options=options)


def _cache_model(profile, schedule, problem, blocks, mask, residency, schedule_options, tracker,
                 threads_per_block, registers_per_thread=None):
    """Record one head's accesses in trace mode and play every head's through the L2."""
    if profile.cache is None:
        raise ProblemError(f"profile {profile.name} describes no cache level to model")
    level_names, trace_tracker = _on_chip_levels(profile, 1 << 60, residency)
    # The trace is per head, but of the problem counted: its heads decide split counts and
    # GQA group reductions.
    ctx = Context(problem, blocks, mode="trace",
                  residency=trace_tracker, level_names=level_names, block_mask=mask, sm_count=profile.sm_count)
    ctx.record_requests()
    schedule(ctx, **(schedule_options or {}))
    smem_per_cta = tracker.use["scratchpad"].peak
    regs = profile.registers
    slots = occupancy(profile.sm_count, profile.scratchpad.capacity_bytes or 0, smem_per_cta, threads_per_block,
                      registers_per_thread=registers_per_thread,
                      register_file_bytes=regs.capacity_bytes if regs is not None else None)
    kernels = {r.kernel for r in ctx.requests}
    p = problem
    outer = tuple((c.name, c.capacity_bytes) for c in reversed(profile.caches[:-1]))  # e.g. MI300X's Infinity Cache
    return replay(ctx.requests, heads_total=p.heads_total, capacity_bytes=profile.cache.capacity_bytes,
                  kv_of_q=p.kv_head_of, leads_group=lambda h: (h % p.heads) % p.group_size == 0,
                  concurrency={k: slots for k in kernels}, outer_levels=outer)


def _on_chip_levels(profile: HardwareProfile, sram_bytes: int, residency: str):
    """Level names by role, and a tracker that enforces the per-block shared memory only."""
    regs = profile.registers
    regs_name = regs.name if regs is not None else "registers"
    level_names = {"dram": profile.dram.name, "scratchpad": profile.scratchpad.name, "registers": regs_name}
    tracker = ResidencyTracker(
        residency,
        level_names={"scratchpad": profile.scratchpad.name, "registers": regs_name},
        capacities={"scratchpad": sram_bytes, "registers": regs.per_block_bytes if regs is not None else None},
        enforced={"scratchpad"},
    )
    return level_names, tracker


def _collect(profile, name, problem, blocks, rule, mode, ctx, tracker, M, passes, options, cache_report=None) -> Result:
    bh, bhk = problem.heads_total, problem.kv_heads_total
    ledger = ctx.ledger

    def total(table_q, table_kv, key):
        return table_q.get(key, 0) * bh + table_kv.get(key, 0) * bhk

    tensors = {}
    per_q, per_kv = ledger.traffic, ledger.traffic_per_kv_head
    for spec in ctx.tensors:
        r = total(per_q, per_kv, (spec.name, "read"))
        w = total(per_q, per_kv, (spec.name, "write"))
        if r or w:
            wid = spec.width(problem)
            tensors[spec.name] = TensorTraffic(spec.dtype_for(problem), r, w, r * wid, w * wid)
    hbm = HbmTraffic(
        read_bytes=sum(t.read_bytes for t in tensors.values()),
        write_bytes=sum(t.write_bytes for t in tensors.values()),
        read_elements=sum(t.read_elements for t in tensors.values()),
        write_elements=sum(t.write_elements for t in tensors.values()),
    )
    kernels: dict = {}
    for (kernel, tensor, direction, per_kv), elements in ledger.traffic_by_kernel.items():
        entry = kernels.setdefault(kernel, {}).setdefault(tensor, [0, 0])
        entry[direction == "write"] += elements * (bhk if per_kv else bh)
    kernels = {k: {t: tuple(v) for t, v in tensors_.items()} for k, tensors_ in kernels.items()}
    ops = {k: v * bh for k, v in ledger.ops.items()}
    kernel_ops: dict = {}
    for (kernel, kind), n in ledger.ops_by_kernel.items():
        kernel_ops.setdefault(kernel, {})[kind] = n * bh
    for kernel, ctas in ledger.ctas_by_kernel.items():
        kernel_ops.setdefault(kernel, {})["thread_blocks"] = ctas * bh
    link_bytes = {k: total(ledger.link_bytes, ledger.link_bytes_per_kv_head, k)
                  for k in set(ledger.link_bytes) | set(ledger.link_bytes_per_kv_head)}
    if cache_report is not None:
        # With the L2 modelled, only what misses it crosses the DRAM's own link.
        dram = cache_report.total
        for key in link_bytes:
            if profile.dram.name in key:
                link_bytes[key] = dram.dram_read_bytes + dram.dram_write_bytes
    family = SCHEDULES[name].family if name in SCHEDULES else "flash"
    theorem = THEOREM_BY_PASSES[passes]
    outputs = {}
    if mode == "numeric":
        outputs = {k: v.reshape((problem.batch, -1) + v.shape[1:])
                   for k, v in ctx.hbm.items() if k not in ctx.input_names}
    return Result(
        algorithm=name, profile=profile.name, problem=problem, blocks=blocks, block_rule=rule, mode=mode,
        options=options, tensors=tensors, hbm=hbm,
        sram=_occupancy(tracker, "scratchpad"), registers=_occupancy(tracker, "registers"),
        ops=ops, time=predict_time(profile, link_bytes, ops, problem.dtype),
        theorem2=theorem2(family, problem.seq_len_q, problem.seq_len_kv, problem.head_dim, M, theorem,
                          density=options.get("block_density_active")),
        passes=passes,
        sram_elements=M, outputs=outputs, watches=ctx.watches, kernels=kernels, kernel_ops=kernel_ops,
        cache=cache_report, cta_work={k: (bh, list(v)) for k, v in ledger.cta_work.items()},
    )


def _occupancy(tracker: ResidencyTracker, role: str) -> LevelOccupancy:
    use = tracker.use[role]
    return LevelOccupancy(use.level, use.peak, use.capacity_bytes, use.enforced, tuple(use.peak_tiles))


__all__ = ["simulate", "choose_blocks", "random_inputs", "resolve_profile"]
