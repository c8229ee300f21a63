"""What tile arithmetic reports to its run: operations, matrix products, temporaries; and
the thread blocks that work is recorded for.

:class:`TileHooks` is a part of :class:`~iosim.engine.context.Context`, which inherits
it (as it inherits its loops from :class:`~iosim.engine.loops.BlockLoops`): every
operation of a :class:`~iosim.engine.tiles.Tile` calls one of these, a hundred or more
times a count, so they read the context's state directly.

Uses the context's ``current_scope`` (its ``weight``: how many real iterations the body
stands for; ``per_member`` inside an affine group), ``ledger``, ``residency``,
``_cta_work`` (the thread block the work belongs to) and ``_operand_link`` (the ledger's
key of the link between shared memory and the registers, or None).
"""

from __future__ import annotations

from .tiles import Tile


class TileHooks:
    """The accounting hooks of :class:`~iosim.engine.context.Context` used by tiles."""

    def count_ops(self, kind: str, n: int) -> None:
        scope = self.current_scope
        weight = scope.weight
        ledger = self.ledger
        ledger.ops_by_kernel[(ledger.kernel, kind)] += n * weight
        work = self._cta_work
        if work is not None:
            if work.affine:
                work.add("ops", kind, n, scope.per_member)
            else:
                work.ops[kind] += n * (weight // work.count)    # the trip count inside one thread block

    def computed(self, shape: tuple[int, ...], kind: str, n: int | None) -> Tile:
        """The temporary ``shape`` tile an operation computes now, with its ``n`` operations
        of ``kind`` counted (None: one per element of the result). As a tile's ``_new``
        and then :meth:`count_ops`, in one call."""
        scope = self.current_scope
        tile = Tile(shape, None, self, None, scope)
        residency = self.residency
        if residency.temporaries is not None:   # only where temporaries are charged
            residency.temporary(tile, tile.size)
        self.count_ops(kind, tile.size if n is None else n)
        return tile

    def note_temporary(self, tile: Tile) -> None:
        """A tile operation computed the temporary ``tile`` (see :meth:`ResidencyTracker.temporary`)."""
        if self.residency.temporaries is not None:   # only where temporaries are charged
            self.residency.temporary(tile, tile.size)

    def count_matmul(self, a: Tile, b: Tile, flops: int) -> None:
        """FLOPs of a product, plus the bytes its scratchpad operands are read with."""
        self.count_ops("matmul", flops)
        a_home, b_home = a.home, b.home
        a_staged = bool(a_home) and a_home[0] == "scratchpad"
        b_staged = bool(b_home) and b_home[0] == "scratchpad"
        work = self._cta_work
        if work is not None:
            shape = (a.shape[0], b.shape[1], a.shape[1], a_staged, b_staged)
            if work.affine:
                work.add("products", shape, 1, self.current_scope.per_member)
            else:
                work.products[shape] += self.current_scope.weight // work.count   # inside one thread block
        key = self._operand_link
        if key is not None and (a_staged or b_staged):
            weight = self.current_scope.weight
            links = self.ledger.link_bytes
            if a_staged:
                links[key] += a.size * a_home[1] * weight
            if b_staged:
                links[key] += b.size * b_home[1] * weight


class ThreadBlock:
    """:meth:`Context.thread_block <iosim.engine.context.Context.thread_block>`'s ``with``:
    the thread block's work record, opened and closed (a class, not a generator: a count
    opens one per query block)."""

    __slots__ = ("ctx", "key", "previous", "work", "works", "made")

    def __init__(self, ctx, key):
        self.ctx, self.key = ctx, key

    def __enter__(self) -> None:
        ctx = self.ctx
        work = self.work = ctx._new_cta_work(self.key)
        if work is None:   # a run that keeps no thread block's work
            return
        self.previous = ctx._cta_work
        ctx._cta_work = work
        works = self.works = ctx.ledger.cta_work[ctx.ledger.kernel]
        works.append(work)
        self.made = ctx._cta_made[id(work)] = (ctx.current_scope, tuple(s.group for s in ctx.residency.scopes))

    def __exit__(self, *exc) -> None:
        if self.work is None:
            return
        ctx, work, works, made = self.ctx, self.work, self.works, self.made
        ctx._cta_work = self.previous
        # Count mode runs a group of identical thread blocks as its first member, then
        # the rest: one record for the group, as its members did the same work (an
        # affine group's rest takes its first member's record, and decides when expanded).
        if len(works) > 1 and works[-1] is work:
            last = works[-2]
            last_scope, last_groups = ctx._cta_made.get(id(last), (None, None))
            if last_scope is not made[0] and last_groups == made[1] and not last.affine:
                if work.affine:
                    work.absorb(last, made[0].group)
                    del works[-2]
                elif last.ops == work.ops and last.products == work.products:
                    last.count += work.count
                    works.pop()
