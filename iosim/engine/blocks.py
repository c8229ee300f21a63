"""How a sequence axis is cut into blocks, which (query, key) blocks are active, and how
identical blocks are grouped so a loop body is counted once per distinct case.

Spec references: docs/spec/conventions.md C4 (exact ragged tiles); docs/spec/algorithms.md
§5 (the causal active set, aligned bottom-right as flash-attn ≥ 2.1 does).

Grouping is what makes counting fast: two query blocks i and i' are interchangeable for
every count when they have the same number of rows and the same set of active key
blocks, so the loop body runs once for the group and its counts are multiplied by the
group's size. The grouping key therefore always includes the mask row (or column); a
block that stands for a group of blocks whose masks differ (``mask_key is None``) cannot
be asked for its own active set, and the engine says so instead of miscounting.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import ScheduleError
from ..workload.problem import BlockSizes, Problem


@dataclass(frozen=True)
class Block:
    """One block of an axis, or (in counting mode) a group of identical blocks.

    ``index``/``start`` locate the first block of the group; ``rows`` is r_i (or c_j),
    the real rows of each block in the group; ``block`` is B_r (or B_c), what a padded
    tile moves (convention C4, padded); ``count`` is how many blocks the group stands
    for; ``mask_key`` is the shared active set, or ``None`` if members differ;
    ``second`` is the index of the group's second member.
    """

    axis: str
    index: int
    start: int
    rows: int
    block: int
    count: int = 1
    mask_key: object = None
    second: int | None = field(default=None, compare=False, repr=False)
    #: the indices the group stands for, ascending: a range, list or array (None for one block)
    members: object = field(default=None, compare=False, repr=False)
    #: an affine group (:mod:`.affine`): its members' active ranges on the other axis
    affine: object = field(default=None, compare=False, repr=False)
    #: a summed block (:mod:`.affine`): how many blocks it stands for in each member of the
    #: enclosing affine group (``count`` is their sum), and where each member's blocks begin
    per: object = field(default=None, compare=False, repr=False)
    lo_of: object = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        letter = "i" if self.axis == "q" else "j"
        return f"{letter}={self.index}" if self.count == 1 else f"{letter}∈group of {self.count}"

    def first_then_rest(self) -> tuple["Block", ...]:
        """A group as two iterations: its first member, then its second member standing
        for the other count − 1 (see :meth:`BlockLoops._iterate`)."""
        if self.count == 1:
            return (self,)
        # replace(self, count=1, second=None, mask_key=...), spelled out: a loop makes one per group
        first = Block(self.axis, self.index, self.start, self.rows, self.block, 1,
                      ("single", self.index) if self.mask_key is None else self.mask_key, None, self.members,
                      self.affine, self.per, self.lo_of)
        rest_key = ("single", self.second) if self.mask_key is None and self.count == 2 else self.mask_key
        rest = Block(self.axis, self.second, self.second * self.block, self.rows, self.block, self.count - 1,
                     rest_key, members=None if self.members is None else self.members[1:])
        return first, rest

    def member_indices(self) -> np.ndarray:
        """The indices this block stands for, ascending."""
        return np.asarray([self.index] if self.count == 1 else self.members, dtype=np.int64)


@dataclass(frozen=True)
class Split:
    """A split of the key/value blocks (Flash-Decoding), as seen by one query block.

    Split ``index`` covers key blocks [lo, hi); ``members`` are those of them active for
    the query block; ``count`` is how many splits this one stands for when grouped.
    """

    index: int
    lo: int
    hi: int
    members: tuple
    count: int = 1
    second: "Split | None" = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        return f"s={self.index}" if self.count == 1 else f"s∈group of {self.count}"

    def member_indices(self) -> np.ndarray:
        """The split indices this one stands for (one: grouped splits are not recorded)."""
        if self.count != 1:
            raise ScheduleError("a group of splits has no member list; record requests ungrouped")
        return np.asarray([self.index], dtype=np.int64)

    def first_then_rest(self) -> tuple["Split", ...]:
        """A group of splits as its first member, then its second standing for the rest."""
        if self.count == 1:
            return (self,)
        return replace(self, count=1, second=None), replace(self.second, count=self.count - 1)


class Axis:
    """A sequence axis of ``length`` rows cut into blocks of ``block`` rows."""

    def __init__(self, name: str, length: int, block: int):
        self.name, self.length, self.block = name, length, block
        self.num_blocks = -(-length // block)
        self.last_rows = length - (self.num_blocks - 1) * block

    def rows(self, index: int) -> int:
        """r_i = min(B, N − i·B)."""
        return self.block if index < self.num_blocks - 1 else self.last_rows

    def make(self, index: int, count: int = 1, mask_key: object = None, second: int | None = None,
             members=None) -> Block:
        return Block(self.name, index, index * self.block, self.rows(index), self.block, count, mask_key, second,
                     None if count == 1 else members)

    def group_set(self, members, shared_key: object = None) -> list[Block]:
        """Blocks ``members`` (a range or sorted index array) grouped by size: the full
        ones, then the ragged last one.

        Members of a group of several share no mask key (``mask_key=None``) unless the
        caller knows they all have the same active set (``shared_key``); a single block
        keeps its identity so deeper loops may still ask for its mask.
        """
        if len(members) == 0:
            return []
        last = self.num_blocks - 1
        ragged_last = self.last_rows != self.block and int(members[-1]) == last
        n_full = len(members) - (1 if ragged_last else 0)
        groups = []
        if n_full:
            first = int(members[0])
            key = shared_key if shared_key is not None else (None if n_full > 1 else ("single", first))
            groups.append(self.make(first, count=n_full, mask_key=key,
                                    second=int(members[1]) if n_full > 1 else None, members=members[:n_full]))
        if ragged_last:
            groups.append(self.make(last, mask_key=shared_key if shared_key is not None else ("single", last)))
        return groups


class BlockMask:
    """Which (query block i, key block j) pairs a schedule visits.

    Dense attention visits all of them; causal attention skips every block with no
    unmasked entry, exactly as the real kernels' ``n_block_max`` does (docs/spec/algorithms.md §5), so
    active sets are contiguous ranges: [0, n_i) for row i and [m_j, T_r) for column j.
    A block-sparse mask (FlashAttention Algorithm 5, a T_r × T_c boolean matrix) visits
    only its nonzero blocks, intersected with the causal set when both apply.
    """

    def __init__(self, problem: Problem, blocks: BlockSizes, sparse: np.ndarray | None = None):
        self.q = Axis("q", problem.seq_len_q, blocks.block_q)
        self.kv = Axis("kv", problem.seq_len_kv, blocks.block_kv)
        self.causal = problem.causal
        # Bottom-right alignment: key k is visible to query q iff k <= q + offset.
        self.offset = problem.seq_len_kv - problem.seq_len_q
        self.sparse = None
        if sparse is not None:
            shape = (self.q.num_blocks, self.kv.num_blocks)
            if sparse.shape != shape:
                raise ScheduleError(f"block mask has shape {sparse.shape}, expected T_r × T_c = {shape}")
            causal = np.zeros(shape, dtype=bool)
            for i in range(shape[0]):
                lo, hi = self._causal_kv_range(i)
                causal[i, lo:hi] = True
            self.sparse = sparse.astype(bool) & causal

    # -- active sets --------------------------------------------------------------------
    def _causal_kv_range(self, i: int) -> tuple[int, int]:
        if not self.causal:
            return 0, self.kv.num_blocks
        last_row = min((i + 1) * self.q.block, self.q.length) - 1
        n = (last_row + self.offset) // self.kv.block + 1
        return 0, max(0, min(self.kv.num_blocks, n))

    def _causal_q_range(self, j: int) -> tuple[int, int]:
        if not self.causal:
            return 0, self.q.num_blocks
        m = max(0, (j * self.kv.block - self.offset) // self.q.block)
        # A column may have no visible row when N_q > N_k; the formula then exceeds T_r.
        return min(m, self.q.num_blocks), self.q.num_blocks

    def active_kv(self, i: int):
        """Active key blocks of query block i (a range, or an index array with a block mask)."""
        if self.sparse is not None:
            return np.flatnonzero(self.sparse[i])
        return range(*self._causal_kv_range(i))

    def active_q(self, j: int):
        """Active query blocks of key block j."""
        if self.sparse is not None:
            return np.flatnonzero(self.sparse[:, j])
        return range(*self._causal_q_range(j))

    def n_active(self) -> int:
        """|A|: the number of (i, j) blocks the schedules visit."""
        return sum(len(self.active_kv(i)) for i in range(self.q.num_blocks))

    def has_empty_row(self) -> bool:
        """Whether some query block visits no key block (its O_i is never computed)."""
        if self.sparse is None:
            # Dense or causal: the ranges [0, n_i) only grow with i, so only block 0 can be empty.
            return self.q.num_blocks > 0 and len(self.active_kv(0)) == 0
        return any(len(self.active_kv(i)) == 0 for i in range(self.q.num_blocks))

    def entry_visible(self, q_rows: np.ndarray, k_cols: np.ndarray) -> np.ndarray:
        """Element mask of a tile: True where key k is visible to query q."""
        visible = np.ones((len(q_rows), len(k_cols)), dtype=bool)
        if self.causal:
            visible &= k_cols[None, :] <= q_rows[:, None] + self.offset
        if self.sparse is not None:
            visible &= self.sparse[q_rows[:, None] // self.q.block, k_cols[None, :] // self.kv.block]
        return visible

    def splits(self, of: Block, num_splits: int, grouped: bool) -> list[Split]:
        """The ``num_splits`` splits of the key blocks, each with its blocks active for ``of``.

        Split s covers ⌈n_b/S⌉ consecutive key blocks (flash-attn's n_blocks_per_split); a
        split beyond the last block is empty. Grouped, splits with the same number of
        active blocks and the same ragged-last status are counted once.
        """
        n_b = self.kv.num_blocks
        per_split = -(-n_b // num_splits)
        active = set(int(j) for j in self.active_kv(of.index))
        out: dict[tuple, list] = {}
        result = []
        for s in range(num_splits):
            lo, hi = min(s * per_split, n_b), min((s + 1) * per_split, n_b)
            members = tuple(j for j in range(lo, hi) if j in active)
            split = Split(s, lo, hi, members)
            if not grouped:
                result.append(split)
                continue
            key = (len(members), bool(members) and members[-1] == n_b - 1 and self.kv.last_rows != self.kv.block)
            if key in out:
                out[key][1] += 1
                out[key][2] = out[key][2] or split
            else:
                out[key] = [split, 1, None]
        if grouped:
            result = [Split(sp.index, sp.lo, sp.hi, sp.members, n, second) for sp, n, second in out.values()]
        return result

    # -- grouped iteration ------------------------------------------------------------
    def _keys(self, axis: Axis) -> np.ndarray:
        """An integer per block of ``axis``; equal keys ⇔ equal active sets."""
        n = axis.num_blocks
        if self.sparse is not None:
            matrix = self.sparse if axis is self.q else self.sparse.T
            return np.unique(matrix, axis=0, return_inverse=True)[1].reshape(n)
        # Causal (the dense case never gets here): the active set is a range.
        ranges = self._causal_kv_range if axis is self.q else self._causal_q_range
        lo_hi = np.array([ranges(k) for k in range(n)]).reshape(n, 2)
        return np.unique(lo_hi, axis=0, return_inverse=True)[1].reshape(n)

    def all_blocks(self, axis: Axis, grouped: bool) -> list[Block]:
        """Every block of ``axis``; grouped by (rows, active set) when ``grouped``."""
        if not grouped:
            return [axis.make(k, mask_key=("single", k)) for k in range(axis.num_blocks)]
        if self.sparse is None and not self.causal:
            # Dense: every block has the same active set, so blocks differ only in their
            # rows, the full ones then a ragged last one: at most two groups, in O(1).
            return axis.group_set(range(axis.num_blocks), shared_key="dense")
        keys = self._keys(axis)
        groups: dict[tuple, list] = {}
        for k in range(axis.num_blocks):
            groups.setdefault((axis.rows(k), int(keys[k])), []).append(k)
        return [axis.make(ks[0], count=len(ks), mask_key=key, second=ks[1] if len(ks) > 1 else None, members=ks)
                for key, ks in groups.items()]

    def visible_blocks(self, axis: Axis, of: Block, grouped: bool) -> list[Block]:
        """The blocks of ``axis`` active together with block ``of`` of the other axis."""
        if of.axis == axis.name:
            raise ScheduleError(f"visible_to= needs a block of the other axis, got a {of.axis} block")
        if of.mask_key is None:
            raise ScheduleError(
                f"block {of.label} stands for several blocks with different masks, so its "
                "visible blocks are not defined; run this schedule with mode='trace'"
            )
        members = self.active_kv(of.index) if axis is self.kv else self.active_q(of.index)
        return self.blocks_of(axis, members, grouped)

    @staticmethod
    def blocks_of(axis: Axis, members, grouped: bool) -> list[Block]:
        """Blocks ``members`` of ``axis``: grouped by size, or one by one."""
        if grouped:
            return axis.group_set(members)
        return [axis.make(int(k), mask_key=("single", int(k))) for k in members]
