"""What a real kernel's warps allow a tile in ``explore`` (docs/bounds-and-explore.md, "--kernel"):
the registers it may take a block (:func:`register_capacity`), and the step of its rows
(:func:`warp_rows`: the forward kernels stack their warps along the rows, 16 rows each).

Without a real kernel: the profile's register file per block, the paper's machine. With
``--kernel flash-attn-2``'s forward of one launch, every tile keeps the kernel's warps, so its
S_ij and O_i accumulator must also fit what those warps hold without spilling
(:func:`~iosim.kernels.tile_tables.warps_register_bytes`; the kernel compiles to 255 registers
a thread, and all its warps hold tile fragments). Where flash-attn splits the keys, the split
kernel's registers are checked (:func:`tile_registers`): its combine kernel runs a tile of its
own. Not checked against the warps: the backward (iosim's register count keeps dK_j, dV_j, S_ij, dP_ij
and dQaccum_i together, more than flash-attn's kernel holds), and the Hopper presets
(flash-attn-3 and cuDNN split their warps between producers and consumers with other register
counts a thread).
"""

from __future__ import annotations

import math

from ...hardware import HardwareProfile
from ...kernels.tile_tables import warps_register_bytes
from ...schedules.fa2_splitkv import SPLIT_KERNEL
from .tile_grid import MMA_STEP


def register_capacity(profile: HardwareProfile, kernel: str | None, passes: str, launches: tuple) -> tuple:
    """(the bytes of registers a tile may take a block, or None without a register file; what
    sets them: "" for the profile's, else a phrase naming the kernel's warps). ``launches``: the
    kernel preset's own launches (``measure.kernel_base().launches``), or () without one."""
    if profile.registers is None:
        return None, ""
    cap = profile.registers.per_block_bytes
    checked = kernel == "flash-attn-2" and passes == "forward" and len(launches) == 1
    warps = launches[0].tile.warps if checked else 0
    held = warps_register_bytes(warps)
    return (held, f"{kernel}'s {warps} warps hold") if warps and held < cap else (cap, "")


def warp_rows(kernel: str | None, passes: str, launches: tuple) -> int | None:
    """The step B_r takes with a real kernel's forward, whose warps stack along the rows, 16
    rows each: gcd(16 × its warps, its own B_r); None without a kernel or for the backward."""
    if kernel is None or passes != "forward" or not launches:
        return None
    return math.gcd(MMA_STEP * launches[0].tile.warps, launches[0].tile.block_q)


def tile_registers(registers, kernel: str | None) -> int:
    """The register bytes a tile takes a block, of a run's ``registers`` (a
    :class:`~iosim.run.result.LevelOccupancy`): the run's peak, but with ``kernel``
    flash-attn-2 where it splits the keys the split kernel's: flash-attn's combine kernel runs
    a tile of its own (kBlockM rows of every split, ``run_mha_fwd_splitkv_dispatch``), not
    B_r × B_c. (iosim's own ``fa2-splitkv``, without a kernel, holds its combine in the tile.)"""
    own = dict(registers.by_kernel) if kernel == "flash-attn-2" else {}
    return own.get(SPLIT_KERNEL, registers.peak_bytes)
