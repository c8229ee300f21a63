"""The HBM of a numeric run: the arrays a schedule's loads read and its stores write.

Every tensor is held for all heads at once, as ``(heads, [splits,] rows[, cols])`` in
float64: B·H copies, or B·H_k for K/V-head tensors, which a query head reads from its
group's copy (GQA). Count and trace runs hold no arrays.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import ScheduleError
from ..workload.problem import Problem
from .tensors import TensorSpec, TensorTable


def full_shape(spec: TensorSpec, problem: Problem) -> tuple[int, ...]:
    """Per-head shape of the whole tensor: (rows,) or (rows, cols)."""
    rows = spec.num_rows(problem)
    return (rows,) if spec.cols is None else (rows, spec.num_cols(problem))


def replace_split(spec: TensorSpec) -> TensorSpec:
    """The same tensor seen as one copy (to index inside a split)."""
    return dataclasses.replace(spec, per_split=False)


class HbmStore:
    """The HBM arrays of one numeric run, by tensor name.

    ``arrays`` holds the inputs and everything written so far; ``input_names`` says which
    of them were inputs (the rest are the run's outputs).
    """

    def __init__(self, problem: Problem, tensors: TensorTable):
        self.problem = problem
        self.tensors = tensors
        self.arrays: dict[str, np.ndarray] = {}
        self.input_names: set[str] = set()

    def _heads(self, spec: TensorSpec) -> int:
        """How many copies of ``spec`` the HBM holds: B·H, or B·H_k for K/V-head tensors."""
        return self.problem.kv_heads_total if spec.heads == "kv" else self.problem.heads_total

    def bind_inputs(self, inputs: dict[str, np.ndarray]) -> None:
        """Bind the caller's arrays as read-only views (float64 arrays are not copied, and
        are never written: a schedule may not write its inputs)."""
        p = self.problem
        for name, array in inputs.items():
            spec = self.tensors[name]
            heads = p.kv_heads if spec.heads == "kv" else p.heads
            want = (p.batch, heads) + full_shape(spec, p)
            array = np.asarray(array, dtype=np.float64)
            if array.shape != want:
                raise ScheduleError(f"input {name} has shape {array.shape}, expected (batch, heads, rows, cols) = {want}")
            view = array.reshape((self._heads(spec),) + full_shape(spec, p)).view()
            view.flags.writeable = False
            self.arrays[name] = view
            self.input_names.add(name)
        # Query head b·H + h reads K/V head b·H_k + h // (H/H_k).
        q_heads = np.arange(p.heads_total)
        self._kv_of_q = p.kv_head_of(q_heads)

    def array(self, spec: TensorSpec, create: bool = False, num_splits: int | None = None) -> np.ndarray:
        """The array of ``spec``; with ``create``, a new one of NaNs when nothing was written yet
        (``num_splits`` copies of a per-split tensor)."""
        if spec.name not in self.arrays:
            if not create:
                raise ScheduleError(f"{spec.name} is read before anything was written to it in HBM")
            copies = (num_splits,) if spec.per_split else ()
            self.arrays[spec.name] = np.full((self._heads(spec),) + copies + full_shape(spec, self.problem), np.nan)
        return self.arrays[spec.name]

    def _window(self, spec, rows_block, cols_block, split=None) -> tuple:
        """Index of a tile (or of the whole tensor when ``rows_block`` is None), after the heads axis."""
        if spec.per_split:
            if split is None:
                raise ScheduleError(f"{spec.name} has one copy per split: pass split=")
            return (split.index,) + self._window(replace_split(spec), rows_block, cols_block)
        if rows_block is None:
            return ()
        rows = slice(rows_block.start, rows_block.start + rows_block.rows)
        if cols_block is None:
            return (rows,)
        return (rows, slice(cols_block.start, cols_block.start + cols_block.rows))

    def read(self, spec: TensorSpec, rows_block, cols_block, split=None) -> np.ndarray:
        """A copy of the tile for every query head (K/V-head tensors gathered per group)."""
        array = self.array(spec)[(slice(None),) + self._window(spec, rows_block, cols_block, split)]
        return array[self._kv_of_q] if spec.heads == "kv" else array.copy()

    def write(self, spec: TensorSpec, rows_block, cols_block, data, sum_over_group: bool, split=None,
              num_splits: int | None = None, add: bool = False) -> None:
        """Write a tile (or the whole tensor) for every head; ``sum_over_group`` sums each
        K/V head's query heads first (the GQA gradient reduction); ``add`` adds it to the
        values there (a reduction in the memory system)."""
        if spec.name in self.input_names:  # Context checks first, with the schedule's call in its message
            raise ScheduleError(f"{spec.name} is an input of this run; it is read-only")
        target = self.array(spec, create=True, num_splits=num_splits)
        if sum_over_group:
            p = self.problem
            data = data.reshape((p.kv_heads_total, p.group_size) + data.shape[1:]).sum(axis=1)
        window = (slice(None),) + self._window(spec, rows_block, cols_block, split)
        if add:
            target[window] += data
        else:
            target[window] = data
