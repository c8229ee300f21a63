"""How a sequence axis is cut into blocks, which (query, key) blocks are active, and how
identical blocks are grouped so a loop body is counted once per distinct case.

Spec references (fa-io-spec.md): C4 (exact ragged tiles), §3.7 (the causal active set,
aligned bottom-right as flash-attn ≥ 2.1 does).

Grouping is what makes counting fast: two query blocks i and i' are interchangeable for
every count when they have the same number of rows and the same set of active key
blocks, so the loop body runs once for the group and its counts are multiplied by the
group's size. The grouping key therefore always includes the mask row (or column); a
block that stands for a group of blocks whose masks differ (``mask_key is None``) cannot
be asked for its own active set, and the engine says so instead of miscounting.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ScheduleError
from ..problem import BlockSizes, Problem


@dataclass(frozen=True)
class Block:
    """One block of an axis, or (in counting mode) a group of identical blocks.

    ``index``/``start`` locate the first block of the group; ``rows`` is r_i (or c_j),
    the real rows of each block in the group; ``block`` is B_r (or B_c), what a padded
    tile moves (convention C4, padded); ``count`` is how many blocks the group stands
    for; ``mask_key`` is the shared active set, or ``None`` if members differ.
    """

    axis: str
    index: int
    start: int
    rows: int
    block: int
    count: int = 1
    mask_key: object = None

    @property
    def label(self) -> str:
        letter = "i" if self.axis == "q" else "j"
        return f"{letter}={self.index}" if self.count == 1 else f"{letter}∈group of {self.count}"


class Axis:
    """A sequence axis of ``length`` rows cut into blocks of ``block`` rows."""

    def __init__(self, name: str, length: int, block: int):
        self.name, self.length, self.block = name, length, block
        self.num_blocks = -(-length // block)
        self.last_rows = length - (self.num_blocks - 1) * block

    def rows(self, index: int) -> int:
        """r_i = min(B, N − i·B)."""
        return self.block if index < self.num_blocks - 1 else self.last_rows

    def make(self, index: int, count: int = 1, mask_key: object = None) -> Block:
        return Block(self.name, index, index * self.block, self.rows(index), self.block, count, mask_key)

    def group_range(self, lo: int, hi: int) -> list[Block]:
        """Blocks lo..hi−1 grouped by size: the full ones, then the ragged last one.

        Members of a group of several share no mask key (``mask_key=None``); a single
        block keeps its identity so deeper loops may still ask for its mask.
        """
        if hi <= lo:
            return []
        last = self.num_blocks - 1
        ragged_last = hi - 1 == last and self.last_rows != self.block
        full_hi = hi - 1 if ragged_last else hi
        groups = []
        if full_hi > lo:
            n = full_hi - lo
            groups.append(self.make(lo, count=n, mask_key=None if n > 1 else ("single", lo)))
        if ragged_last:
            groups.append(self.make(last, mask_key=("single", last)))
        return groups


class BlockMask:
    """Which (query block i, key block j) pairs a schedule visits.

    Dense attention visits all of them; causal attention skips every block with no
    unmasked entry, exactly as the real kernels' ``n_block_max`` does (spec §3.7).
    Active sets are contiguous ranges: [0, n_i) for row i and [m_j, T_r) for column j.
    """

    def __init__(self, problem: Problem, blocks: BlockSizes):
        self.q = Axis("q", problem.seq_len_q, blocks.block_q)
        self.kv = Axis("kv", problem.seq_len_kv, blocks.block_kv)
        self.causal = problem.causal
        # Bottom-right alignment: key k is visible to query q iff k <= q + offset.
        self.offset = problem.seq_len_kv - problem.seq_len_q

    # -- active ranges ----------------------------------------------------------------
    def kv_range(self, i: int) -> tuple[int, int]:
        """Active key blocks of query block i: [0, n_i)."""
        if not self.causal:
            return 0, self.kv.num_blocks
        last_row = min((i + 1) * self.q.block, self.q.length) - 1
        n = (last_row + self.offset) // self.kv.block + 1
        return 0, max(0, min(self.kv.num_blocks, n))

    def q_range(self, j: int) -> tuple[int, int]:
        """Active query blocks of key block j: [m_j, T_r)."""
        if not self.causal:
            return 0, self.q.num_blocks
        first_key = j * self.kv.block
        m = max(0, (first_key - self.offset) // self.q.block)
        # A column may have no visible row when N_q > N_k; the formula then exceeds T_r.
        return min(m, self.q.num_blocks), self.q.num_blocks

    def n_active(self) -> int:
        """|A|: the number of (i, j) blocks the schedules visit."""
        return sum(hi - lo for lo, hi in map(self.kv_range, range(self.q.num_blocks)))

    def entry_visible(self, q_rows: np.ndarray, k_cols: np.ndarray) -> np.ndarray:
        """Element mask of a tile: True where key k is visible to query q."""
        if not self.causal:
            return np.ones((len(q_rows), len(k_cols)), dtype=bool)
        return k_cols[None, :] <= q_rows[:, None] + self.offset

    # -- grouped iteration ------------------------------------------------------------
    def all_blocks(self, axis: Axis, grouped: bool) -> list[Block]:
        """Every block of ``axis``; grouped by (rows, active range) when ``grouped``."""
        key_of = self.kv_range if axis is self.q else self.q_range
        if not grouped:
            return [axis.make(k, mask_key=key_of(k)) for k in range(axis.num_blocks)]
        groups: dict[tuple, list[int]] = {}
        for k in range(axis.num_blocks):
            key = (axis.rows(k), key_of(k))
            entry = groups.setdefault(key, [k, 0])
            entry[1] += 1
        return [axis.make(first, count=n, mask_key=key[1]) for key, (first, n) in groups.items()]

    def visible_blocks(self, axis: Axis, of: Block, grouped: bool) -> list[Block]:
        """The blocks of ``axis`` active together with block ``of`` of the other axis."""
        if of.axis == axis.name:
            raise ScheduleError(f"visible_to= needs a block of the other axis, got a {of.axis} block")
        if of.mask_key is None:
            raise ScheduleError(
                f"block {of.label} stands for several blocks with different masks, so its "
                "visible blocks are not defined; run this schedule with mode='trace'"
            )
        lo, hi = self.kv_range(of.index) if axis is self.kv else self.q_range(of.index)
        if grouped:
            return axis.group_range(lo, hi)
        key_of = self.kv_range if axis is self.q else self.q_range
        return [axis.make(k, mask_key=key_of(k)) for k in range(lo, hi)]
