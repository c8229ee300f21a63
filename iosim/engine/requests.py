"""The HBM accesses of a run, in program order, for the cache model.

A ``trace`` or ``numeric`` run records every access one by one. A ``count`` run records
them *grouped*: it walks the thread blocks one by one (loops at the top level are not
grouped while recording) and groups only the loops inside them, so one record of an
access in a grouped iteration stands for the same access in each member of the group
(``members``), at the member's rows. :func:`iosim.models.cache.stream.programs` expands
them, in the order a trace run makes them.
"""

from __future__ import annotations

import dataclasses

from ..errors import ScheduleError
from ..workload.problem import Problem
from .tensors import TensorSpec


@dataclasses.dataclass(frozen=True)
class Request:
    """One HBM access of one head, as the cache model sees it.

    ``rows``/``cols``: the element window of the tensor; ``gathered``: a K/V-head tensor
    read by a query head (the cache key is then the K/V head the query head maps to);
    ``per_kv_head``: an access made once per K/V head (a GQA group reduction), not once
    per query head.

    Grouped records (count mode): ``members`` are the block indices the grouped
    iteration stands for (None: the record is one access); ``rows_step``/``cols_step``
    are the block size by which the rows (columns) move from member to member (0: they
    do not); ``cta_step`` whether each member is its own thread block. Order: ``seq``
    counts records in program order; in a grouped loop ``loop_seq`` is where the loop
    began and ``body_seq`` where this iteration's body began, ``descending`` whether the
    loop walks the members from the last.
    """

    kernel: str
    cta: object
    tensor: str
    direction: str
    row_start: int
    rows: int
    col_start: int
    cols: int
    split: int | None
    gathered: bool
    width: int
    per_kv_head: bool = False
    seq: int = 0
    members: object = None
    rows_step: int = 0
    cols_step: int = 0
    cta_step: bool = False
    loop_seq: int = 0
    body_seq: int = 0
    descending: bool = False
    #: the access's rows or columns are those of its thread block's own block (Q_i in
    #: query block i's thread block): no other thread block makes it
    private: bool = False

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.width


@dataclasses.dataclass(frozen=True)
class _Loop:
    seq: int
    grouped: bool
    descending: bool


class RequestRecorder:
    """Keeps every access of a run as a :class:`Request`, in order, in ``requests``."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.requests: list[Request] = []
        self._seq = 0
        self._iterations: dict[int, tuple] = {}   # id(scope) -> (scope, _Loop, body_seq)

    def _tick(self) -> int:
        self._seq += 1
        return self._seq

    def begin_loop(self, grouped: bool, descending: bool) -> _Loop:
        """A loop starts (its iterations' bodies follow)."""
        return _Loop(self._tick(), grouped, descending)

    def enter(self, scope, loop: _Loop) -> None:
        """Iteration ``scope`` of ``loop`` starts."""
        self._iterations[id(scope)] = (scope, loop, self._tick())

    def _grouped_scope(self, scope):
        """The iteration of a grouped loop around ``scope`` (at most one), or None."""
        while scope is not None:
            entry = self._iterations.get(id(scope))
            if entry is not None and entry[0] is scope and entry[1].grouped:
                return entry
            scope = scope.parent
        return None

    def may_group(self, scope) -> bool:
        """A loop started in ``scope`` is grouped: inside some iteration, none grouped."""
        return scope.block is not None and self._grouped_scope(scope) is None

    def record(self, spec: TensorSpec, direction: str, per_kv_head: bool, where, kernel: str, cta,
               scope=None, cta_scope=None) -> None:
        """Add one access of ``spec``; ``where`` is (rows block, cols block, split), or None
        for the whole tensor; ``kernel`` and ``cta`` are the launch and thread block it is
        in, ``scope`` the iteration it is made in and ``cta_scope`` the one its thread block
        was opened in."""
        rows_block, cols_block, split = where or (None, None, None)
        p = self.problem
        rows = (0, spec.num_rows(p)) if rows_block is None else (rows_block.start, rows_block.rows)
        cols = (0, spec.moved_cols(p)) if cols_block is None else (cols_block.start, cols_block.rows)
        grouped = self._grouped_scope(scope)
        extra = {}
        if grouped is not None:
            g_scope, loop, body = grouped
            g = g_scope.block
            for b in (rows_block, cols_block):
                if b is not None and b is not g and b.count > 1:
                    raise ScheduleError(f"the cache model cannot follow an access to {spec.name} at a block that "
                                        "stands for a group made outside its loop")
            several = g.count > 1       # (one member: its rows are the block's own)
            extra = dict(members=g.member_indices(), rows_step=rows_block.block if rows_block is g and several else 0,
                         cols_step=cols_block.block if cols_block is g and several else 0,
                         cta_step=_inside(cta_scope, g_scope), loop_seq=loop.seq, body_seq=body,
                         descending=loop.descending)
        own = cta_scope.block if cta_scope is not None else None
        private = own is not None and any(b is own for b in (rows_block, cols_block, split))
        self.requests.append(Request(kernel, cta, spec.name, direction, rows[0], rows[1], cols[0], cols[1],
                                     None if split is None else split.index, spec.heads == "kv" and not per_kv_head,
                                     spec.width(p), per_kv_head, seq=self._tick(), private=private, **extra))


def _inside(scope, outer) -> bool:
    """Whether ``scope`` is ``outer`` or nested in it."""
    while scope is not None:
        if scope is outer:
            return True
        scope = scope.parent
    return False
