"""On-chip tiles: values a schedule computes with, in either counting or numeric mode.

A :class:`Tile` carries the per-head shape of a value (``(rows, cols)`` or ``(rows,)``)
and, in numeric mode, a NumPy array with one extra leading axis for the B·H heads. The
arithmetic a schedule writes (``Q_i @ K_j.T``, ``(S - m.col()).exp()``, ``rowmax``...)
works the same in both modes; each operation also reports its floating-point work to the
run's ledger, so FLOPs come from the schedule itself rather than from a formula.

Every tile has a lifetime (``life``): the on-chip allocation it is bound to (a loaded,
kept or filled tile, and its views ``.T``, ``.col()``, ``ctx.mask``), or, for a temporary
(the result of arithmetic, never kept), the loop iteration that computed it. Using a tile
whose lifetime is over, or a temporary inside a loop nested in its iteration, raises
:class:`~iosim.errors.ScheduleError` (see :mod:`.residency`).
"""

from __future__ import annotations

import numbers
from typing import Protocol

import numpy as np

from ..errors import ScheduleError


class OpCounter(Protocol):
    """What a tile reports its arithmetic to (the run's :class:`~iosim.engine.context.Context`)."""

    def count_ops(self, kind: str, n: int) -> None: ...

    def count_matmul(self, a: "Tile", b: "Tile", flops: int) -> None: ...

    def note_temporary(self, tile: "Tile") -> None: ...

    def computed(self, shape: tuple[int, ...], kind: str, n: int) -> "Tile": ...

    @property
    def current_scope(self): ...


def shape_size(shape: tuple[int, ...]) -> int:
    """Number of elements of a per-head shape."""
    n = 1
    for s in shape:
        n *= s
    return n


