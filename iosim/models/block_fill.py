"""What a launch of the flash-attn 2 kernels costs besides its blocks' steps.

The kernel time model (:mod:`iosim.models.kernel_time`) times a block as the sum of its
key-block steps, and overlaps the launch's memory traffic with them. Two stretches of a
launch overlap with nothing (flash_fwd_kernel.h, ``compute_attn_1rowblock``):

* **fill**: the first wave's blocks start together and wait for their first tiles: Q_i and
  K_0 are copied before anything runs, and V_0's copy is issued only once K_0 has arrived
  (``cp_async_wait`` then ``copy(V)``), so the first step waits for a second dependent round
  trip. The launch starts with a cold L2 (as Nsight Compute runs it): each distinct Q_i and
  each distinct first (K, V) pair of the wave comes from DRAM once and reaches every block
  that loads it through the L2 (:func:`first_wave`, from the kernels' grids: a head's blocks
  start at its last key block, or at their diagonal one under a causal mask; split-KV's at
  their split's, and its blocks of one query block load the same Q_i), each SM taking its
  share of the L2's rate: the SM with the most blocks that load waits for all their tiles.
* **drain**: the last wave's blocks end together and store their O_i (and LSE) tiles.
* **one block an SM** (the backward kernels: 8 warps of 255 registers; the 8-warp d = 192
  forward): no co-resident block hides a block's first loads or last stores, so every
  block waits for them (:func:`lone_block_s`), a step of its own in the block's time.

So a launch takes, beyond the floor (an empty launch plus one dependent DRAM round trip:
``read_write_floor``), one more round trip (``read_write_floor − launch``) plus the fill's
bytes at the DRAM's (or the L2's) rate plus the drain's at the DRAM's write rate. Every
number is the profile's measured rates and the tile; nothing is fitted.
``benchmarks/sdpa_block_cost.py`` measured what it stands for on the H200: the intercept of
time against key-block steps, 5.6–10 µs for 132 or 264 one-block heads, against the
floor's 2.2 µs (docs/validation/2026-12-02-block-cost.md).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable

#: bytes of one LSE entry (fp32), and of one element of split-KV's partial outputs (Oaccum, fp32)
LSE_BYTES = ACCUM_BYTES = 4
#: the per-resource key of a forward launch's first-wave fill and last-wave drain
FILL = "fill and drain"
#: the per-resource key of a block's own wait for its first tiles and last stores (one block an SM)
BLOCK_WAIT = "block fill and drain"


@dataclass(frozen=True)
class ForwardGrid:
    """A flash-attn 2 forward launch's thread blocks in launch order: ``grid(num_m_block, B, H)``
    (``flash_fwd_kernel``) or ``grid(num_m_block, num_splits, B·H)`` (``flash_fwd_splitkv_kernel``),
    the query block fastest. ``mask``: the launch's :class:`~iosim.engine.blocks.BlockMask`;
    ``heads``: the launch-ordered heads; ``kv_of``: the K/V head the ℓ-th of them reads."""

    mask: object
    heads: int
    kv_of: Callable[[int], int]
    num_splits: int = 1


@dataclass(frozen=True)
class FirstWave:
    """A forward launch's first wave: its ``blocks`` that load tiles (a split with no active key
    block exits before loading), and the distinct ``q_tiles`` and first (K, V) ``kv_pairs`` among them."""

    blocks: int
    q_tiles: int
    kv_pairs: int
    heads: int = 0     # distinct heads among them


def first_wave(grid: ForwardGrid, slots: int) -> FirstWave:
    """The first ``slots`` thread blocks that load tiles, in launch order. Each loads Q_i and its
    first key block: the last active one of its split (flash-attn walks ``n_block`` from
    ``n_block_max − 1`` down; split s covers ⌈T_c/S⌉ key blocks from s·⌈T_c/S⌉, flash-attn's
    ``n_blocks_per_split``). Empty blocks free their slot at once and are not counted."""
    loading = list(itertools.islice(_loading_blocks(grid), slots))
    q = {(head, i) for head, i, _ in loading}
    kv = {(grid.kv_of(head), last) for head, _, last in loading}
    return FirstWave(len(loading), len(q), len(kv), len({head for head, _ in q}))


def _loading_blocks(grid: ForwardGrid):
    """(head, query block, first key block) of each thread block that loads tiles, in launch order."""
    mask = grid.mask
    per_split = -(-mask.kv.num_blocks // grid.num_splits)
    for head in range(grid.heads):
        for s in range(grid.num_splits):
            for i in range(mask.q.num_blocks):
                last = _last_in(mask.active_kv(i), s * per_split, (s + 1) * per_split)
                if last is not None:
                    yield head, i, last


def _last_in(active, lo: int, hi: int) -> int | None:
    """The last of the ``active`` key blocks (a range, or an index array with a block mask) in [lo, hi)."""
    if isinstance(active, range):
        cut = active[lo:hi]        # a range's slice: no walk over its members
        return cut[-1] if cut else None
    inside = active[(active >= lo) & (active < hi)]
    return int(inside[-1]) if len(inside) else None


def fill_drain_s(works: list, heads: int, layout, rates, width: int) -> float:
    """Seconds a forward launch spends filling its first wave and draining its last.

    ``works``: one head's (CtaWork, count) runs; ``layout``: the forward kernel's
    :class:`~iosim.models.kernel_time.WarpLayout` (its tile, head dim, occupancy and
    :class:`ForwardGrid`; a split-KV kernel's blocks store fp32 partial outputs). 0 where the
    profile's rates are not measured or the layout is not a flash-attn 2 forward kernel's."""
    if (not layout.fa2_waits or layout.atoms is not None or not layout.block_q or rates.source != "measured"
            or not works or layout.blocks_per_sm == 1 or layout.launch_order is None):
        return 0.0       # one block an SM: every block pays it (lone_block_s)
    tiles = _first_tiles(works[0][0], layout)
    if tiles is None:
        return 0.0   # no score tiles: not a forward attention kernel (the split-KV combine)
    rows, cols = tiles
    slots = rates.sm_count * (layout.blocks_per_sm or (layout.coresident[0] if layout.coresident else 1))
    first, split = first_wave(layout.launch_order, slots), layout.launch_order.num_splits > 1
    q, kv, out = _forward_bytes(rows, cols, layout.head_dim, width, ACCUM_BYTES if split else width)
    # The forward kernel counts one (K_0, V_0) pair a head, its blocks' first key block under a dense
    # mask. Under a causal one they start at their own diagonal key block (first.kv_pairs distinct
    # pairs); counting those was tried in session 25 and not adopted: no change over the committed
    # grids, and the prospective final-check's causal forwards 2.0 → 2.6 % median error
    # (docs/validation/2026-12-04-code.md)
    pairs = first.kv_pairs if split else first.heads
    dram = first.q_tiles * q + pairs * kv
    busiest = -(-first.blocks // rates.sm_count)         # the SM with the most loading blocks waits longest
    fill = max(dram / rates.dram_bytes, busiest * rates.sm_count * (q + kv) / rates.l2_bytes if rates.l2_bytes else 0.0)
    last = min(sum(n for _, n in works) * heads, slots)      # every block of the last wave stores
    return rates.round_trip_s + fill + last * out / rates.dram_write_bytes


def lone_block_s(work, layout, rates, width: int, per_head: int) -> float:
    """Seconds a thread block waits beyond its steps where it holds its SM alone
    (``layout.blocks_per_sm == 1``: the backward kernels, 8 warps of 255 registers, and the
    8-warp d = 192 forward): nothing on the SM hides its first tiles' arrival or its last
    stores, so every block, not only the first and last waves, pays them — its first
    loads' round trip (the forward's V_0 a second one, after K_0), their bytes and its
    stores' bytes at the SM's share of the DRAM rates (all SMs start and end blocks alike).
    Forward: Q_i, K_0, V_0 in; O_i and its LSE out. Backward (one block a key block j):
    Q_i, dO_i, K_j, V_j and the rows' L_i, D_i in; dK_j, dV_j out. 0 elsewhere. The launch's
    floor (read_write_floor: a load's round trip and a store's completion) stays: the last
    stores' completion is in no block's wait (measured intercepts: 0.5–2 µs above the model's
    even so, docs/validation/2026-12-02-bwd-cost.md).

    The forward's first key block is its head's (split's) for all ``per_head`` blocks of the
    head, as :func:`fill_drain_s` counts a first wave's: a block's own DRAM bytes are Q_i and
    its share of that (K_0, V_0) pair, the rest reaches it through the L2, and its tiles take
    the longer of the two shares (:func:`_first_s`). The backward's first Q_i and dO_i are its
    head's too; counting them so was tried and not kept (docs/validation/2026-12-06-lone-fill.md)."""
    if not layout.fa2_waits or layout.blocks_per_sm != 1 or rates.source != "measured":
        return 0.0
    tiles = _first_tiles(work, layout)
    if tiles is None:
        return 0.0
    rows, cols = tiles
    d = layout.head_dim
    sm = rates.sm_count
    if layout.atoms is None:
        q, kv, last = _forward_bytes(rows, cols, d, width, width)
        splits = layout.launch_order.num_splits if layout.launch_order is not None else 1
        first, waits = _first_s(q + kv * min(1.0, splits / max(per_head, 1)), q + kv, rates), 2
    else:
        first = (width * d * 2 * (rows + cols) + 2 * LSE_BYTES * rows) * sm / rates.dram_bytes
        last, waits = 2 * width * d * cols, 1
    return waits * rates.round_trip_s + first + last * sm / rates.dram_write_bytes


def _first_s(own: float, whole: int, rates) -> float:
    """Seconds a lone block's first tiles take: its ``own`` bytes (from DRAM) at the SM's share
    of the DRAM's rate, or all of them (``whole``) at its share of the L2's, whichever is longer."""
    sm = rates.sm_count
    return max(own * sm / rates.dram_bytes, whole * sm / rates.l2_bytes if rates.l2_bytes else 0.0)


def _forward_bytes(rows: int, cols: int, d: int, width: int, out_width: int) -> tuple[int, int, int]:
    """A forward block's first tiles and last stores, in bytes: (Q_i, K_0 and V_0, O_i and
    its LSE), O at ``out_width`` bytes an element (split-KV's partial outputs are fp32)."""
    return width * rows * d, 2 * width * cols * d, rows * (out_width * d + LSE_BYTES)


def _first_tiles(work, layout) -> tuple[int, int] | None:
    """(query rows, key rows) of a block's score tiles: the M and N of its S (and dP) product,
    the one over d whose operands are both loaded tiles (P·V, dV, dK, dQ take a computed one),
    at the real rows of a ragged or one-row block; None for a kernel without them."""
    d = layout.head_dim
    shapes = [(m, n) for (m, n, k, a, b) in work.products if k == d and a and b]
    return max(shapes) if shapes else None


__all__ = ["BLOCK_WAIT", "FILL", "FirstWave", "ForwardGrid", "fill_drain_s", "first_wave", "lone_block_s"]
