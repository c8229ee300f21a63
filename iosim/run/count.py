"""Count one launch: run its schedule once on a fresh context and read the ledger.

Nothing here models time or caches: :func:`count_launch` returns what was counted (HBM
traffic per tensor and per kernel, operations, on-chip peaks, each thread block's work,
and, when asked, every access in program order for the cache model), all summed over
heads. The models read that afterwards (:mod:`iosim.run.launches`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.affine import AffineUnsupported
from ..engine.context import Context
from ..engine.ledger import CtaRecords
from ..engine.residency import ResidencyTracker
from ..dtypes import width
from ..errors import CapacityError
from ..hardware import HardwareProfile
from ..workload.problem import Problem
from .options import Options
from .result import HbmTraffic, LaunchWork, LevelOccupancy, TensorTraffic
from .setup import Launch


@dataclass(frozen=True)
class Counted:
    """What one launch's schedule moved and computed, summed over heads."""

    tensors: dict[str, TensorTraffic]
    hbm: HbmTraffic
    #: kernel -> tensor -> (read elements, write elements)
    kernels: dict[str, dict[str, tuple[int, int]]]
    ops: dict[str, int]
    kernel_ops: dict[str, dict[str, int]]
    #: (level a, level b) -> bytes that crossed that link
    link_bytes: dict[tuple[str, str], int]
    sram: LevelOccupancy
    registers: LevelOccupancy
    cta_work: dict[str, LaunchWork]
    outputs: dict[str, np.ndarray]
    watches: dict[str, list[np.ndarray]]
    #: every access in program order (with the cache model on), else None
    requests: tuple | None
    num_splits: int | None
    #: the share of query/key block pairs the block mask leaves active, with a mask
    density_active: float | None


def count_launch(profile: HardwareProfile, launch: Launch, options: Options, sram_bytes: int, mode: str,
                 inputs: dict[str, np.ndarray] | None = None, record: bool = False,
                 cta_work: bool = True) -> Counted:
    """Run ``launch``'s schedule once in ``mode`` and collect its counts.

    With ``record`` every access is kept in program order (a count run keeps them grouped,
    its thread blocks one by one: :mod:`iosim.engine.requests`). Without ``cta_work`` no
    thread block's work is kept (``cta_work`` comes back empty, and ``kernel_ops`` has no
    ``thread_blocks``): for a caller that reads only the totals.
    """
    try:
        ctx, tracker = _run(profile, launch, options, sram_bytes, mode, inputs, record, affine=True, cta_work=cta_work)
    except AffineUnsupported:
        # The schedule asked an affine group of causal blocks (engine/affine.py) for what only
        # its members know: count it again grouped by active set, as exact and slower.
        ctx, tracker = _run(profile, launch, options, sram_bytes, mode, inputs, record, affine=False, cta_work=cta_work)
    return _collect(launch.problem, ctx, tracker, mode)


def _run(profile: HardwareProfile, launch: Launch, options: Options, sram_bytes: int, mode: str,
         inputs, record: bool, affine: bool, cta_work: bool = True) -> tuple[Context, ResidencyTracker]:
    """Run the schedule on a fresh context (affine groups of causal blocks if ``affine``)."""
    profile.scratchpad    # asked for first, as ever (a profile without one fails there)
    names = level_names(profile)
    tracker = _tracker(profile, sram_bytes, options.residency, options.enforce_registers, names)
    ctx = Context(
        launch.problem, launch.blocks, mode=mode, residency=tracker,
        level_names=names,
        path_links=lambda a, b: profile.path(a, b) if a in profile.levels and b in profile.levels else [],
        inputs=inputs if mode == "numeric" else None, tiles=options.tiles, count_init=options.count_init,
        block_mask=launch.mask, affine=affine, cta_work=cta_work, softmax_scale=launch.softmax_scale,
    )
    if record:
        ctx.record_requests()
    try:
        launch.schedule(ctx, **launch.schedule_options)
    except CapacityError as exc:
        b = launch.blocks
        raise CapacityError(exc.detail, exc.advice, (*exc.where, f"B_r={b.block_q}, B_c={b.block_kv}",
                                                     f"{launch.block_rule} rule, {launch.passes}")) from None
    return ctx, tracker


def level_names(profile: HardwareProfile) -> dict[str, str]:
    """The profile's level names by role (dram, scratchpad, registers)."""
    regs = profile.registers
    return {"dram": profile.dram.name, "scratchpad": profile.scratchpad.name,
            "registers": regs.name if regs is not None else "registers"}


