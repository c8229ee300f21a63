"""What a launch reads from DRAM that no data request of its own explains, added to the L2
model's report: a forward kernel's spill frames (:mod:`iosim.kernels.spill_frames`) and each
kernel's code (:mod:`iosim.kernels.flash_code`)."""

from __future__ import annotations

from ..engine.blocks import BlockMask
from ..models.cache.frames import slots_reached
from ..workload.problem import BlockSizes
from .setup import Launch


def with_unrequested(cache, launch: Launch):
    """The L2 model's report (None: no L2 model) with the launch's spill frames and code in its
    DRAM reads."""
    return _with_code(_with_frames(cache, launch), launch)


def _with_frames(cache, launch: Launch):
    """The L2 model's report with the launch's spill-frame fills in its DRAM reads (a forward
    kernel's, :mod:`iosim.kernels.spill_frames`): once per slot that runs a thread block
    reaching the stores, by the blocks' key-block steps in launch order."""
    frames = launch.kernel.frames if launch.kernel is not None else None
    if cache is None or frames is None:
        return cache
    (kernel,) = cache.kernels
    mask = tile_mask(launch)
    steps = [len(mask.active_kv(i)) for i in range(mask.q.num_blocks)]
    slots = slots_reached(steps, [frames.reached(n) for n in steps], launch.problem.heads_total,
                          cache.concurrency[kernel])
    return cache.with_reads("frames", kernel, slots * frames.per_slot())


def _with_code(cache, launch: Launch):
    """The L2 model's report with each kernel's code in its DRAM reads (:mod:`iosim.kernels.flash_code`)."""
    code = launch.kernel.code if launch.kernel is not None else None
    if cache is None or not code:
        return cache
    for kernel, nbytes in code.items():
        cache = cache.with_reads("code", kernel, nbytes)
    return cache


def tile_mask(launch: Launch) -> BlockMask:
    """The (query block, key block) pairs a real kernel's launch visits, at its tile."""
    return BlockMask(launch.problem, BlockSizes(launch.tile.block_q, launch.tile.block_kv))
