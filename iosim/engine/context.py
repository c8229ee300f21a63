"""The API a schedule is written against.

A schedule is ``def my_schedule(ctx): ...``. It walks blocks with :meth:`Context.q_blocks`
and :meth:`Context.kv_blocks`, moves tiles with :meth:`Context.load` and
:meth:`Context.store` (HBM ↔ chip, counted), declares what it keeps on chip with
:meth:`Context.keep` and :meth:`Context.fill` (capacity-checked), and computes with
:class:`~iosim.engine.tiles.Tile` arithmetic. The same code counts bytes (``count``,
``trace``) and computes the attention output (``numeric``).

Counting conventions (docs/spec/conventions.md): one access is one element moved between HBM and
on-chip memory (C1); bytes = elements × the tensor's width (C2); a ragged last tile moves
only its real rows, or B rows with ``tiles="padded"`` (C4); "Initialize … in HBM" is
counted only with ``count_init=True`` (C5); reads of freshly initialised data count (C6);
loads inside a skipped block are not made (C7); whole-tensor reads/writes model the
paper's idealised kernels, each element once (C8); there is no cache (C9).
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..dtypes import WIDTH_BYTES, width
from ..errors import ScheduleError, require_choice
from ..workload.problem import BlockSizes, Problem
from .access import check_group_write, resident_suffix, split_blocks, tile_extent
from .blocks import Block, BlockMask, Split
from .affine import AffineUnsupported
from .hooks import ThreadBlock, TileHooks
from .ledger import AffineCtaWork, CtaWork, Ledger
from .loops import BlockLoops
from .requests import RequestRecorder
from .residency import ResidencyTracker, Scope, describe_use
from .storage import HbmStore, full_shape
from .tensors import INPUT_TENSORS, TensorSpec, TensorTable
from .tiles import Tile, shape_size

MODES = ("count", "trace", "numeric")


class Context(BlockLoops, TileHooks):
    """One run of one schedule on one problem; what a schedule sees as ``ctx``.

    Attributes a schedule may read: ``problem`` (N, d, dtype, causal...), ``blocks``
    (B_r, B_c), ``softmax_scale`` (τ = 1/√d of the user's d, also where a kernel runs it padded) and ``mode``.
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
        affine: bool = True,
        cta_work: bool = True,
        softmax_scale: float | None = None,
    ):
        require_choice("mode", mode, MODES, ScheduleError)
        require_choice("tiles", tiles, ("exact", "padded"), ScheduleError)
        self.problem, self.blocks, self.mode = problem, blocks, mode
        self.softmax_scale = 1.0 / np.sqrt(problem.head_dim) if softmax_scale is None else softmax_scale
        self.mask_info = BlockMask(problem, blocks, block_mask)
        self.tensors = TensorTable()
        self.ledger = Ledger()
        self.residency = residency
        #: the innermost loop iteration running: the lifetime of the temporaries computed now
        self.current_scope: Scope = residency.current
        self.level_names = level_names
        scratch, regs = level_names.get("scratchpad"), level_names.get("registers")
        #: the ledger's key of the link scratchpad operands of a product are read over (TileHooks)
        self._operand_link = tuple(sorted((scratch, regs))) if regs else None
        self._path_links = path_links or (lambda a, b: [])
        self._links: dict[str, list] = {}   # on-chip level -> its links to HBM (_link_keys)
        self._padded = tiles == "padded"
        self._count_init = count_init
        self._grouped = mode == "count"
        #: count mode may group causal blocks by the shape of their inner loop (:mod:`.affine`)
        self._affine = self._grouped and affine
        self._store = HbmStore(problem, self.tensors)  # the HBM arrays (numeric mode)
        self.watches: dict[str, list[np.ndarray]] = {}
        self.num_splits: int | None = None
        self._recorder: RequestRecorder | None = None  # set by record_requests()
        self._cta_work: CtaWork | None = None  # the thread block the accesses belong to
        #: whether each thread block's work is kept (ledger.cta_work: what the kernel time model
        #: reads); a run that reads only the totals leaves it
        self._keep_cta_work = cta_work
        #: id(CtaWork) -> (the iteration it was made in, the groups of the loops around it)
        self._cta_made: dict[int, tuple] = {}
        if mode == "numeric":
            self._store.bind_inputs(inputs or {})

    @property
    def hbm(self) -> dict[str, np.ndarray]:
        """The HBM arrays by tensor name: inputs and what was written (numeric mode)."""
        return self._store.arrays

    @property
    def input_names(self) -> set[str]:
        """Which of :attr:`hbm` were inputs."""
        return self._store.input_names

    @property
    def requests(self) -> list | None:
        """With record_requests(), every access in order (see
        :class:`~iosim.engine.requests.Request`); else None."""
        return None if self._recorder is None else self._recorder.requests

    # -- scopes (the loops, q_blocks ... weight, are inherited from BlockLoops) ----------
    def record_requests(self) -> None:
        """Keep every HBM access, in program order, for the cache model (a count run keeps
        them grouped: see :mod:`iosim.engine.requests`). Call it before the schedule runs."""
        self._recorder = RequestRecorder(self.problem)
        self._keep_cta_work = True    # each access names its thread block's record

    def thread_block(self, key) -> ThreadBlock:
        """The accesses inside belong to one thread block (CTA) of the current kernel, e.g.
        FlashAttention-2's query block i. Thread blocks run concurrently and share the L2.
        A context manager: ``with ctx.thread_block(("q", i.index)): ...``."""
        return ThreadBlock(self, key)

    def _new_cta_work(self, key):
        """The record of a thread block opened now: an affine group's at the group's own
        iteration (its members' work differs), a plain one elsewhere."""
        scope = self.current_scope
        if scope.per_member is None:
            return CtaWork(key, self.weight) if self._keep_cta_work else None
        if scope.block.affine is None:
            raise AffineUnsupported("a thread block inside an inner loop of an affine group")
        return AffineCtaWork(key, self.weight, scope.unit, scope.block) if self._keep_cta_work else None

    @contextmanager
    def kernel(self, name: str):
        """Attribute the traffic inside the ``with`` block to kernel launch ``name``
        (e.g. FlashAttention-2's backward: "dot_do_o", "dq_dk_dv", "convert_dq"), and the
        on-chip peaks reached inside it to its own (``LevelOccupancy.by_kernel``) too."""
        previous, self.ledger.kernel = self.ledger.kernel, name
        saved = self.residency.open_kernel()
        try:
            yield
        finally:
            self.ledger.kernel = previous
            self.residency.close_kernel(name, saved)

    # -- HBM <-> chip -----------------------------------------------------------------
    def load(self, tensor: str, block: Block | tuple[Block, Block], split: Split | None = None,
             name: str | None = None, whole_rows: bool = False, box_cols: int = 0, rounded_cols: bool = True) -> Tile:
        """Load a tile of ``tensor`` from HBM into on-chip memory (counted, resident).

        The tile is resident under ``name``, by default the tensor's name and the block's
        letters (``Q_i``, ``K_j``, ``S_ij``); like :meth:`keep`, loading under a name that
        is resident replaces the earlier tile, so two tiles held at once (the same block
        twice, two splits, the next block while this one is used) need two names.
        A query head reads K/V-head tensors (K, V) from its group's copy (GQA).
        ``whole_rows``, ``box_cols``: the load moves B rows, and its columns rounded up to
        a multiple of ``box_cols`` (a TMA box); ``rounded_cols=False``: a buffer flash-attn
        pads to a rounded head size moves the head dim's columns
        (:func:`~iosim.engine.access.tile_extent`).
        """
        spec = self.tensors[tensor]
        rows_block, cols_block = split_blocks(spec, block)
        if rows_block is not self.current_scope.block or cols_block is not None:   # else: this iteration's block
            self._check_blocks(("load", tensor), rows_block, cols_block)
        shape, traffic, moved = tile_extent(spec, rows_block, cols_block, self.problem, self._padded, whole_rows,
                                            box_cols, rounded_cols)
        level, dtype = self._account(spec, "read", traffic, False, (rows_block, cols_block, split, moved))
        name = name or f"{tensor}_{resident_suffix(rows_block, cols_block)}"
        tile = Tile(shape, None, self, None, None)
        tile.life = self.residency.keep(name, level, tile.size, dtype, "loaded", ("load", tensor))
        tile.home = (level, WIDTH_BYTES[dtype])
        if self.mode == "numeric":
            tile.data = self._store.read(spec, rows_block, cols_block, split)
        return tile

    def store(self, tensor: str, block: Block | tuple[Block, Block], tile: Tile, sum_over_group: bool = False,
              split: Split | None = None, whole_rows: bool = False, reduce: bool = False,
              rounded_cols: bool = True) -> None:
        """Write a tile of ``tensor`` from chip to HBM (counted).

        ``sum_over_group=True`` writes a K/V-head tensor as the sum of its query heads'
        tiles (the GQA gradient reduction): counted once per K/V head. ``reduce=True`` adds
        the tile to what HBM holds, in the memory system (a TMA reduction such as
        ``cp.reduce.async.bulk .add``): a write, with no read by the thread block.
        ``whole_rows``, ``rounded_cols``: as :meth:`load`.
        """
        spec = self.tensors[tensor]
        use = ("store", tensor)
        self._check_writable(spec, use)
        rows_block, cols_block = split_blocks(spec, block)
        self._check_blocks(use, rows_block, cols_block)
        tile.check(use)
        shape, traffic, moved = tile_extent(spec, rows_block, cols_block, self.problem, self._padded, whole_rows,
                                            rounded_cols=rounded_cols)
        if tile.shape != shape:
            raise ScheduleError(f"store of {tensor} tile: shape {tile.shape} does not match the block's {shape}")
        check_group_write(spec, self.problem, sum_over_group)
        self._account(spec, "write", traffic, per_kv_head=sum_over_group, where=(rows_block, cols_block, split, moved),
                      reduce=reduce)
        if self.mode == "numeric":
            self._store.write(spec, rows_block, cols_block, tile.data, sum_over_group, split, self.num_splits,
                              add=reduce)

    def read(self, tensor: str, resident_as: str | None = None) -> Tile:
        """Read a whole tensor, each element once: the paper's idealised kernel (C8).

        The idealised kernel has no residency, so it is read outside every loop and its
        tile is a temporary there; with ``resident_as`` the tensor is kept on chip under that
        name and charged like a loaded tile (the course grader's ctx.read), anywhere.
        """
        spec = self.tensors[tensor]
        if resident_as is None and self.residency.current.block is not None:
            raise ScheduleError(
                f"ctx.read({tensor!r}) inside a loop (iteration {self.residency.current.label}): a whole-tensor "
                "read without resident_as is the idealised kernel of standard attention, which has no "
                "residency, and is only made outside every loop; pass resident_as=NAME to hold the tensor "
                "on chip, charged, or load it block by block (ctx.load)")
        level, dtype = self._account(spec, "read", spec.elements(self.problem), where=None)
        data = self._store.read(spec, None, None) if self.mode == "numeric" else None
        shape = full_shape(spec, self.problem)
        if resident_as is None:
            tile = Tile(shape, data, self, life=self.residency.current)
            self.note_temporary(tile)
            return tile
        life = self.residency.keep(resident_as, level, shape_size(shape), dtype, how="read", by=("read", tensor))
        return Tile(shape, data, self, home=(level, width(dtype)), life=life)

    def write(self, tensor: str, tile: Tile, sum_over_group: bool = False) -> None:
        """Write a whole tensor, each element once (idealised kernel, C8); see :meth:`store`."""
        spec = self.tensors[tensor]
        use = ("write", tensor)
        self._check_writable(spec, use)
        tile.check(use)
        check_group_write(spec, self.problem, sum_over_group)
        self._account(spec, "write", spec.elements(self.problem), per_kv_head=sum_over_group)
        if self.mode == "numeric":
            self._store.write(spec, None, None, tile.data, sum_over_group, num_splits=self.num_splits)

    def _account(self, spec: TensorSpec, direction: str, elements: int, per_kv_head: bool = False,
                 where: tuple | None = None, reduce: bool = False):
        """Count one HBM access of ``elements`` and the links it crosses; returns its on-chip place.
        A ``reduce`` write is recorded for the cache model as a reduction (its old value is
        read by the memory system, not by the thread block)."""
        ledger, weight = self.ledger, self.current_scope.weight
        ledger.traffic_by_kernel[(ledger.kernel, spec.name, direction, per_kv_head)] += elements * weight
        if self._recorder is not None:
            work = self._cta_work
            cta, cta_scope = (work.key, self._cta_made[id(work)][0]) if work is not None else (None, None)
            self._recorder.record(spec, "reduce" if reduce else direction, per_kv_head, where, self.ledger.kernel, cta,
                                  scope=self.current_scope, cta_scope=cta_scope, cta_work=work)
        tensor_dtype = spec.dtype or self.problem.dtype     # spec.dtype_for(self.problem)
        level, dtype = self.residency.placement[spec.role]   # self.residency.place(spec.role, tensor_dtype)
        dtype = dtype or tensor_dtype
        nbytes = elements * width(tensor_dtype) * weight
        links = ledger.link_bytes_per_kv_head if per_kv_head else ledger.link_bytes
        keys = self._links.get(level)
        for key in self._link_keys(level) if keys is None else keys:
            links[key] += nbytes
        return level, dtype

    def _link_keys(self, level: str) -> list[tuple[str, str]]:
        """The links between HBM and on-chip ``level``, as the ledger keys them (sorted pairs)."""
        if level not in self._links:
            path = self._path_links(self.level_names["dram"], self.level_names[level])
            self._links[level] = [tuple(sorted((link.a, link.b))) for link in path]
        return self._links[level]

    def init(self, tensor: str, value: float, force_count: bool = False) -> None:
        """"Initialize ``tensor`` = value in HBM": counted only with ``count_init`` (C5),
        or when ``force_count`` says the initial value is part of the result. The inputs
        (Q, K, V, dO and whatever the run was given in ``inputs``) cannot be initialised."""
        spec = self.tensors[tensor]
        self._check_writable(spec, ("init", tensor))
        if self._count_init or force_count:
            axis = self.mask_info.q if spec.rows == "q" else self.mask_info.kv
            rows = axis.num_blocks * axis.block if self._padded else axis.length
            self.ledger.add_traffic(tensor, "write", rows * spec.num_cols(self.problem) * self.weight)
            self.ledger.init_counted.add(tensor)
        if self.mode == "numeric":
            self._store.array(spec, create=True, num_splits=self.num_splits)[...] = value

    # -- on-chip state ------------------------------------------------------------------
    def keep(self, name: str, tile: Tile, role: str) -> Tile:
        """Declare that ``tile`` stays on chip under ``name`` until this iteration ends.

        ``role`` (``scores``, ``output``, ``stats`` or ``input``) decides the level and
        width it occupies under the run's residency placement. If ``name`` is already
        resident, here or in an enclosing iteration, ``tile`` takes its place (and its
        iteration: the accumulators O_i, ℓ_i, m_i are filled before the inner loop and kept
        in it) and the earlier tile is released: using it again is an error. Returns
        ``tile``, now bound to its allocation.
        """
        return self._keep(name, tile, role, "kept", ("keep", name))

    def _keep(self, name: str, tile: Tile, role: str, how: str, by: tuple) -> Tile:
        life = tile.life
        if life is not None and (not life.alive or (life.confines and life is not tile.ctx.current_scope)):
            tile.check(by)   # raises: the tile is no longer on chip here
        residency = self.residency
        if tile.home is None and life is self.current_scope and life.temps:   # a charged temporary of this iteration
            residency.drop_temporary(life, id(tile))
        level, dtype = residency.placement[role]     # residency.place(role, self.problem.dtype)
        dtype = dtype or self.problem.dtype
        tile.life = residency.keep(name, level, tile.size, dtype, how, by)
        tile.home = (level, WIDTH_BYTES[dtype])
        return tile

    def fill(self, name: str, block: Block, value: float, role: str, cols: int | None = None) -> Tile:
        """A new on-chip tile of ``block.rows`` rows (× ``cols``) set to ``value``, kept
        under ``name`` as :meth:`keep` keeps it."""
        self._check_blocks(("fill", name), block)
        shape = (block.rows,) if cols is None else (block.rows, cols)
        data = None
        if self.mode == "numeric":
            data = np.full((self.problem.heads_total,) + shape, value, dtype=np.float64)
        return self._keep(name, Tile(shape, data, self, life=self.current_scope), role, "filled", ("fill", name))

    def mask(self, scores: Tile, i: Block | None = None, j: Block | None = None) -> Tile:
        """Apply the causal and block-sparse masks to a score tile (whole S when no blocks are given).

        Masking is in place: the result is the same tile, with the same lifetime."""
        scores.check("ctx.mask")
        self._check_blocks("ctx.mask", i, j)
        if self.mode != "numeric" or not (self.problem.causal or self.mask_info.sparse is not None):
            return scores
        q0 = 0 if i is None else i.start
        k0 = 0 if j is None else j.start
        rows = np.arange(q0, q0 + scores.shape[0])
        cols = np.arange(k0, k0 + scores.shape[1])
        visible = self.mask_info.entry_visible(rows, cols)
        scores.data = np.where(visible, scores.data, -np.inf)
        return scores

    def watch(self, name: str, tile: Tile) -> None:
        """Record a copy of an on-chip value (numeric mode only), e.g. the running ℓ_i."""
        tile.check(("watch", name))
        if self.mode == "numeric":
            self.watches.setdefault(name, []).append(np.array(tile.data, copy=True))

    def declare(self, name: str, rows: str, cols: str | None, role: str, dtype: str | None = None) -> None:
        """Add an HBM tensor that is not built in (see :class:`TensorSpec`)."""
        self.tensors.declare(TensorSpec(name, rows, cols, role, dtype))

    # -- checks -------------------------------------------------------------------------
    def _check_blocks(self, use, *blocks) -> None:
        """A block is a loop variable: usable only inside the iteration that yields it (in
        count mode it may stand for a group of iterations, which nothing outside that
        iteration could weigh exactly)."""
        current = self.current_scope.block
        for block in blocks:
            if block is None or block is current:
                continue
            if not any(s.block is block for s in self.residency.scopes):
                label = getattr(block, "label", repr(block))
                raise ScheduleError(
                    f"{describe_use(use)}: block {label} is not the block of a loop iteration running now; a "
                    "block from ctx.q_blocks(), ctx.kv_blocks() or ctx.splits() is usable only inside its own "
                    "iteration")

    def _check_writable(self, spec: TensorSpec, use) -> None:
        """The attention's inputs, and every tensor the run was given, are read-only in HBM."""
        if spec.name in INPUT_TENSORS or spec.name in self._store.input_names:
            given = " (given in inputs)" if spec.name in self._store.input_names else ""
            raise ScheduleError(f"{describe_use(use)}: {spec.name} is an input of this run{given}; a schedule "
                                "reads its inputs and never writes or initialises them")