def _tracker(profile: HardwareProfile, sram_bytes: int, residency: str, registers: bool,
             names: dict[str, str]) -> ResidencyTracker:
    """A residency tracker that enforces the per-block shared memory (and the registers too,
    with ``registers``); ``names``: :func:`level_names`."""
    regs = profile.registers
    return ResidencyTracker(
        residency,
        level_names={"scratchpad": names["scratchpad"], "registers": names["registers"]},
        capacities={"scratchpad": sram_bytes, "registers": regs.per_block_bytes if regs is not None else None},
        enforced={"scratchpad", "registers"} if registers else {"scratchpad"},
        charge_temporaries=registers,
    )


def _collect(problem: Problem, ctx: Context, tracker: ResidencyTracker, mode: str) -> Counted:
    bh, bhk = problem.heads_total, problem.kv_heads_total
    ledger = ctx.ledger
    kernels: dict = {}
    for (kernel, tensor, direction, per_kv), elements in ledger.traffic_by_kernel.items():
        entry = kernels.setdefault(kernel, {}).setdefault(tensor, [0, 0])
        entry[direction == "write"] += elements * (bhk if per_kv else bh)
    tensors = _tensors(problem, ctx, kernels)
    sums = [0, 0, 0, 0]
    for t in tensors.values():
        sums[0] += t.read_bytes
        sums[1] += t.write_bytes
        sums[2] += t.read_elements
        sums[3] += t.write_elements
    hbm = HbmTraffic(*sums)
    kernel_ops: dict = {}
    for (kernel, kind), n in ledger.ops_by_kernel.items():
        kernel_ops.setdefault(kernel, {})[kind] = n * bh
    for kernel, ctas in ledger.ctas_by_kernel.items():
        kernel_ops.setdefault(kernel, {})["thread_blocks"] = ctas * bh
    link_bytes = {k: _per_heads(ledger.link_bytes, ledger.link_bytes_per_kv_head, k, bh, bhk)
                  for k in set(ledger.link_bytes) | set(ledger.link_bytes_per_kv_head)}
    outputs = {}
    if mode == "numeric":
        outputs = {k: v.reshape((problem.batch, -1) + v.shape[1:])
                   for k, v in ctx.hbm.items() if k not in ctx.input_names}
    mask = ctx.mask_info.sparse
    return Counted(
        tensors=tensors, hbm=hbm, kernels={k: {t: tuple(v) for t, v in ts.items()} for k, ts in kernels.items()},
        ops={k: v * bh for k, v in ledger.ops.items()}, kernel_ops=kernel_ops, link_bytes=link_bytes,
        sram=_occupancy(tracker, "scratchpad", kernels), registers=_occupancy(tracker, "registers", kernels),
        cta_work={k: LaunchWork(bh, CtaRecords(v)) for k, v in ledger.cta_work.items()},
        outputs=outputs, watches=ctx.watches,
        requests=None if ctx.requests is None else tuple(ctx.requests), num_splits=ctx.num_splits,
        density_active=None if mask is None else float(mask.mean()),
    )


def _per_heads(per_q: dict, per_kv: dict, key, bh: int, bhk: int) -> int:
    return per_q.get(key, 0) * bh + per_kv.get(key, 0) * bhk


def _tensors(problem: Problem, ctx: Context, kernels: dict) -> dict[str, TensorTraffic]:
    """Each tensor's traffic over the launch's kernels (``kernels``: kernel -> tensor ->
    [read, write] elements summed over heads), in the order the run knows its tensors."""
    moved: dict = {}
    for per_tensor in kernels.values():
        for name, (r, w) in per_tensor.items():
            entry = moved.get(name)
            if entry is None:
                moved[name] = [r, w]
            else:
                entry[0] += r
                entry[1] += w
    tensors = {}
    for spec in ctx.tensors:
        entry = moved.get(spec.name)
        if entry is None:   # no traffic
            continue
        r, w = entry
        if r or w:
            dtype = spec.dtype_for(problem)
            wid = width(dtype)
            tensors[spec.name] = TensorTraffic(dtype, r, w, r * wid, w * wid)
    return tensors


def _occupancy(tracker: ResidencyTracker, role: str, kernels: dict) -> LevelOccupancy:
    """One level's peaks: the run's, and those of each launch it named that moved data (``kernels``)."""
    use = tracker.use[role]
    return LevelOccupancy(use.level, use.peak, use.capacity_bytes, use.enforced, tuple(use.peak_tiles),
                          tuple((k, peak) for k, peak in use.kernel_peaks.items() if k in kernels))


__all__ = ["Counted", "count_launch", "level_names"]
