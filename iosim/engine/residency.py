"""What is resident on chip, where, and whether it fits.

Two placements are built in (``Residency``):

* ``kernel`` (default) — as the real FlashAttention kernels do: tiles loaded from HBM
  (Q_i, K_j, V_j) sit in shared memory (the profile's *scratchpad* level) in the input
  dtype; the score tile S_ij / P_ij, the output accumulator O_i and the row statistics
  m_i, ℓ_i live in *registers*, in fp32. Shared memory is a hard limit: a schedule
  whose tiles exceed the per-block shared memory fails with :class:`CapacityError`.
  Registers are tracked and reported (``fits: false`` means the kernel would spill), and
  are a hard limit too with ``Options(enforce_registers=True)`` (the grader's runs), where
  every live temporary is charged to them as well.
  Under this placement the paper's default blocks B_c = ⌈M/4d⌉, B_r = min(B_c, d) always
  fit: Q_i + K_j + V_j ≤ M/4 + M/2 elements.
* ``sram`` — the paper's abstract machine: every tile, the scores and the accumulator
  included, counts against one SRAM of M elements (statistics in fp32). This shows why
  the kernels keep S and O in registers: with the paper's default blocks the tiles
  (≈ 5M/4 elements) overflow.

Residency is by identity. Every ``load``, ``keep``, ``fill`` (and ``read(...,
resident_as=...)``) makes an :class:`Allocation`, which counts against its level until it
is released, and the :class:`~iosim.engine.tiles.Tile` it returns is bound to it:

* an allocation is released when its scope ends: the loop iteration that made it
  resident, or, when the name was already resident in an enclosing iteration (the O_i,
  ℓ_i, m_i, dK_j, dV_j accumulators), that enclosing iteration;
* a name holds one tile at a time: making a tile resident under a name that is already
  resident (in this iteration or an enclosing one) puts it in that allocation's place,
  in that allocation's scope, and releases the earlier tile (P_ij overwrites S_ij, the
  updated O_i overwrites the old one, a second load of dQ_i overwrites the first);
* a tile whose allocation was released is no longer on chip: any further use raises
  :class:`~iosim.errors.ScheduleError` saying where it was made and released;
* a temporary (the result of tile arithmetic, never kept) is charged nothing, but it is
  a register of the iteration that computed it: it may be used only while that iteration
  is the innermost one running, not after it ends and not inside a loop nested in it.

Each :class:`Scope` is one loop iteration (the root scope is the run outside every loop).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from ..dtypes import ACCUM_DTYPE, WIDTH_BYTES, width
from ..errors import CapacityError, ScheduleError, require_choice
from .affine import AffineUnsupported

#: role -> (level role, dtype or None for the tensor's own dtype)
PLACEMENTS: dict[str, dict[str, tuple[str, str | None]]] = {
    "kernel": {
        "input": ("scratchpad", None),
        "output": ("registers", ACCUM_DTYPE),
        "scores": ("registers", ACCUM_DTYPE),
        "stats": ("registers", ACCUM_DTYPE),
    },
    "sram": {
        "input": ("scratchpad", None),
        "output": ("scratchpad", None),
        "scores": ("scratchpad", None),
        "stats": ("scratchpad", ACCUM_DTYPE),
    },
}


def describe_use(use) -> str:
    """A use of a tile as a message names it: ``("store", "O")`` → ``ctx.store('O', …)``."""
    if isinstance(use, tuple):
        op, arg = use
        return f"ctx.{op}({arg!r}, …)"
    return use


class Scope:
    """One loop iteration (or, at the root, the run outside every loop): what it made
    resident, and whether it is still running. Temporaries computed in it live with it."""

    __slots__ = ("parent", "block", "group", "weight", "per_member", "unit", "entries", "temps", "alive")
    #: a scope is the lifetime of temporaries, which are confined to it (see Tile)
    confines = True

    def __init__(self, parent: "Scope | None" = None, block=None, weight: int = 1, group=None,
                 per_member=None, unit: int = 0):
        self.parent, self.block, self.weight = parent, block, weight
        #: inside an affine group (count mode, :mod:`.affine`): the iterations this one stands
        #: for in each member of the group, ``unit`` copies each (weight = unit · Σ); else None
        self.per_member, self.unit = per_member, unit
        #: the group of identical iterations ``block`` belongs to (count mode), else ``block``
        self.group = block if group is None else group
        self.entries: dict[str, Allocation] = {}
        #: the live temporaries computed here, id(tile) -> bytes (charged only where temporaries are)
        self.temps: dict[int, int] = {}
        self.alive = True

    @property
    def label(self) -> str:
        """The iteration as the loop variables name it, e.g. ``i=0, j=3``."""
        parts, scope = [], self
        while scope is not None and scope.block is not None:
            parts.append(scope.block.label)
            scope = scope.parent
        return ", ".join(reversed(parts))

    @property
    def where(self) -> str:
        label = self.label
        return f"at iteration {label}" if label else "outside every loop"

    def misuse(self, tile, use: str, current: "Scope") -> str:
        """The message for a temporary of this scope used where it no longer exists."""
        what = f"{describe_use(use)}: a temporary tile {tile.shape} (computed {self.where}, never kept)"
        if not self.alive:
            return (f"{what} was released when its loop iteration ended; it is no longer on chip. "
                    "Temporaries are registers of the iteration that computed them: to carry a value "
                    "further, keep it (ctx.keep) under a name made resident in an enclosing loop, "
                    "where it is charged.")
        return (f"{what} is used inside a nested loop iteration ({current.label}). Temporaries are "
                "registers of the iteration that computed them: a value carried into an inner loop "
                "must be on chip under a name (ctx.keep or ctx.fill before the loop), where it is charged.")


class Allocation:
    """One tile resident on chip: its name, level and bytes, the scope it lives in, how and
    where it was made, and, once released, how (its scope ended, or a new tile took its
    name's place)."""

    __slots__ = ("name", "level", "nbytes", "elements", "dtype", "scope", "how", "made_in", "alive",
                 "overwritten_by", "overwritten_in")
    confines = False

    def __init__(self, name: str, level: str, nbytes: int, elements: int, dtype: str, scope: Scope, how: str,
                 made_in: Scope):
        self.name, self.level, self.nbytes, self.elements, self.dtype = name, level, nbytes, elements, dtype
        self.scope, self.how, self.made_in = scope, how, made_in
        self.alive = True
        self.overwritten_by: tuple | None = None
        self.overwritten_in: Scope | None = None

    @property
    def description(self) -> str:
        """``elements × dtype``, as a listing of resident tiles shows it."""
        return f"{self.elements} × {self.dtype}"

    def misuse(self, tile, use: str, current: Scope) -> str:
        """The message for a tile of this (released) allocation used again."""
        what = f"{describe_use(use)}: tile {self.name} ({self.how} {self.made_in.where})"
        if self.overwritten_by is None:
            ended = "its loop iteration" if self.scope is self.made_in else f"the loop iteration {self.scope.label}"
            return (f"{what} was released when {ended} ended; it is no longer on chip. To use a tile "
                    "after its iteration, keep it under a name made resident in an enclosing loop "
                    "(ctx.fill there, ctx.keep here), where it is charged.")
        by = f"{describe_use(self.overwritten_by)} {self.overwritten_in.where}"
        return (f"{what} was released when {by} put a new tile in its place; it is no longer on chip. "
                "A name holds one tile at a time: to hold both, give them different names (ctx.keep), "
                "and both are charged.")


@dataclass
class LevelUse:
    """Occupancy of one on-chip level: current bytes, peak bytes, capacity."""

    level: str
    capacity_bytes: int | None
    enforced: bool
    current: int = 0
    #: bytes of the live temporaries it holds (only where temporaries are charged)
    transient: int = 0
    peak: int = 0
    #: the allocations resident at the peak, in listing order (an allocation never changes
    #: its name, bytes or description, so they are listed when read: :attr:`peak_tiles`)
    peak_entries: list = field(default_factory=list)
    #: kernel launch -> its own peak bytes, for the launches a schedule names (``ctx.kernel``)
    kernel_peaks: dict = field(default_factory=dict)

    @property
    def peak_tiles(self) -> list[tuple[str, int, str]]:
        """(name, bytes, ``elements × dtype``) of each tile resident at the peak."""
        return [(e.name, e.nbytes, e.description) for e in self.peak_entries]


class ResidencyTracker:
    """Scoped bookkeeping of resident tiles, with a capacity check on every change."""

    def __init__(self, placement: str, level_names: dict[str, str], capacities: dict[str, int | None],
                 enforced: set[str], charge_temporaries: bool = False):
        require_choice("residency", placement, PLACEMENTS, ScheduleError)
        self.placement = PLACEMENTS[placement]
        #: the level role temporaries are charged to while they live (the scores' level: the
        #: registers under the kernel placement), or None: charged nothing
        self.temporaries = self.placement["scores"][0] if charge_temporaries else None
        self.level_names = level_names  # role -> level name in the profile
        self.use = {
            role: LevelUse(level_names[role], capacities.get(role), role in enforced)
            for role in level_names
        }
        self._scopes: list[Scope] = [Scope()]
        #: name -> its allocation, for the names resident now (each in one scope's entries)
        self._live: dict[str, Allocation] = {}
        #: the innermost iteration running (the root scope outside every loop)
        self.current: Scope = self._scopes[0]

    @property
    def scopes(self) -> list[Scope]:
        """The iterations running, outermost (the root) first (read it, do not change it)."""
        return self._scopes

    def place(self, role: str, tensor_dtype: str) -> tuple[str, str]:
        """The (level role, dtype) a tile of this role occupies."""
        level_role, dtype = self.placement[role]
        return level_role, dtype or tensor_dtype

    def push(self, block, weight: int, per_member=None, unit: int = 0, group=None) -> Scope:
        """Enter a loop iteration: ``block`` is its loop variable, ``weight`` how many real
        iterations it stands for (its trip counts multiplied; ``per_member`` and ``unit``
        inside an affine group), ``group`` the group of iterations ``block`` is a part of."""
        self.current = Scope(self.current, block, weight, group, per_member, unit)
        self._scopes.append(self.current)
        return self.current

    def pop(self, scope: Scope) -> None:
        """Leave iteration ``scope``, and any left open inside it (a loop abandoned
        half-way): what they hold is released, their temporaries end."""
        while scope.alive:
            inner = self._scopes.pop()
            inner.alive = False
            live = self._live
            for entry in inner.entries.values():
                entry.alive = False
                del live[entry.name]
                self.use[entry.level].current -= entry.nbytes
            if inner.temps:
                self.use[self.temporaries].transient -= sum(inner.temps.values())
                inner.temps.clear()
        self.current = self._scopes[-1]

    def keep(self, name: str, level_role: str, elements: int, dtype: str, how: str = "kept",
             by: tuple | str | None = None) -> Allocation:
        """Make a tile resident under ``name`` and return its allocation.

        If ``name`` is resident (here or in an enclosing iteration) the new allocation takes
        its place and its scope, and the earlier one is released; ``by`` says what
        overwrote it, e.g. ``("keep", "S_ij")`` for ``ctx.keep('S_ij', …)``. Else it lives
        in the current iteration.
        """
        try:
            nbytes = elements * WIDTH_BYTES[dtype]
        except (KeyError, TypeError):
            nbytes = elements * width(dtype)    # raises: not a dtype
        by = by or ("keep", name)
        current = self.current
        old = self._live.get(name)     # a name is resident in one iteration at most
        if old is not None:
            scope = old.scope
            if scope is not current and (old.nbytes != nbytes or old.level != level_role):
                self._check_ungrouped(scope, old, nbytes, by)
            self.use[old.level].current -= old.nbytes
            old.alive = False
            old.overwritten_by, old.overwritten_in = by, current
        else:
            scope = current
        entry = self._live[name] = Allocation(name, level_role, nbytes, elements, dtype, scope, how, current)
        scope.entries[name] = entry  # an existing name keeps its place in the listing
        use = self.use[level_role]
        use.current += nbytes
        if use.current > use.peak:
            use.peak = use.current
            use.peak_entries = self._resident(level_role)
            self._check(level_role, "on-chip tiles do not fit in", "Choose smaller blocks (block_q, block_kv).")
        elif use.transient:   # below the peak, only live temporaries can overflow it
            self._check(level_role, "on-chip tiles do not fit in", "Choose smaller blocks (block_q, block_kv).")
        return entry

    def open_kernel(self) -> dict:
        """Start a kernel launch's own peaks (a schedule's ``ctx.kernel``): each level's peak
        so far is put aside, to be restored by :meth:`close_kernel` where the launch's is lower."""
        saved = {}
        for role, use in self.use.items():
            saved[role] = use.peak, use.peak_entries
            use.peak, use.peak_entries = use.current, self._resident(role)
        return saved

    def close_kernel(self, kernel: str, saved: dict) -> None:
        """End kernel launch ``kernel``'s peaks (:attr:`LevelUse.kernel_peaks`); the run's peak
        is the larger of its own so far and the launch's (the first reached, where equal)."""
        for role, use in self.use.items():
            use.kernel_peaks[kernel] = max(use.kernel_peaks.get(kernel, 0), use.peak)
            peak, entries = saved[role]
            if peak >= use.peak:
                use.peak, use.peak_entries = peak, entries

    def _resident(self, level_role: str) -> list:
        """The allocations resident in one level now, in listing order."""
        return [e for scope in self._scopes for e in scope.entries.values() if e.level == level_role]

    def _check(self, level_role: str, what: str, advice: str) -> None:
        use = self.use[level_role]
        held = use.current + use.transient
        if use.enforced and use.capacity_bytes is not None and held > use.capacity_bytes:
            listing = self._listing(level_role)
            tiles = "; ".join(f"{n} {b:,} B ({d})" for n, b, d in listing[:8]) or "nothing"
            tiles += f"; and {len(listing) - 8:,} more" if len(listing) > 8 else ""
            temps = f" and {use.transient:,} B of live temporaries" if use.transient else ""
            raise CapacityError(
                f"{what} {use.level} ({level_role}): {held:,} bytes resident > capacity {use.capacity_bytes:,} bytes per "
                f"thread block. Resident: {tiles}{temps}.", advice=advice)

    def temporary(self, tile, elements: int) -> None:
        """``tile``, a temporary of ``elements`` (the result of arithmetic, or a whole-tensor
        read), was computed in the current iteration. Where temporaries are charged (the
        grader's runs: ``Options(enforce_registers=True)``) it occupies the scores' level in
        fp32 while it lives: until it is kept (then its allocation is charged), dropped by
        the schedule, or its iteration ends; a whole S computed from whole tensors, or
        copies of tiles held as temporaries, count like any tile."""
        if self.temporaries is None:
            return
        nbytes = elements * width(ACCUM_DTYPE)
        scope, key = self.current, id(tile)
        scope.temps[key] = nbytes
        self.use[self.temporaries].transient += nbytes
        weakref.finalize(tile, self.drop_temporary, scope, key)
        self._check(self.temporaries, f"a temporary of {elements:,} elements ({nbytes:,} B in fp32) does not fit in",
                    "Compute on blocks (ctx.load, block by block), not on whole tensors, and keep what you hold.")

    def drop_temporary(self, scope: "Scope", key: int) -> None:
        """A temporary stopped being one (kept, or no longer referenced)."""
        nbytes = scope.temps.pop(key, 0)
        if nbytes:
            self.use[self.temporaries].transient -= nbytes

    def _check_ungrouped(self, owner: Scope, old: Allocation, nbytes: int, by) -> None:
        """Changing the size of a tile an enclosing iteration holds is exact only when no
        iteration in between stands for a group (count mode): each member of the group
        might change a different tile, and one run stands for all of them."""
        scope = self.current
        while scope is not owner:
            if scope.per_member is not None:
                raise AffineUnsupported("a tile of an enclosing iteration resized inside an affine group")
            if scope.block is not None and scope.block.count > 1:
                raise ScheduleError(
                    f"{describe_use(by)} at iteration {self.current.label} changes {old.name}, which the enclosing "
                    f"iteration holds ({owner.where}), from {old.nbytes:,} to {nbytes:,} bytes; in count mode "
                    f"iteration {scope.block.label} stands for a group of {scope.block.count} iterations, each "
                    "of which might change a different tile, so the charge would not be exact. Run this "
                    "schedule with mode='trace', or keep a tile the size of the one it replaces.")
            scope = scope.parent

    def _listing(self, level_role: str) -> list[tuple[str, int, str]]:
        return [
            (e.name, e.nbytes, e.description)
            for scope in self._scopes
            for e in scope.entries.values()
            if e.level == level_role
        ]