def _broadcast(sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[int, ...] | None:
    """NumPy's broadcast of two shapes, or None where they do not combine."""
    if len(sa) == 2 and len(sb) == 2:   # a matrix and a column (v.col() * X): the common case
        (a0, a1), (b0, b1) = sa, sb
        if (a0 == b0 or a0 == 1 or b0 == 1) and (a1 == b1 or a1 == 1 or b1 == 1):
            return (b0 if a0 == 1 else a0, b1 if a1 == 1 else a1)
        return None
    n = max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    out = []
    for x, y in zip(sa, sb):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def _data_of(x: "Tile | float"):
    return x.data if isinstance(x, Tile) else x


class Tile:
    """A value held on chip (per head), with its data in numeric mode.

    ``home`` names the memory level the tile occupies when it was loaded or kept there
    (``None`` for temporaries); the engine uses it to count reads of scratchpad operands
    by the matrix products. ``life`` is its lifetime: an
    :class:`~iosim.engine.residency.Allocation` or, for a temporary, the
    :class:`~iosim.engine.residency.Scope` (loop iteration) that computed it.

    A tile's operations run a hundred or more times a count: each asks whether its tiles
    are usable in one test (:meth:`check` says why not) and has the context make its
    result (``ctx.computed``: the temporary, with its operations counted).
    """

    __slots__ = ("shape", "size", "data", "ctx", "home", "life", "__weakref__")

    def __init__(self, shape: tuple[int, ...], data, ctx: OpCounter, home: str | None = None, life=None):
        shape = shape if type(shape) is tuple else tuple(shape)
        self.shape = shape
        n = len(shape)
        #: elements per head (the shape never changes)
        self.size = shape[0] * shape[1] if n == 2 else shape[0] if n == 1 else shape_size(shape)
        self.data = data
        self.ctx = ctx
        self.home = home
        self.life = life

    # -- construction helpers -------------------------------------------------------
    def _new(self, shape, data) -> "Tile":
        """A temporary: the result of arithmetic, living in the iteration running now."""
        ctx = self.ctx
        tile = Tile(shape, data, ctx, None, ctx.current_scope)
        ctx.note_temporary(tile)
        return tile

    def check(self, use: str) -> None:
        """Raise :class:`ScheduleError` unless the tile is still on chip where it is used:
        its allocation not released, or, for a temporary, its iteration the innermost one
        running."""
        life = self.life
        if life is not None and (not life.alive or (life.confines and life is not self.ctx.current_scope)):
            raise ScheduleError(life.misuse(self, use, self.ctx.current_scope))

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Tile{self.shape}"

    # -- element-wise arithmetic (1 op per output element) ---------------------------
    def _elementwise(self, other, op, reverse=False) -> "Tile":
        ctx = self.ctx
        life = self.life
        if life is not None and (not life.alive or (life.confines and life is not ctx.current_scope)):
            self.check(_OP_NAMES[op])
        if isinstance(other, Tile):
            life = other.life
            if life is not None and (not life.alive or (life.confines and life is not ctx.current_scope)):
                other.check(_OP_NAMES[op])
            sa, sb = (other.shape, self.shape) if reverse else (self.shape, other.shape)
            shape = sa if sa == sb or not sb else sb if not sa else _broadcast(sa, sb)
            if shape is None:
                raise ScheduleError(f"tile {_OP_NAMES[op]}: shapes {sa} and {sb} do not combine (a per-row vector "
                                    "meets a matrix as v.col())")
        elif type(other) is float or type(other) is int or isinstance(other, numbers.Real):
            shape = self.shape   # a number broadcasts to the tile's shape, either side
        else:
            raise ScheduleError(f"tile {_OP_NAMES[op]} {type(other).__name__}: an operand is a tile or a number")
        out = ctx.computed(shape, "elementwise", None)
        if self.data is not None:
            # Data carries a leading heads axis; per-row vectors meet matrices through
            # col() (shape (BH, r, 1)), so the per-head broadcast above also holds here.
            a, b = (other, self) if reverse else (self, other)
            out.data = op(_data_of(a), _data_of(b))
        return out

    def __add__(self, o): return self._elementwise(o, np.add)
    def __radd__(self, o): return self._elementwise(o, np.add, reverse=True)
    def __sub__(self, o): return self._elementwise(o, np.subtract)
    def __rsub__(self, o): return self._elementwise(o, np.subtract, reverse=True)
    def __mul__(self, o): return self._elementwise(o, np.multiply)
    def __rmul__(self, o): return self._elementwise(o, np.multiply, reverse=True)
    def __truediv__(self, o): return self._elementwise(o, np.divide)
    def __rtruediv__(self, o): return self._elementwise(o, np.divide, reverse=True)
    def __neg__(self): return self._elementwise(-1.0, np.multiply)

    def exp(self) -> "Tile":
        """Element-wise eˣ (counted as special-function work, the softmax's exponentials)."""
        return self._special(np.exp)

    def log(self) -> "Tile":
        """Element-wise natural log (special-function work)."""
        return self._special(np.log)

    def _special(self, fn) -> "Tile":
        life = self.life
        if life is not None and (not life.alive or (life.confines and life is not self.ctx.current_scope)):
            self.check(fn.__name__)
        out = self.ctx.computed(self.shape, "exp", None)
        if self.data is not None:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                out.data = fn(self.data)
        return out

    # -- reductions and layout --------------------------------------------------------
    def rowmax(self) -> "Tile":
        """rowmax(X) ∈ R^{rows}: maximum over the last axis."""
        return self._reduce(np.max)

    def rowsum(self) -> "Tile":
        """rowsum(X) ∈ R^{rows}: sum over the last axis."""
        return self._reduce(np.sum)

    def _reduce(self, fn) -> "Tile":
        life = self.life
        if life is not None and (not life.alive or (life.confines and life is not self.ctx.current_scope)):
            self.check("rowmax" if fn is np.max else "rowsum")
        out = self.ctx.computed(self.shape[:-1], "elementwise", self.size)
        if self.data is not None:
            out.data = fn(self.data, axis=-1)
        return out

    def inf_as_zero(self) -> "Tile":
        """The same values with −∞ replaced by 0.

        A row with no visible key yet has maximum −∞, and e^{S − m} would be
        e^{−∞ − (−∞)} = NaN; subtracting 0 instead gives the correct 0. The real kernels
        do the same (``Check_inf`` in flash-attn's softmax.h).
        """
        self.check("inf_as_zero")
        out = self.ctx.computed(self.shape, "elementwise", None)
        if self.data is not None:
            out.data = np.where(np.isneginf(self.data), 0.0, self.data)
        return out

    def reciprocal(self) -> "Tile":
        """1/x, taking 1 where x = 0.

        Used for diag(ℓ)^−1: a row that has seen no visible key has ℓ = 0 and an all-zero
        accumulator, and keeps output 0 instead of 0/0 — as the kernels' softmax
        normalisation does (``inv_sum = sum == 0 ? 1 : 1/sum``).
        """
        self.check("reciprocal")
        out = self.ctx.computed(self.shape, "elementwise", None)
        if self.data is not None:
            out.data = 1.0 / np.where(self.data == 0.0, 1.0, self.data)
        return out

    def col(self) -> "Tile":
        """View a row vector (one value per row) as a column, to scale matrix rows.

        ``diag(v) X`` of the paper is ``v.col() * X``.
        """
        life = self.life
        if life is not None and (not life.alive or (life.confines and life is not self.ctx.current_scope)):
            self.check("col")
        if len(self.shape) != 1:
            raise ScheduleError(f"col() applies to a per-row vector, not to a tile of shape {self.shape}")
        return Tile(self.shape + (1,), None if self.data is None else self.data[..., None], self.ctx, None, life)

    @property
    def T(self) -> "Tile":
        """Transpose of a matrix tile (free: a change of indexing, not a data move)."""
        life = self.life
        if life is not None and (not life.alive or (life.confines and life is not self.ctx.current_scope)):
            self.check(".T")
        if len(self.shape) != 2:
            raise ScheduleError(f".T applies to a matrix tile, not to a tile of shape {self.shape}")
        # A contiguous copy: NumPy multiplies stacks of transposed views without BLAS, 10-50× slower.
        data = None if self.data is None else np.ascontiguousarray(np.swapaxes(self.data, -1, -2))
        return Tile(self.shape[::-1], data, self.ctx, self.home, life)

    def __matmul__(self, other: "Tile") -> "Tile":
        """Matrix product; 2·m·k·n FLOPs, and reads of scratchpad-resident operands."""
        if not isinstance(other, Tile):
            raise ScheduleError(f"tile @ {type(other).__name__}: a matrix product is of two tiles")
        self.check("@")
        other.check("@")
        if len(self.shape) != 2 or len(other.shape) != 2 or self.shape[1] != other.shape[0]:
            raise ScheduleError(f"matmul shapes {self.shape} @ {other.shape} do not match")
        (m, k), (_, n) = self.shape, other.shape
        self.ctx.count_matmul(self, other, 2 * m * k * n)
        out = self._new((m, n), None)
        if self.data is not None:
            out.data = self.data @ other.data
        return out


_OP_NAMES = {np.add: "+", np.subtract: "-", np.multiply: "*", np.divide: "/", np.maximum: "maximum"}


def maximum(a: Tile, b: Tile) -> Tile:
    """Element-wise max(a, b), e.g. m_new = max(m_i, m̃_ij)."""
    return a._elementwise(b, np.maximum)
