"""The loops of a schedule: query blocks, key/value blocks and Flash-Decoding splits.

Each iteration is a scope: what the body keeps on chip is released when it ends, and the
counts it makes are multiplied by how many real iterations it stands for (``count`` mode
walks grouped iterations, one body per group of identical blocks, or, causal, of blocks
whose inner loops have the same shape: :mod:`.affine`; ``trace`` and
``numeric`` walk them one by one). The block an iteration yields is usable only inside
it: outside, in count mode, it could stand for a group that nothing there weighs.
"""

from __future__ import annotations

from typing import Iterator

from ..errors import ScheduleError
from . import affine
from .blocks import Block, Split


class BlockLoops:
    """The loop methods of :class:`~iosim.engine.context.Context`, which inherits them.

    Uses the context's ``mask_info`` (the blocks and which are visible), ``residency``
    (one scope per iteration, which carries its weight), ``current_scope``, ``_grouped``
    (count mode), ``_affine`` (count mode may group causal blocks affinely: :mod:`.affine`),
    ``num_splits`` and ``_recorder`` (told where loops and iterations begin,
    for the cache model's program order).
    """

    def q_blocks(self, visible_to: Block | None = None, interchangeable: bool = False,
                 descending: bool = False) -> Iterator[Block]:
        """Query (row) blocks i = 0..T_r−1, or those active with key block ``visible_to``.
        ``interchangeable``: the schedule's promise that the loop's iterations are (see
        :meth:`_iterate`); ``descending``: from the last to the first."""
        self._check_blocks("ctx.q_blocks(visible_to=…)", visible_to)
        blocks = self._blocks(self.mask_info.q, visible_to)
        return self._iterate(blocks[::-1] if descending else blocks, descending, interchangeable)

    def kv_blocks(self, visible_to: Block | None = None, split: Split | None = None,
                  descending: bool = False, interchangeable: bool = False) -> Iterator[Block]:
        """Key/value (column) blocks j = 0..T_c−1, or those active with query block
        ``visible_to`` (and inside ``split``, from :meth:`splits`); ``descending`` walks
        them from the last to the first, as flash-attn's forward kernel does;
        ``interchangeable`` as :meth:`q_blocks`."""
        self._check_blocks("ctx.kv_blocks(…)", visible_to, split)
        axis = self.mask_info.kv
        if split is not None:
            blocks = self.mask_info.blocks_of(axis, split.members, self._grouped)
        else:
            blocks = self._blocks(axis, visible_to)
        return self._iterate(blocks[::-1] if descending else blocks, descending, interchangeable)

    def splits(self, visible_to: Block) -> Iterator[Split]:
        """The key/value splits of Flash-Decoding for query block ``visible_to``
        (``set_num_splits`` first); each carries the key blocks it covers."""
        if self.num_splits is None:
            raise ScheduleError("call ctx.set_num_splits(S) before ctx.splits()")
        self._check_blocks("ctx.splits(visible_to=…)", visible_to)
        grouped = self._grouped and self._recorder is None   # recorded: one by one (their blocks differ)
        if affine.is_affine(visible_to):
            raise affine.AffineUnsupported("splits of an affine group")
        return self._iterate(self.mask_info.splits(visible_to, self.num_splits, grouped))

    def all_splits(self) -> list[Split]:
        """Splits 0..S−1 as plain handles of the per-split tensors (no key blocks, no loop weighting):
        what a combine or reduction reads every split's copy with."""
        if self.num_splits is None:
            raise ScheduleError("call ctx.set_num_splits(S) before ctx.all_splits()")
        return [Split(s, 0, 0, ()) for s in range(self.num_splits)]

    def set_num_splits(self, num_splits: int) -> None:
        """S: how many splits per-split tensors (Oaccum, LSEaccum) have."""
        if num_splits < 1:
            raise ScheduleError(f"num_splits must be ≥ 1, got {num_splits}")
        self.num_splits = num_splits

    def _blocks(self, axis, visible_to) -> list[Block]:
        mask = self.mask_info
        if visible_to is None:
            if (self._affine and self._recorder is None and mask.causal and mask.sparse is None
                    and self.current_scope.per_member is None):
                return affine.shape_groups(mask, axis)
            return mask.all_blocks(axis, self._grouped)
        if affine.is_affine(visible_to) and visible_to.axis != axis.name:
            if visible_to.affine is not None:
                return affine.summed_blocks(mask, axis, visible_to)
            if visible_to.mask_key is None:
                raise affine.AffineUnsupported("the visible blocks of a summed block")
        return mask.visible_blocks(axis, visible_to, self._grouped)

    def _iterate(self, blocks, descending: bool = False, interchangeable: bool = False):
        """Each iteration is a residency scope and multiplies counts by its trip count.

        In count mode a group of identical iterations runs as two: its first member, then
        its second standing for the rest. What one iteration leaves to the next (a tile
        released when it ended, a name it overwrote) is then met as in trace mode, so a
        schedule that uses an earlier iteration's tiles fails in every mode alike, and
        the counts, weighted 1 and count − 1, are the same. The loop belongs to the
        iteration running when it is made (its blocks are that iteration's): it must run
        there.

        ``interchangeable`` is the schedule's promise that the second run would repeat the
        first: every iteration of a group does the same work whatever its index and
        whatever the iterations before it left (the tiles it finds under the enclosing
        iterations' names have the shapes and places the first one found; FA2's loops,
        whose accumulators are filled before the inner loop). A count run that records no
        accesses then runs one body per group of plain blocks, weighted by the group's
        size: the same counts, work and peaks, from half the bodies. Count = trace tests
        of the built-in schedules hold the promise to account
        (tests/invariants/test_interchangeable.py).
        """
        one = interchangeable and self._grouped and self._recorder is None
        return self._run_loop(blocks, self.current_scope, descending, one)

    def _run_loop(self, blocks, enclosing, descending: bool, one: bool = False):
        rec = self._recorder
        loop = rec.begin_loop(descending) if rec is not None else None
        residency = self.residency
        for group in blocks:
            # a plain block outside every affine group (most loops): weighed as affine.weigh would
            plain = type(group) is Block and group.affine is None and group.per is None and enclosing.per_member is None
            if plain:
                members = (group,) if one else group.first_then_rest()
            else:
                members = group.first_then_rest() if not affine.is_affine(group) else affine.first_then_rest(group)
            for block in members:
                if self.current_scope is not enclosing:
                    state = "ended" if not enclosing.alive else "another loop open inside it"
                    raise ScheduleError(
                        f"a loop was run or resumed outside the iteration it was made in ({enclosing.where}), "
                        f"which has {state}: loops must nest (a loop left half-way is over, and two loops cannot be "
                        "stepped together)")
                if plain:
                    scope = residency.push(block, enclosing.weight * block.count, None, 0, group)
                else:
                    scope = residency.push(block, *affine.weigh(enclosing, block), group=group)
                self.current_scope = scope
                if loop is not None:
                    rec.enter(scope, loop)
                try:
                    yield block
                finally:
                    if scope.alive:
                        residency.pop(scope)
                        self.current_scope = residency.current

    @property
    def weight(self) -> int:
        """How many real iterations the current (grouped) loop body stands for."""
        return self.current_scope.weight

