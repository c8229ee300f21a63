"""Affine groups: causal blocks counted by the *shape* of their inner loop.

Under a causal mask every query block i has its own active key blocks [0, n_i), so
grouping by active set (:mod:`.blocks`) leaves one group per block and counting costs
O(T_r) loop bodies. But for counting, two blocks whose inner loops have the same shape
are alike: the same rows, and an inner loop of (n_i full key blocks, identical bodies)
plus (the ragged last key block, or not). Their counts are affine in n_i. So a count run
groups the blocks of an outer causal loop by that shape (:func:`shape_groups`), runs one
body for each group, and gives the inner loop's group of full blocks the weight Σ n_i
over the outer group's members instead of (outer count) × (inner count): an inner block
of such a loop is *summed* (``Block.per``, each outer member's own count).

Every scope inside an affine group carries ``per_member``: how many real iterations it
stands for for each member of the group (``Scope.unit`` copies of each), so traffic and
operations are weighted by ``unit · Σ per_member`` and a thread block opened at the
group records work affine in its members (:class:`~iosim.engine.ledger.AffineCtaWork`),
expanded to today's per-block records when read. Key axis (FA1's outer loop, the
backward passes) alike: key block j's active query blocks are [m_j, T_r).

Only what this exactness argument covers is grouped: count mode without the cache
model's recording, causal masks without a block mask, one affine group at a time.
Anything a run does that needs a member's own active set from a group (Flash-Decoding's
splits, a nested ``visible_to`` of a summed block, a thread block inside an inner loop,
a tile of an enclosing iteration resized) raises :class:`AffineUnsupported`, and
:func:`iosim.run.count.count_launch` counts the launch again grouped by active set.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .blocks import Block


class AffineUnsupported(Exception):
    """The run asked an affine group for something only its members know; count it again
    with per-active-set groups (never seen by a schedule's author)."""


@dataclass(frozen=True)
class AffineSet:
    """The active ranges [lo, hi) on the other axis of an affine group's members, and
    whether each includes that axis' ragged last block (the same for all members)."""

    lo: np.ndarray
    hi: np.ndarray
    ragged: bool

    def __getitem__(self, sl: slice) -> "AffineSet":
        return AffineSet(self.lo[sl], self.hi[sl], self.ragged)

    @property
    def full(self) -> np.ndarray:
        """Each member's number of full blocks on the other axis."""
        return self.hi - self.lo - (1 if self.ragged else 0)


def causal_ranges(mask, axis) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of every block of ``axis``: its active blocks on the other axis, as
    :meth:`BlockMask._causal_kv_range` and ``_causal_q_range`` give them, vectorised."""
    idx = np.arange(axis.num_blocks, dtype=np.int64)
    if axis is mask.q:
        last_row = np.minimum((idx + 1) * mask.q.block, mask.q.length) - 1
        n = (last_row + mask.offset) // mask.kv.block + 1
        return np.zeros_like(idx), np.clip(n, 0, mask.kv.num_blocks)
    m = np.maximum(0, (idx * mask.kv.block - mask.offset) // mask.q.block)
    return np.minimum(m, mask.q.num_blocks), np.full_like(idx, mask.q.num_blocks)


def shape_groups(mask, axis) -> list[Block]:
    """The blocks of ``axis`` as runs of consecutive blocks with the same rows and the
    same inner-loop shape (no, one or several full blocks; ragged last block or not)."""
    lo, hi = causal_ranges(mask, axis)
    other = mask.kv if axis is mask.q else mask.q
    ragged = (hi == other.num_blocks) & (hi > lo) & (other.last_rows != other.block)
    full = hi - lo - ragged
    rows_last = np.arange(axis.num_blocks) == axis.num_blocks - 1
    key = np.stack([np.minimum(full, 2), ragged, rows_last & (axis.last_rows != axis.block)])
    starts = np.flatnonzero(np.any(key[:, 1:] != key[:, :-1], axis=0)) + 1
    bounds = [0, *starts.tolist(), axis.num_blocks]
    groups = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b - a == 1:
            groups.append(axis.make(a, mask_key=("single", a)))
        else:
            groups.append(Block(axis.name, a, a * axis.block, axis.rows(a), axis.block, b - a, ("affine", a),
                                a + 1, range(a, b), affine=AffineSet(lo[a:b], hi[a:b], bool(ragged[a]))))
    return groups


def is_affine(block) -> bool:
    return isinstance(block, Block) and (block.affine is not None or block.per is not None)


def first_then_rest(block: Block) -> tuple[Block, ...]:
    """An affine group as its first member (a plain block) then the rest; a summed block
    as the first full block of every member, then the rest of each (Σ (n_i − 1))."""
    if block.affine is not None:
        first = Block(block.axis, block.index, block.start, block.rows, block.block, 1, ("single", block.index))
        rest, members = block.affine[1:], block.members[1:]    # an affine group still if one member
        return first, replace(block, index=members[0], start=members[0] * block.block, count=len(members),
                              mask_key=("affine", members[0]), second=members[1] if len(members) > 1 else None,
                              members=members, affine=rest)
    per = block.per
    if block.count == len(per):                     # one block per member
        return (block,)
    ones = np.ones_like(per)
    first = replace(block, count=len(per), per=ones, mask_key=_same_key(block.lo_of, 0))
    rest = replace(block, index=block.index + 1, start=block.start + block.block, count=block.count - len(per),
                   per=per - ones, mask_key=_same_key(block.lo_of, 1) if int(per.max()) == 2 else None,
                   lo_of=block.lo_of + 1)
    return first, rest


def summed_blocks(mask, axis, of: Block) -> list[Block]:
    """The active blocks of ``axis`` for the members of affine group ``of``, as summed
    blocks: the full ones (each member's own number of them), then the ragged last."""
    aff = of.affine
    full = aff.full
    out = []
    if full[0] > 0:
        lo = int(aff.lo[0])
        out.append(Block(axis.name, lo, lo * axis.block, axis.block, axis.block, int(full.sum()),
                         _same_key(aff.lo, 0) if int(full[0]) == 1 else None, per=full, lo_of=aff.lo))
    if aff.ragged:
        last = axis.num_blocks - 1
        out.append(Block(axis.name, last, last * axis.block, axis.last_rows, axis.block, len(full),
                         ("single", last), per=np.ones_like(full)))
    return out


def _same_key(lo: np.ndarray, offset: int):
    """("single", j) when every member's block is j = lo + offset, else None."""
    return ("single", int(lo[0]) + offset) if int(lo.min()) == int(lo.max()) else None


def weigh(enclosing, block) -> tuple[int, object, int]:
    """(weight, per-member counts or None, unit) of an iteration of ``block`` in scope
    ``enclosing`` (see the module's docstring)."""
    aff, summed = getattr(block, "affine", None), getattr(block, "per", None)   # a Split has neither
    if aff is not None:
        return enclosing.weight * block.count, np.ones(block.count, dtype=np.int64), enclosing.weight
    per = enclosing.per_member
    if per is None:
        return enclosing.weight * block.count, None, 0
    per = per * (summed if summed is not None else block.count)
    return enclosing.unit * int(per.sum()), per, enclosing.unit
