"""Where the L2 model's DRAM reads of flash-attn 2's forward are known to part from the GPU's: causal forwards
whose K/V head passes part of an L2 partition (:data:`LONG_CAUSAL_NOTE`, :data:`WIDE_CAUSAL_NOTE`), causal
forwards at kernel head dim 128 past one wave (:data:`WAVES_D128_NOTE`), and GQA forwards whose group's heads run
apart (:data:`SPREAD_GROUP_NOTE`). The figures are the committed runs' (docs/known-limits.md;
tests/gpu/test_status_rows.py and tests/gpu/test_h100_s53.py hold them to the rows)."""

from __future__ import annotations

from ..workload.problem import Problem
from .backward_notes import half_partition, wave_slots
from .tile_tables import KernelTile


#: a causal forward whose K/V head's K and V pass half an L2 partition: where the L2 model's DRAM
#: reads part from the H200's, both ways (the committed grids' 25 such forwards, sessions 30-49;
#: figures of session 51)
LONG_CAUSAL_NOTE = (
    "not exact: a causal forward whose K/V head's K and V ({kv:.1f} MB) pass half an L2 partition ({half:.1f} MB); "
    "on the H200 the model's DRAM reads of 25 such forwards were 0.84-2.13 x the measured (7 within 10 %; 3 of them "
    "with (B, N, H, d) inputs: 1.30, 1.05 and 0.93), on an "
    "H100 of 15 0.73-2.58 x (1 within 10 %; grids s38, s40, s42, s43, s46, s53; 3 of them with (B, N, H, d) inputs, "
    "which tip such a forward over the L2's edge or do not: 5.3 and 1.0 x the other layout's reads measured): "
    "it places a head's contiguous K and V on the sets at random, and plays flash-attn's blocks in lockstep, "
    "and both part from the GPU there "
    "(docs/validation/2026-12-04-l2-address.md)")


def _kv_head(run: Problem) -> int:
    """Bytes of one K/V head's K and V (of one batch)."""
    return 2 * run.seq_len_kv * run.head_dim * run.width


def long_causal(run: Problem, profile) -> str | None:
    """:data:`LONG_CAUSAL_NOTE` for a causal forward of ``run`` on ``profile``'s L2, or None."""
    half, kv = half_partition(profile), _kv_head(run)
    return LONG_CAUSAL_NOTE.format(kv=kv / 1e6, half=half / 1e6) if run.causal and half and kv >= half else None


#: a causal forward at kernel head dim 128 in more than one wave of thread blocks (below
#: :data:`LONG_CAUSAL_NOTE`'s size): where the L2 model's reads part from the GPU's, mostly too few (27 such
#: forwards; one wave: 1.00-1.03)
WAVES_D128_NOTE = (
    "not exact: a causal forward at kernel head dim 128 in more than one wave of thread blocks ({blocks:,} blocks, "
    "{slots:,} at once); on the H200 the model's DRAM reads of 27 such forwards were 0.84-1.04 x the measured "
    "(22 within 10 %): the GPU's near partition loses more of a K/V tile's lines between its readers than the "
    "model's sets (docs/validation/2026-12-04-s29-heads.md)")


def waves_d128(run: Problem, tile: KernelTile, profile) -> str | None:
    """:data:`WAVES_D128_NOTE` for a causal forward of ``run`` at kernel head dim 128 past one wave, or None."""
    if not run.causal or tile.kernel_head_dim != 128 or tile.coresident is None:
        return None
    blocks = -(-run.seq_len_q // tile.block_q) * run.heads_total
    slots = wave_slots(tile, profile)
    return WAVES_D128_NOTE.format(blocks=blocks, slots=slots) if blocks > slots else None


#: a GQA forward whose group's consecutive query heads run B · ⌈N_q / B_r⌉ thread blocks apart, fewer than a wave,
#: while the K/V heads one head index reads over the batches pass the L2: the model's lockstep wave shares them
SPREAD_GROUP_NOTE = (
    "not exact: a GQA forward whose consecutive query heads of a group run in thread blocks {apart:,} apart in "
    "launch order, fewer than one wave holds ({slots:,} at once), while the K and V that the blocks of one head "
    "read over its {batch:,} batches ({kv:.0f} MB) pass the L2 ({l2:.0f} MB); on the H200 the model's DRAM reads "
    "of 1 such forward were 0.53-0.53 x the measured (0 within 10 %): the model plays the wave in lockstep, so a "
    "group's later query heads find the K and V its first one read, where on the GPU the group's blocks, some "
    "sharing an SM and some alone, drift apart and the L2 kept about an eighth of the re-reads "
    "(docs/validation/2026-12-05-s36-check.md)")


def spread_group(run: Problem, tile: KernelTile, profile) -> str | None:
    """:data:`SPREAD_GROUP_NOTE` for a GQA forward of ``run`` (flash-attn's grid: m + M (b + B h))
    whose group's consecutive heads are fewer blocks apart than a wave holds and whose B K/V heads pass
    the L2, or None."""
    cache = profile.cache
    if run.group_size <= 1 or tile.coresident is None or cache is None:
        return None
    apart = -(-run.seq_len_q // tile.block_q) * run.batch
    slots = wave_slots(tile, profile)
    kv = run.batch * _kv_head(run)
    if apart >= slots or kv <= cache.capacity_bytes:
        return None
    return SPREAD_GROUP_NOTE.format(apart=apart, slots=slots, batch=run.batch, kv=kv / 1e6,
                                    l2=cache.capacity_bytes / 1e6)


#: a causal forward at kernel head dim 160 or more whose K/V head's K and V pass a quarter of an L2 partition (below
#: :data:`LONG_CAUSAL_NOTE`'s half): where the L2 model reads too much (figures of session 53)
WIDE_CAUSAL_NOTE = (
    "not exact: a causal forward of wide heads (kernel head dim {kd}) whose K/V head's K and V ({kv:.1f} MB) pass a "
    "quarter of an L2 partition ({quarter:.1f} MB); on the H200 the model's DRAM reads of 7 such forwards were 1.01-1.12 x "
    "the measured (6 within 10 %), on an H100 of 4 1.00-1.14 x (2 within 10 %; grids s38, s43, s48, s53): the model plays a head's "
    "contiguous K and V as lines on the sets at random, which loses more of them than the GPU does there "
    "(docs/cache.md, \"Sets\")")


def wide_causal(run: Problem, tile: KernelTile, profile) -> str | None:
    """:data:`WIDE_CAUSAL_NOTE` for a causal forward of ``run`` at kernel head dim 160 or more whose K/V head passes
    a quarter of ``profile``'s L2 partition but not half (:data:`LONG_CAUSAL_NOTE`'s), or None."""
    half, kv = half_partition(profile), _kv_head(run)
    if not run.causal or not half or tile.kernel_head_dim < 160 or not half / 2 <= kv < half:
        return None
    return WIDE_CAUSAL_NOTE.format(kd=tile.kernel_head_dim, kv=kv / 1e6, quarter=half / 2e6)
