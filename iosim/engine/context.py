"""The API a schedule is written against.

A schedule is ``def my_schedule(ctx): ...``. It walks blocks with :meth:`Context.q_blocks`
and :meth:`Context.kv_blocks`, moves tiles with :meth:`Context.load` and
:meth:`Context.store` (HBM ↔ chip, counted), declares what it keeps on chip with
:meth:`Context.keep` and :meth:`Context.fill` (capacity-checked), and computes with
:class:`~iosim.engine.tiles.Tile` arithmetic. The same code counts bytes (``count``,
``trace``) and computes the attention output (``numeric``).

Counting conventions (fa-io-spec.md §2): one access is one element moved between HBM and
on-chip memory (C1); bytes = elements × the tensor's width (C2); a ragged last tile moves
only its real rows, or B rows with ``tiles="padded"`` (C4); "Initialize … in HBM" is
counted only with ``count_init=True`` (C5); reads of freshly initialised data count (C6);
loads inside a skipped block are not made (C7); whole-tensor reads/writes model the
paper's idealised kernels, each element once (C8); there is no cache (C9).
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from typing import Iterator

import numpy as np

from ..dtypes import width
from ..errors import ScheduleError
from ..workload.problem import BlockSizes, Problem
from .blocks import Block, BlockMask, Split
from .ledger import CtaWork, Ledger
from .residency import ResidencyTracker
from .tensors import TensorSpec, TensorTable
from .tiles import Tile, shape_size

MODES = ("count", "trace", "numeric")


class Context:
    """One run of one schedule on one problem; what a schedule sees as ``ctx``.

    Attributes a schedule may read: ``problem`` (N, d, dtype, causal...), ``blocks``
    (B_r, B_c), ``softmax_scale`` (τ = 1/√d) and ``mode``.
    """

    def __init__(
        self,
        problem: Problem,
        blocks: BlockSizes,
        *,
        mode: str,
        residency: ResidencyTracker,
        level_names: dict[str, str],
        path_links=None,
        inputs: dict[str, np.ndarray] | None = None,
        tiles: str = "exact",
        count_init: bool = False,
        block_mask: np.ndarray | None = None,
        sm_count: int | None = None,
    ):
        if mode not in MODES:
            raise ScheduleError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if tiles not in ("exact", "padded"):
            raise ScheduleError(f"tiles must be 'exact' or 'padded', got {tiles!r}")
        self.problem, self.blocks, self.mode = problem, blocks, mode
        self.softmax_scale = 1.0 / np.sqrt(problem.head_dim)
        self.mask_info = BlockMask(problem, blocks, block_mask)
        self.tensors = TensorTable()
        self.ledger = Ledger()
        self.residency = residency
        self.level_names = level_names
        self._path_links = path_links or (lambda a, b: [])
        self._padded = tiles == "padded"
        self._count_init = count_init
        self._grouped = mode == "count"
        self._weights = [1]
        self.hbm: dict[str, np.ndarray] = {}
        self.watches: dict[str, list[np.ndarray]] = {}
        self.input_names: set[str] = set()
        self.num_splits: int | None = None
        #: with record_requests(), every access in order: see Request (trace mode only)
        self.requests: list | None = None
        self._cta_work: CtaWork | None = None  # the thread block the accesses belong to
        self.sm_count = sm_count  # the GPU's SMs, for split heuristics (from the profile)
        if mode == "numeric":
            self._bind_inputs(inputs or {})

    # -- loops ------------------------------------------------------------------------
    def q_blocks(self, visible_to: Block | None = None) -> Iterator[Block]:
        """Query (row) blocks i = 0..T_r−1, or those active with key block ``visible_to``."""
        return self._iterate(self._blocks(self.mask_info.q, visible_to))

    def kv_blocks(self, visible_to: Block | None = None, split: Split | None = None,
                  descending: bool = False) -> Iterator[Block]:
        """Key/value (column) blocks j = 0..T_c−1, or those active with query block
        ``visible_to`` (and inside ``split``, from :meth:`splits`); ``descending`` walks
        them from the last to the first, as flash-attn's forward kernel does."""
        axis = self.mask_info.kv
        if split is not None:
            blocks = self.mask_info.blocks_of(axis, split.members, self._grouped)
        else:
            blocks = self._blocks(axis, visible_to)
        return self._iterate(blocks[::-1] if descending else blocks)

    def splits(self, visible_to: Block) -> Iterator[Split]:
        """The key/value splits of Flash-Decoding for query block ``visible_to``
        (``set_num_splits`` first); each carries the key blocks it covers."""
        if self.num_splits is None:
            raise ScheduleError("call ctx.set_num_splits(S) before ctx.splits()")
        return self._iterate(self.mask_info.splits(visible_to, self.num_splits, self._grouped))

    def set_num_splits(self, num_splits: int) -> None:
        """S: how many splits per-split tensors (Oaccum, LSEaccum) have."""
        if num_splits < 1:
            raise ScheduleError(f"num_splits must be ≥ 1, got {num_splits}")
        self.num_splits = num_splits

    def _blocks(self, axis, visible_to) -> list[Block]:
        if visible_to is None:
            return self.mask_info.all_blocks(axis, self._grouped)
        return self.mask_info.visible_blocks(axis, visible_to, self._grouped)

    def _iterate(self, blocks):
        for block in blocks:
            # Each iteration is a residency scope and multiplies counts by its trip count.
            self._weights.append(self._weights[-1] * block.count)
            self.residency.push()
            try:
                yield block
            finally:
                self.residency.pop()
                self._weights.pop()

    def record_requests(self) -> None:
        """Keep every HBM access, in program order, for the cache model (trace mode only)."""
        if self.mode != "trace":
            raise ScheduleError("requests are recorded in trace mode, where every iteration runs")
        self.requests = []

    @contextmanager
    def thread_block(self, key):
        """The accesses inside belong to one thread block (CTA) of the current kernel, e.g.
        FlashAttention-2's query block i. Thread blocks run concurrently and share the L2."""
        previous = self._cta_work
        self._cta_work = CtaWork(key, self.weight)
        self.ledger.cta_work[self.ledger.kernel].append(self._cta_work)
        try:
            yield
        finally:
            self._cta_work = previous

    @contextmanager
    def kernel(self, name: str):
        """Attribute the traffic inside the ``with`` block to kernel launch ``name``
        (e.g. FlashAttention-2's backward: "dot_do_o", "dq_dk_dv", "convert_dq")."""
        previous, self.ledger.kernel = self.ledger.kernel, name
        try:
            yield
        finally:
            self.ledger.kernel = previous

    @property
    def weight(self) -> int:
        """How many real iterations the current (grouped) loop body stands for."""
        return self._weights[-1]

    # -- HBM <-> chip -----------------------------------------------------------------
    def load(self, tensor: str, block: Block | tuple[Block, Block], split: Split | None = None) -> Tile:
        """Load a tile of ``tensor`` from HBM into on-chip memory (counted, resident).

        A query head reads K/V-head tensors (K, V) from its group's copy (GQA).
        """
        spec = self.tensors[tensor]
        rows_block, cols_block = self._split(spec, block)
        shape, traffic = self._tile_extent(spec, rows_block, cols_block)
        level, dtype = self._account(spec, "read", traffic, where=(rows_block, cols_block, split))
        self.residency.keep(f"{tensor}_{self._suffix(rows_block, cols_block)}", level, shape_size(shape), dtype)
        data = self._read_data(spec, rows_block, cols_block, split) if self.mode == "numeric" else None
        return Tile(shape, data, self, home=(level, width(dtype)))

    def store(self, tensor: str, block: Block | tuple[Block, Block], tile: Tile, sum_over_group: bool = False,
              split: Split | None = None) -> None:
        """Write a tile of ``tensor`` from chip to HBM (counted).

        ``sum_over_group=True`` writes a K/V-head tensor as the sum of its query heads'
        tiles (the GQA gradient reduction): counted once per K/V head.
        """
        spec = self.tensors[tensor]
        rows_block, cols_block = self._split(spec, block)
        shape, traffic = self._tile_extent(spec, rows_block, cols_block)
        if tile.shape != shape:
            raise ScheduleError(f"store of {tensor} tile: shape {tile.shape} does not match the block's {shape}")
        self._check_group_write(spec, sum_over_group)
        self._account(spec, "write", traffic, per_kv_head=sum_over_group, where=(rows_block, cols_block, split))
        if self.mode == "numeric":
            self._write_data(spec, rows_block, cols_block, tile.data, sum_over_group, split)

    def read(self, tensor: str, resident_as: str | None = None) -> Tile:
        """Read a whole tensor, each element once: the paper's idealised kernel (C8).

        The idealised kernel has no residency; with ``resident_as`` the tensor is kept on
        chip under that name and charged like a loaded tile (the course grader's ctx.read).
        """
        spec = self.tensors[tensor]
        level, dtype = self._account(spec, "read", spec.elements(self.problem), where=None)
        data = self._read_data(spec, None, None) if self.mode == "numeric" else None
        shape = self._full_shape(spec)
        if resident_as is None:
            return Tile(shape, data, self)
        self.residency.keep(resident_as, level, shape_size(shape), dtype)
        return Tile(shape, data, self, home=(level, width(dtype)))

    def write(self, tensor: str, tile: Tile, sum_over_group: bool = False) -> None:
        """Write a whole tensor, each element once (idealised kernel, C8); see :meth:`store`."""
        spec = self.tensors[tensor]
        self._check_group_write(spec, sum_over_group)
        self._account(spec, "write", spec.elements(self.problem), per_kv_head=sum_over_group)
        if self.mode == "numeric":
            self._write_data(spec, None, None, tile.data, sum_over_group)

    def _account(self, spec: TensorSpec, direction: str, elements: int, per_kv_head: bool = False,
                 where: tuple | None = None):
        """Count one HBM access of ``elements`` and the links it crosses; returns its on-chip place."""
        self.ledger.add_traffic(spec.name, direction, elements * self.weight, per_kv_head)
        if self.requests is not None:
            self.requests.append(self._request(spec, direction, per_kv_head, where))
        level, dtype = self.residency.place(spec.role, spec.dtype_for(self.problem))
        nbytes = elements * spec.width(self.problem) * self.weight
        links = self.ledger.link_bytes_per_kv_head if per_kv_head else self.ledger.link_bytes
        for link in self._path_links(self.level_names["dram"], self.level_names[level]):
            links[tuple(sorted((link.a, link.b)))] += nbytes
        return level, dtype

    def _request(self, spec: TensorSpec, direction: str, per_kv_head: bool, where) -> "Request":
        rows_block, cols_block, split = where or (None, None, None)
        rows = (0, spec.num_rows(self.problem)) if rows_block is None else (rows_block.start, rows_block.rows)
        cols = (0, spec.num_cols(self.problem)) if cols_block is None else (cols_block.start, cols_block.rows)
        cta = self._cta_work.key if self._cta_work is not None else None
        return Request(self.ledger.kernel, cta, spec.name, direction, rows[0], rows[1], cols[0], cols[1],
                       None if split is None else split.index, spec.heads == "kv" and not per_kv_head,
                       spec.width(self.problem), per_kv_head)

    def _check_group_write(self, spec: TensorSpec, sum_over_group: bool) -> None:
        if sum_over_group and spec.heads != "kv":
            raise ScheduleError(f"sum_over_group applies to K/V-head tensors, not {spec.name}")
        if not sum_over_group and spec.heads == "kv" and self.problem.group_size > 1:
            raise ScheduleError(
                f"{spec.name} has one copy per K/V head, shared by {self.problem.group_size} query heads: "
                "write it with sum_over_group=True (or write a per-query-head tensor)"
            )

    def init(self, tensor: str, value: float, force_count: bool = False) -> None:
        """"Initialize ``tensor`` = value in HBM": counted only with ``count_init`` (C5),
        or when ``force_count`` says the initial value is part of the result."""
        spec = self.tensors[tensor]
        if self._count_init or force_count:
            axis = self.mask_info.q if spec.rows == "q" else self.mask_info.kv
            rows = axis.num_blocks * axis.block if self._padded else axis.length
            self.ledger.add_traffic(tensor, "write", rows * spec.num_cols(self.problem) * self.weight)
            self.ledger.init_counted.add(tensor)
        if self.mode == "numeric":
            self._hbm_array(spec, create=True)[...] = value

    # -- on-chip state ------------------------------------------------------------------
    def keep(self, name: str, tile: Tile, role: str) -> Tile:
        """Declare that ``tile`` stays on chip under ``name`` until this iteration ends.

        ``role`` (``scores``, ``output``, ``stats`` or ``input``) decides the level and
        width it occupies under the run's residency placement. Keeping a name that is
        already resident replaces it in place.
        """
        level, dtype = self.residency.place(role, self.problem.dtype)
        self.residency.keep(name, level, tile.size, dtype)
        tile.home = (level, width(dtype))
        return tile

    def fill(self, name: str, block: Block, value: float, role: str, cols: int | None = None) -> Tile:
        """A new on-chip tile of ``block.rows`` rows (× ``cols``) set to ``value``, kept."""
        shape = (block.rows,) if cols is None else (block.rows, cols)
        data = None
        if self.mode == "numeric":
            data = np.full((self.problem.heads_total,) + shape, value, dtype=np.float64)
        return self.keep(name, Tile(shape, data, self), role)

    def mask(self, scores: Tile, i: Block | None = None, j: Block | None = None) -> Tile:
        """Apply the causal and block-sparse masks to a score tile (whole S when no blocks are given)."""
        if self.mode != "numeric" or not (self.problem.causal or self.mask_info.sparse is not None):
            return scores
        q0 = 0 if i is None else i.start
        k0 = 0 if j is None else j.start
        rows = np.arange(q0, q0 + scores.shape[0])
        cols = np.arange(k0, k0 + scores.shape[1])
        visible = self.mask_info.entry_visible(rows, cols)
        return Tile(scores.shape, np.where(visible, scores.data, -np.inf), self, scores.home)

    def watch(self, name: str, tile: Tile) -> None:
        """Record a copy of an on-chip value (numeric mode only), e.g. the running ℓ_i."""
        if self.mode == "numeric":
            self.watches.setdefault(name, []).append(np.array(tile.data, copy=True))

    def declare(self, name: str, rows: str, cols: str | None, role: str, dtype: str | None = None) -> None:
        """Add an HBM tensor that is not built in (see :class:`TensorSpec`)."""
        self.tensors.declare(TensorSpec(name, rows, cols, role, dtype))

    # -- accounting hooks used by tiles -------------------------------------------------
    def count_ops(self, kind: str, n: int) -> None:
        self.ledger.add_ops(kind, n * self.weight)
        if self._cta_work is not None:
            self._cta_work.ops[kind] += n * self._per_cta_weight()

    def _per_cta_weight(self) -> int:
        """Trip count of the current body inside one thread block (exact: the block's own
        weight divides every weight nested in it)."""
        return self.weight // self._cta_work.count

    def count_matmul(self, a: Tile, b: Tile, flops: int) -> None:
        """FLOPs of a product, plus the bytes its scratchpad operands are read with."""
        self.count_ops("matmul", flops)
        if self._cta_work is not None:
            staged = [bool(t.home) and t.home[0] == "scratchpad" for t in (a, b)]
            self._cta_work.products[(a.shape[0], b.shape[1], a.shape[1], staged[0], staged[1])] += self._per_cta_weight()
        scratch = self.level_names.get("scratchpad")
        regs = self.level_names.get("registers")
        for operand in (a, b):
            if operand.home and operand.home[0] == "scratchpad" and regs:
                key = tuple(sorted((scratch, regs)))
                self.ledger.link_bytes[key] += operand.size * operand.home[1] * self.weight

    # -- helpers ------------------------------------------------------------------------
    def _split(self, spec: TensorSpec, block) -> tuple[Block, Block | None]:
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

    def _tile_extent(self, spec, rows_block, cols_block) -> tuple[tuple[int, ...], int]:
        """(per-head shape of the tile on chip, elements it moves under C4)."""
        rows = rows_block.rows
        moved_rows = rows_block.block if self._padded else rows
        if spec.cols is None:
            return (rows,), moved_rows
        if cols_block is not None:
            cols = cols_block.rows
            moved_cols = cols_block.block if self._padded else cols
            return (rows, cols), moved_rows * moved_cols
        cols = spec.num_cols(self.problem)
        return (rows, cols), moved_rows * cols

    @staticmethod
    def _suffix(rows_block, cols_block) -> str:
        r = "i" if rows_block.axis == "q" else "j"
        return r if cols_block is None else r + "j"

    def _full_shape(self, spec) -> tuple[int, ...]:
        rows = spec.num_rows(self.problem)
        return (rows,) if spec.cols is None else (rows, spec.num_cols(self.problem))

    def _heads(self, spec: TensorSpec) -> int:
        """How many copies of ``spec`` the HBM holds: B·H, or B·H_k for K/V-head tensors."""
        return self.problem.kv_heads_total if spec.heads == "kv" else self.problem.heads_total

    def _bind_inputs(self, inputs: dict[str, np.ndarray]) -> None:
        p = self.problem
        for name, array in inputs.items():
            spec = self.tensors[name]
            heads = p.kv_heads if spec.heads == "kv" else p.heads
            want = (p.batch, heads) + self._full_shape(spec)
            array = np.asarray(array, dtype=np.float64)
            if array.shape != want:
                raise ScheduleError(f"input {name} has shape {array.shape}, expected (batch, heads, rows, cols) = {want}")
            self.hbm[name] = array.reshape((self._heads(spec),) + self._full_shape(spec))
            self.input_names.add(name)
        # Query head b·H + h reads K/V head b·H_k + h // (H/H_k).
        q_heads = np.arange(p.heads_total)
        self._kv_of_q = p.kv_head_of(q_heads)

    def _hbm_array(self, spec: TensorSpec, create: bool = False) -> np.ndarray:
        if spec.name not in self.hbm:
            if not create:
                raise ScheduleError(f"{spec.name} is read before anything was written to it in HBM")
            copies = (self.num_splits,) if spec.per_split else ()
            self.hbm[spec.name] = np.full((self._heads(spec),) + copies + self._full_shape(spec), np.nan)
        return self.hbm[spec.name]

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

    def _read_data(self, spec: TensorSpec, rows_block, cols_block, split=None) -> np.ndarray:
        """A copy of the tile for every query head (K/V-head tensors gathered per group)."""
        array = self._hbm_array(spec)[(slice(None),) + self._window(spec, rows_block, cols_block, split)]
        return array[self._kv_of_q] if spec.heads == "kv" else array.copy()

    def _write_data(self, spec: TensorSpec, rows_block, cols_block, data, sum_over_group: bool, split=None) -> None:
        target = self._hbm_array(spec, create=True)
        if sum_over_group:
            p = self.problem
            data = data.reshape((p.kv_heads_total, p.group_size) + data.shape[1:]).sum(axis=1)
        target[(slice(None),) + self._window(spec, rows_block, cols_block, split)] = data


def replace_split(spec: TensorSpec) -> TensorSpec:
    """The same tensor seen as one copy (to index inside a split)."""
    return dataclasses.replace(spec, per_split=False)


@dataclasses.dataclass(frozen=True)
class Request:
    """One HBM access of one head, as the cache model sees it (trace mode).

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
