"""The HBM accesses of a run, one by one and in program order, for the cache model.

Only runs that execute every iteration one by one (``trace`` and ``numeric``) can record
them: a ``count`` run walks grouped iterations, one body standing for many.
"""

from __future__ import annotations

import dataclasses

from ..workload.problem import Problem
from .tensors import TensorSpec


@dataclasses.dataclass(frozen=True)
class Request:
    """One HBM access of one head, as the cache model sees it (trace or numeric mode).

    ``rows``/``cols``: the element window of the tensor; ``gathered``: a K/V-head tensor
    read by a query head (the cache key is then the K/V head the query head maps to);
    ``per_kv_head``: an access made once per K/V head (a GQA group reduction), not once
    per query head.
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

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.width


class RequestRecorder:
    """Keeps every access of a run as a :class:`Request`, in order, in ``requests``."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.requests: list[Request] = []

    def record(self, spec: TensorSpec, direction: str, per_kv_head: bool, where, kernel: str, cta) -> None:
        """Add one access of ``spec``; ``where`` is (rows block, cols block, split), or None
        for the whole tensor; ``kernel`` and ``cta`` are the launch and thread block it is in."""
        rows_block, cols_block, split = where or (None, None, None)
        p = self.problem
        rows = (0, spec.num_rows(p)) if rows_block is None else (rows_block.start, rows_block.rows)
        cols = (0, spec.moved_cols(p)) if cols_block is None else (cols_block.start, cols_block.rows)
        self.requests.append(Request(kernel, cta, spec.name, direction, rows[0], rows[1], cols[0], cols[1],
                                     None if split is None else split.index, spec.heads == "kv" and not per_kv_head,
                                     spec.width(p), per_kv_head))
