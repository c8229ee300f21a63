"""The HBM accesses of a run, in program order, for the cache model.

A ``trace`` or ``numeric`` run records every access one by one. A ``count`` run records
them *grouped*: one record of an access in a grouped loop body stands for the same
access in each member of each group around it (its ``levels``), at the member's rows
(splits are walked one by one while recording: each is its own thread block).
:mod:`iosim.models.cache.programs` expands them, in the order a trace run makes them.
"""

from __future__ import annotations

import dataclasses

from ..errors import ScheduleError
from ..workload.problem import Problem
from .tensors import TensorSpec


@dataclasses.dataclass(frozen=True)
class Level:
    """One loop iteration around an access: the block indices it stands for (ascending;
    one unless grouped), where its loop and its body began in record order, and whether
    its loop walks them from the last."""

    members: object
    loop_seq: int
    body_seq: int
    descending: bool


@dataclasses.dataclass(frozen=True)
class Request:
    """One HBM access of one head, as the cache model sees it.

    ``rows``/``cols``: the element window of the tensor; ``gathered``: a K/V-head tensor
    read by a query head (the cache key is then the K/V head the query head maps to);
    ``per_kv_head``: an access made once per K/V head (a GQA group reduction), not once
    per query head.

    Grouped records (count mode) stand for the access in every combination of members of
    the loop iterations around it, ``levels`` (outermost first). ``rows_level`` is the
    level whose block gives the rows (−1: none), which then move by ``rows_step`` rows a
    member (0: one member); the same for the columns. The thread block is made of the
    first ``cta_levels`` levels (each combination of their members is one thread block),
    and ``cta_serial`` names the ``thread_block`` it was opened by (−1: none). ``seq``
    counts records in program order. ``private``: the rows or columns come from the
    thread block's own levels, so no other thread block makes the access.
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
    levels: tuple = ()
    rows_level: int = -1
    rows_step: int = 0
    cols_level: int = -1
    cols_step: int = 0
    cta_levels: int = 0
    cta_serial: int = -1
    private: bool = False

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.width


class RequestRecorder:
    """Keeps every access of a run as a :class:`Request`, in order, in ``requests``."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.requests: list[Request] = []
        self._seq = 0
        #: id(scope) -> (scope, the blocks of its iterations, their Levels), outermost first
        self._iterations: dict[int, tuple] = {}
        self._ctas: dict[int, tuple] = {}          # id(thread block) -> (it, serial)

    def _tick(self) -> int:
        self._seq += 1
        return self._seq

    def begin_loop(self, descending: bool) -> tuple:
        """A loop starts (its iterations' bodies follow): (where it began, its direction)."""
        return self._tick(), descending

    def enter(self, scope, loop: tuple) -> None:
        """Iteration ``scope`` of ``loop`` starts."""
        blocks, levels = self._chain(scope.parent)
        level = Level(scope.block.member_indices(), loop[0], self._tick(), loop[1])
        self._iterations[id(scope)] = (scope, blocks + (scope.block,), levels + (level,))

    def _chain(self, scope) -> tuple:
        """(blocks, Levels) of the loop iterations around and at ``scope``."""
        entry = self._iterations.get(id(scope)) if scope is not None else None
        return (entry[1], entry[2]) if entry is not None and entry[0] is scope else ((), ())

    def record(self, spec: TensorSpec, direction: str, per_kv_head: bool, where, kernel: str, cta,
               scope=None, cta_scope=None, cta_work=None) -> None:
        """Add one access of ``spec``; ``where`` is (rows block, cols block, split, (rows,
        columns) the memory system serves: :func:`~iosim.engine.access.tile_extent`), or None
        for the whole tensor; ``kernel`` and ``cta`` are the launch and thread block it is in
        (``cta_work`` its record, opened in iteration ``cta_scope``), ``scope`` the iteration
        it is made in. A padded buffer's whole rows are asked for (flash-attn's dQaccum and
        softmax_d at a ragged N_q: convert_dq reads all 128 rows of a decode's block)."""
        rows_block, cols_block, split, served = where or (None, None, None, None)
        p = self.problem
        rows = (0, spec.num_rows(p)) if rows_block is None else (rows_block.start, served[0])
        cols = (0, spec.moved_cols(p)) if rows_block is None else (0 if cols_block is None else cols_block.start,
                                                                   served[1])
        blocks, levels = self._chain(scope)
        cta_levels = len(self._chain(cta_scope)[1])
        rows_level, cols_level, split_level = (_level_of(b, blocks) for b in (rows_block, cols_block, split))
        serial = -1
        if cta_work is not None:
            serial = self._ctas.setdefault(id(cta_work), (cta_work, len(self._ctas)))[1]
        self.requests.append(Request(
            kernel, cta, spec.name, direction, rows[0], rows[1], cols[0], cols[1],
            None if split is None else split.index, spec.heads == "kv" and not per_kv_head, spec.width(p),
            per_kv_head, seq=self._tick(), levels=levels, rows_level=rows_level,
            rows_step=_step(rows_block, rows_level), cols_level=cols_level, cols_step=_step(cols_block, cols_level),
            cta_levels=cta_levels, cta_serial=serial,
            private=any(0 <= k < cta_levels for k in (rows_level, cols_level, split_level))))


def _level_of(block, blocks: tuple) -> int:
    """The level whose iteration's block ``block`` is (−1: none)."""
    if block is None:
        return -1
    for k, b in enumerate(blocks):
        if b is block:
            return k
    if getattr(block, "count", 1) > 1:
        raise ScheduleError("the cache model cannot follow an access at a block that stands for a group made "
                            "outside the loops around it")
    return -1


def _step(block, level: int) -> int:
    """Rows a member moves the access by (0: one member, or not from a loop)."""
    return block.block if level >= 0 and block.count > 1 else 0
