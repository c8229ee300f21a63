"""Where one load or store of a tensor lands: its blocks, its tile's shape, what it moves.

Shared by :meth:`Context.load <iosim.engine.context.Context.load>` and
:meth:`Context.store <iosim.engine.context.Context.store>`: a schedule names a tensor and
a block (or a (query block, key block) pair for N_q × N_kv tensors); these helpers check
the pair fits the tensor and size the tile under C4 (a ragged last tile moves only its
real rows, or B rows with ``tiles="padded"``).
"""

from __future__ import annotations

from ..errors import ScheduleError
from ..workload.problem import Problem
from .blocks import Block
from .tensors import TensorSpec


def split_blocks(spec: TensorSpec, block) -> tuple[Block, Block | None]:
    """(rows block, cols block or None) of an access to ``spec``, checked against its axes."""
    if spec.cols == "kv":
        if not (isinstance(block, tuple) and len(block) == 2):
            raise ScheduleError(f"tensor {spec.name} is N_q × N_kv: give a (query block, key block) pair")
        rows_block, cols_block = block
        if cols_block.axis != "kv":
            raise ScheduleError(f"tensor {spec.name}: the second block must be a key block")
    else:
        rows_block, cols_block = block, None
    if not isinstance(rows_block, Block):
        raise ScheduleError(f"tensor {spec.name}: expected a block from ctx.q_blocks()/kv_blocks()")
    if rows_block.axis != spec.rows:
        want = "ctx.q_blocks()" if spec.rows == "q" else "ctx.kv_blocks()"
        raise ScheduleError(f"tensor {spec.name} is tiled by {want}, got a {rows_block.axis} block")
    return rows_block, cols_block


def tile_extent(spec: TensorSpec, rows_block, cols_block, problem: Problem, padded: bool, whole_rows: bool = False,
                box_cols: int = 0, rounded_cols: bool = True) -> tuple[tuple[int, ...], int, tuple]:
    """(per-head shape of the tile on chip, elements it moves under C4, (rows, columns) the
    memory system serves). ``whole_rows``: the tile moves its block's B rows whatever C4 says
    (a kernel's buffer padded to whole blocks, such as flash-attn's dQaccum and softmax_d).
    ``box_cols``: a row moves its columns rounded up to a multiple of this (a TMA box as wide
    as the kernel's head dim). ``rounded_cols=False``: a buffer that flash-attn allocates with
    a rounded head size (dQaccum) moves the head dim's columns (cuDNN allocates it N_q × d).
    The rows and columns served are what the L2 model is asked
    for: a padded buffer's whole rows are in memory and are read; a TMA box's rows and
    columns past the tensor's edge are filled with zeros on chip, not read."""
    rows = rows_block.rows
    moved_rows = rows_block.block if padded or whole_rows else rows
    served_rows = rows if box_cols and not padded else moved_rows
    if spec.cols is None:
        return (rows,), moved_rows, (served_rows, 1)
    if cols_block is not None:
        cols = cols_block.rows
        moved_cols = cols_block.block if padded else cols
        return (rows, cols), moved_rows * moved_cols, (served_rows, moved_cols)
    served_cols = moved_cols = spec.moved_cols(problem) if rounded_cols else spec.num_cols(problem)
    if box_cols:
        moved_cols = -(-moved_cols // box_cols) * box_cols
    return (rows, spec.num_cols(problem)), moved_rows * moved_cols, (served_rows, served_cols)


def resident_suffix(rows_block, cols_block) -> str:
    """The index letters a loaded tile is kept under: ``Q_i``, ``K_j``, ``S_ij``."""
    r = "i" if rows_block.axis == "q" else "j"
    return r if cols_block is None else r + "j"


def check_group_write(spec: TensorSpec, problem: Problem, sum_over_group: bool) -> None:
    """A K/V-head tensor shared by a GQA group is written only as the group's sum."""
    if sum_over_group and spec.heads != "kv":
        raise ScheduleError(f"sum_over_group applies to K/V-head tensors, not {spec.name}")
    if not sum_over_group and spec.heads == "kv" and problem.group_size > 1:
        raise ScheduleError(
            f"{spec.name} has one copy per K/V head, shared by {problem.group_size} query heads: "
            "write it with sum_over_group=True (or write a per-query-head tensor)"
        )
