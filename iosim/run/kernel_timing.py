"""What times a real kernel's launch: the kernel time models applied to its counts (:mod:`iosim.models.kernel_time`,
:mod:`iosim.models.triton_time`, the measured chains of flash-attn 2's small kernels), and the name of the model the
launch's JSON gives."""

from __future__ import annotations

import dataclasses

from ..kernels.cudnn_preset import CudnnTile
from ..kernels.triton_preset import TritonTile
from ..models import combine_time, cudnn_time, elementwise_time, kernel_time, triton_time
from ..models.block_fill import ForwardGrid
from ..models.cache import occupancy
from ..models.kernel_time import KernelRates, WarpLayout
from ..models.roofline import in_sequence
from .head_order import head_order
from .result import Result
from .setup import Launch, Setup
from .unrequested import tile_mask


def time_model(result: Result, tile=None) -> str:
    """What timed a real kernel's launch: its kernel time model, else the roofline, a lower bound (said)."""
    if result.kernel_times and isinstance(tile, CudnnTile):
        return cudnn_time.model_name(tile.steps.source, len(result.kernel_times) > 1)
    if result.kernel_times:
        return triton_time.model_name(tile) if isinstance(tile, TritonTile) else "kernel time model"
    if getattr(tile, "time_model_note", None):
        return tile.time_model_note
    return "roofline, a lower bound: no kernel time model for this tile (its warp layout is not checked)"


def with_kernel_times(result: Result, setup: Setup, launch: Launch) -> Result:
    """The kernel time model for each kernel of a real kernel's launch; the launch's time
    becomes their sum, bound by its longest kernel's bound."""
    tile, p = launch.tile, launch.problem
    if getattr(tile, "time_model_note", None):
        return result  # a tile that says why it has no kernel time model (cuDNN's, where its steps were not measured)
    if isinstance(tile, CudnnTile):
        if tile.steps is None:
            return result  # (the preset gives each tile its steps or its note: a tile made otherwise has neither)
        kernel = "main" if launch.passes == "forward" else "dq_dk_dv"
        times = cudnn_time.predict(setup.profile, p.dtype, {kernel: tile.steps}, *kernel_traffic(result),
                                   causal=p.causal, halves=tile.blocks_per_tile > 1)
        return dataclasses.replace(result, kernel_times=times, time=in_sequence(times))
    if isinstance(tile, TritonTile):
        requested, dram, work = kernel_traffic(result)
        times = triton_time.predict(setup.profile, p.dtype, tile, requested, dram, work, causal=p.causal)
        return dataclasses.replace(result, kernel_times=times, time=in_sequence(times))
    per_sm = blocks_per_sm(setup.profile, launch, result.sram.peak_bytes)
    fa2 = getattr(tile, "kernel", "").startswith("flash-attn 2 ")   # fills and drains measured on these
    if launch.passes == "forward":
        layout = WarpLayout(tile.warps, block_q=tile.block_q, block_kv=tile.block_kv, head_dim=p.head_dim,
                            kernel_head_dim=tile.kernel_head_dim, coresident=getattr(tile, "coresident", None),
                            step_factor=getattr(tile, "step_factor", 1.0), blocks_per_sm=per_sm, fa2_waits=fa2,
                            launch_order=forward_grid(launch) if fa2 else None,
                            causal_code=launch.kernel.causal_code if fa2 else None)
    elif tile.warp_grids is not None:
        layout = WarpLayout(tile.warps, tile.warp_grids, tile.block_q, tile.block_kv, p.head_dim,
                            tile.kernel_head_dim, coresident=getattr(tile, "coresident", None), blocks_per_sm=per_sm,
                            fa2_waits=fa2)
    else:
        return result  # warp layout unchecked for this tile: no model
    try:
        times = kernel_times(result, setup.profile, {k: layout for k in result.cta_work})
    except ValueError:
        return result  # the profile lacks a rate the model needs; the roofline stays
    if fa2:
        times = measured_chains(result, setup.profile, tile, times)
    return dataclasses.replace(result, kernel_times=times, time=in_sequence(times))


def blocks_per_sm(profile, launch: Launch, sram_peak: int) -> int:
    """Thread blocks of the launch one SM holds at once (its shared memory, threads, registers)."""
    if isinstance(launch.tile, TritonTile):   # Triton's own footprint and registers
        return triton_time.blocks_per_sm(launch.tile, profile)
    regs = profile.registers
    return occupancy(1, profile.scratchpad.capacity_bytes or 0, sram_peak, launch.threads_per_block,
                     registers_per_thread=launch.registers_per_thread,
                     register_file_bytes=regs.capacity_bytes if regs is not None else None)


def forward_grid(launch: Launch) -> ForwardGrid:
    """The forward kernel's thread blocks in launch order, for its first wave's tiles."""
    p, k = launch.problem, launch.kernel
    kv_of, _, _ = head_order(p, k is not None and k.batch_fastest)
    return ForwardGrid(tile_mask(launch), p.heads_total, kv_of, launch.schedule_options.get("num_splits", 1))


def measured_chains(result: Result, profile, tile, times: dict) -> dict:
    """flash-attn 2's small kernels, where the rates are the measured ones their chains were
    measured with: the split-KV combine's dependent loads (:mod:`iosim.models.combine_time`),
    dot_do_o's and convert_dq's lone block (:mod:`iosim.models.elementwise_time`)."""
    p, out, rates = result.problem, dict(times), KernelRates.from_profile(profile, result.problem.dtype)
    kd, splits = tile.kernel_head_dim or p.head_dim, result.options.get("num_splits")
    if rates.source == "measured" and "combine" in out and splits and splits >= 2:
        reads = sum(r for r, _ in result.kernel_bytes("combine").values())
        out["combine"] = combine_time.predict(out["combine"], rates, splits=splits, kernel_head_dim=kd,
                                              rows=p.batch * p.heads * p.seq_len_q, reads=reads)
    for k in elementwise_time.KERNELS if rates.source == "measured" else ():
        if k in out:
            out[k] = elementwise_time.predict(out[k], k, kernel_head_dim=kd, rows=p.seq_len_q,
                                              block_rows=tile.block_q)
    return out


def kernel_times(result: Result, profile, layouts: dict) -> dict:
    """kernel -> TimePrediction of :func:`iosim.models.kernel_time.predict` on a result's counts."""
    return kernel_time.predict(profile, result.problem.dtype, *kernel_traffic(result), layouts)


def kernel_traffic(result: Result) -> tuple[dict, dict, dict]:
    """(requested, DRAM, thread-block work) per kernel, as the kernel time models take them."""
    requested = {k: tuple(map(sum, zip((0, 0), *result.kernel_bytes(k).values()))) for k in result.kernels}
    dram = {}
    if result.cache is not None:
        dram = {k: (s.dram_read_bytes, s.dram_write_bytes) for k, s in result.cache.kernels.items()}
    work = {k: (w.heads, w.blocks) for k, w in result.cta_work.items()}
    return requested, dram, work


__all__ = ["blocks_per_sm", "forward_grid", "kernel_times", "kernel_traffic", "time_model", "with_kernel_times"]
