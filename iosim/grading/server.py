"""The grader's side of a schedule run: the real engine, driven by the student's requests.

:meth:`ScheduleServer.schedule` is an ordinary schedule function, so ``simulate`` counts
bytes, checks capacity and computes the output exactly as for a built-in schedule. Its
body does not decide anything: it forwards each request of the student's process (see
:mod:`iosim.grading.child`) to the real ``ctx`` or tile and answers with a handle.

What the grader adds to the engine's own rules, on this side where the student cannot
reach it:

* **Lifetimes.** A tile lives until the end of the loop iteration that made it (or of the
  iteration that owns the name it was kept under), as ``docs/simulator.md`` says. Using it
  afterwards means using data that is no longer on chip; the run stops with a capacity
  failure. Without this rule a schedule could hold every S_ij of a row in Python
  variables, uncounted.
* **Whole-tensor reads** (``ctx.read``) are on chip too: the tensor is charged to its
  on-chip level like a loaded tile, so computing the whole score matrix at once overflows
  shared memory.
* **A memory cap** on the tile data the grader holds for the schedule, and on what it keeps for
  the schedule besides (loops open at once, blocks handed out, handles), so a schedule that hoards
  tiles or loops cannot exhaust the grader's memory.
* **The student's time.** The time limit counts only the time the grader waits for the
  student's process (:class:`~iosim.grading.protocol.StudentClock`), not its own work on the schedule's requests,
  so a busy grader never turns into a student's timeout.
* **Nothing on the process's word.** Each message is checked against the protocol
  (:func:`iosim.grading.protocol.run_message`); a message that is not a request or the end
  of the run, or a request for an operation that does not exist, ends the run with a
  :class:`~iosim.grading.protocol.ProtocolViolation` (a failing grade). ``{"done": true}``
  only ends the requests: the run is judged on what the engine recorded.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..engine.tiles import Tile, maximum
from ..errors import CapacityError, ScheduleError
from .protocol import BLOCK_FIELDS, ERRORS, Channel, ProtocolViolation, StudentClock, error_of, run_message

ROLES = ("input", "output", "scores", "stats")
#: the suffix of the name a whole tensor read by ctx.read is held under (reserved)
WHOLE_READ = " (whole tensor, ctx.read)"
#: the most tile data (float64, all heads) the grader holds for one run at a time
TILE_BYTES_LIMIT = 64 << 20
#: the most loops open at once (a schedule nests two or three), and handles on live tiles
LOOPS_LIMIT, HANDLES_LIMIT = 64, 200_000
#: the most blocks a run's loops hand out: this many times (T_r + 1)(T_c + 1), and 4,096 (every pair's walk, a few
#: times over)
BLOCKS_PER_PAIR = 8
_BINOPS = {
    "add": (Tile.__add__, Tile.__radd__), "sub": (Tile.__sub__, Tile.__rsub__),
    "mul": (Tile.__mul__, Tile.__rmul__), "div": (Tile.__truediv__, Tile.__rtruediv__),
    "maximum": (maximum, maximum),
}
_UNARY = {
    "exp": Tile.exp, "log": Tile.log, "rowmax": Tile.rowmax, "rowsum": Tile.rowsum,
    "inf_as_zero": Tile.inf_as_zero, "reciprocal": Tile.reciprocal, "col": Tile.col,
    "T": lambda t: t.T, "neg": Tile.__neg__,
}


class TileExpired(CapacityError):
    """A tile was used after the loop iteration that held it on chip had ended."""


class StudentFailure(Exception):
    """The schedule did not finish: an exception, a crash, a limit. ``kind`` says which."""

    def __init__(self, kind: str, message: str, where: str = ""):
        super().__init__(message)
        self.kind, self.message, self.where = kind, message, where


class _Scope:
    """One loop iteration (or the whole run): the names kept in it and the tiles it holds."""

    def __init__(self):
        self.names: set[str] = set()
        self.records: set[int] = set()  # id() of the tiles that end with this scope


class _Record:
    __slots__ = ("tile", "scope", "handles", "nbytes")

    def __init__(self, tile: Tile, scope: _Scope):
        self.tile, self.scope, self.handles = tile, scope, set()
        self.nbytes = 0 if tile.data is None else int(np.asarray(tile.data).nbytes)


class _Loop:
    __slots__ = ("id", "gen", "in_iteration")

    def __init__(self, gid: int, gen):
        self.id, self.gen, self.in_iteration = gid, gen, False


class ScheduleServer:
    """Serve one schedule run for the student's process over ``channel``."""

    def __init__(self, channel: Channel, clock: StudentClock):
        self.channel, self.clock = channel, clock

    # -- the schedule function handed to simulate -------------------------------------------
    def schedule(self, ctx, *, payload: dict) -> None:
        self._start(ctx)
        self.clock.send(self.channel, {"run": payload})
        try:
            while True:
                message = self.clock.recv(self.channel)
                ending = run_message(message)        # a ProtocolViolation for anything else
                if ending != "request":
                    break
                self._free(message.get("free"))
                self.clock.send(self.channel, self._answer(message))
        finally:
            self._finish()
        if self.stopped is not None:
            raise self.stopped
        if ending == "failed":
            error = error_of(message)
            kind = "memory" if error["type"] == "MemoryError" else "exception"
            raise StudentFailure(kind, f"{error['type']}: {error['message']}", error["where"])

    def _start(self, ctx) -> None:
        self.ctx = ctx
        self.scopes = [_Scope()]
        self.loops: list[_Loop] = []
        self.blocks: dict[int, object] = {}
        self.handles: dict[int, _Record] = {}
        self.records: dict[int, _Record] = {}  # id(tile) -> record
        self.live_bytes = 0
        self.stopped: Exception | None = None
        self._next_id = itertools.count(1)
        b, problem = ctx.blocks, ctx.problem
        self.blocks_limit = BLOCKS_PER_PAIR * (b.num_q_blocks(problem) + 1) * (b.num_kv_blocks(problem) + 1) + 4096

    @staticmethod
    def _cap(count: int, most: int, what: str, why: str) -> None:
        if count > most:
            raise StudentFailure("memory", f"the schedule holds more than {most:,} {what} at once in the grader "
                                           f"({why})")

    def _finish(self) -> None:
        while self.loops:
            self._close(self.loops[-1])
        self.handles.clear()
        self.records.clear()
        self.blocks.clear()

    # -- one request --------------------------------------------------------------------
    def _answer(self, message: dict) -> dict:
        if self.stopped is not None:
            return {"abort": str(self.stopped)}
        op, args = message["op"], message["a"]
        handler = getattr(self, f"_op_{op}", None)
        if handler is None:  # the stand-in ctx sends only the requests below: this one was forged
            raise ProtocolViolation(f"a request for an operation that does not exist: {op[:40]!r}")
        try:
            with np.errstate(all="ignore"):
                return {"r": handler(*args)}
        except CapacityError as exc:
            self.stopped = exc
            return {"abort": str(exc)}
        except StudentFailure as exc:
            self.stopped = exc
            return {"abort": exc.message}
        except TypeError as exc:
            return {"e": ["TypeError", f"{op}: {exc}"[:1000]]}
        except Exception as exc:  # the engine's answer to a bad request goes back to the schedule
            kind = type(exc).__name__
            return {"e": [kind if kind in ERRORS else "ScheduleError", str(exc)[:1000]]}

    # -- argument decoding ------------------------------------------------------------------
    def _tile(self, ref) -> Tile:
        if not (isinstance(ref, dict) and isinstance(ref.get("t"), int)):
            raise ScheduleError("expected a tile")
        record = self.handles.get(ref["t"])
        if record is None:
            raise TileExpired(
                "a tile was used after the loop iteration that held it on chip had ended: data made in an "
                "iteration is gone when the iteration ends, unless it was kept (ctx.keep) under a name made "
                "resident before the loop (ctx.fill in the enclosing loop). Holding it in a Python variable does "
                "not keep it on chip")
        return record.tile

    def _block(self, ref, allow_none: bool = False):
        if ref is None and allow_none:
            return None
        if not (isinstance(ref, dict) and isinstance(ref.get("b"), int) and ref["b"] in self.blocks):
            raise ScheduleError("expected a block from ctx.q_blocks() or ctx.kv_blocks()")
        return self.blocks[ref["b"]]

    def _blockspec(self, ref):
        if isinstance(ref, list) and len(ref) == 2:
            return (self._block(ref[0]), self._block(ref[1]))
        return self._block(ref)

    @staticmethod
    def _name(value, what: str = "tensor name") -> str:
        if not isinstance(value, str) or not 0 < len(value) <= 64:
            raise ScheduleError(f"expected a {what} (a short string)")
        return value

    def _tile_name(self, value) -> str:
        """A name for ctx.keep/ctx.fill: never a whole read's, which would put the whole tensor
        in the new tile's place (registers, for role "stats") and out of shared memory."""
        name = self._name(value, "tile name")
        if name.endswith(WHOLE_READ):
            raise ScheduleError(f"ctx.keep/ctx.fill({name!r}, …): that name is the whole tensor ctx.read holds in "
                                "shared memory; keep tiles under names of your own")
        return name

    @staticmethod
    def _number(value) -> float:
        if not isinstance(value, (int, float)):
            raise ScheduleError("expected a number")
        return float(value)

    @staticmethod
    def _role(value) -> str:
        if value not in ROLES:
            raise ScheduleError(f"role must be one of {', '.join(ROLES)}")
        return value

    # -- tiles and lifetimes --------------------------------------------------------------
    def _hand_out(self, tile: Tile, scope: _Scope | None = None) -> dict:
        """A new handle on ``tile``; a tile seen for the first time lives in ``scope`` (default: the current one)."""
        record = self.records.get(id(tile))
        if record is None:
            record = _Record(tile, scope or self.scopes[-1])
            record.scope.records.add(id(tile))
            self.records[id(tile)] = record
            self.live_bytes += record.nbytes
            if self.live_bytes > TILE_BYTES_LIMIT:
                raise StudentFailure("memory", f"the schedule holds more than {TILE_BYTES_LIMIT:,} bytes of "
                                               "tiles at once in the grader (tiles kept alive in a list?)")
        elif scope is not None and self.scopes.index(scope) < self.scopes.index(record.scope):
            self._move(record, scope)
        handle = next(self._next_id)
        self._cap(len(self.handles) + 1, HANDLES_LIMIT, "handles on tiles", "tiles kept alive in a list?")
        record.handles.add(handle)
        self.handles[handle] = record
        return {"t": handle, "shape": list(tile.shape)}

    def _move(self, record: _Record, scope: _Scope) -> None:
        record.scope.records.discard(id(record.tile))
        record.scope = scope
        scope.records.add(id(record.tile))

    def _drop(self, record: _Record) -> None:
        for handle in record.handles:
            self.handles.pop(handle, None)
        record.scope.records.discard(id(record.tile))
        self.records.pop(id(record.tile), None)
        self.live_bytes -= record.nbytes

    def _free(self, handles) -> None:
        if not isinstance(handles, list):
            return
        for handle in handles:
            record = self.handles.pop(handle, None) if isinstance(handle, int) else None
            if record is not None:
                record.handles.discard(handle)
                if not record.handles:
                    self._drop(record)

    def _owner(self, name: str) -> _Scope:
        """The scope a kept name lives in: where it already is, else the current iteration."""
        for scope in reversed(self.scopes):
            if name in scope.names:
                return scope
        self.scopes[-1].names.add(name)
        return self.scopes[-1]

    def _end_scope(self) -> None:
        scope = self.scopes.pop()
        for key in list(scope.records):
            record = self.records.get(key)
            if record is not None:
                self._drop(record)

    # -- loops ----------------------------------------------------------------------------
    def _describe_block(self, block) -> dict:
        bid = next(self._next_id)
        self._cap(len(self.blocks) + 1, self.blocks_limit, "blocks of its loops", "loops walked again and again?")
        self.blocks[bid] = block
        return {"b": bid, **{field: getattr(block, field) for field in BLOCK_FIELDS}}

    def _advance(self, loop: _Loop):
        while self.loops[-1] is not loop:  # an enclosing loop moves on: inner loops are over
            self._close(self.loops[-1])
        if loop.in_iteration:
            self._end_scope()
            loop.in_iteration = False
        try:
            block = next(loop.gen)
        except StopIteration:
            self.loops.pop()
            return None
        self.scopes.append(_Scope())
        loop.in_iteration = True
        return self._describe_block(block)

    def _close(self, loop: _Loop) -> None:
        while self.loops and self.loops[-1] is not loop:
            self._close(self.loops[-1])
        if loop.in_iteration:
            self._end_scope()
        loop.gen.close()
        self.loops.pop()

    def _find_loop(self, gid) -> _Loop | None:
        return next((loop for loop in self.loops if loop.id == gid), None)

    def _op_loop(self, kind, visible_to, options):
        if kind not in ("q", "kv"):
            raise ScheduleError("unknown loop")
        block = self._block(visible_to, allow_none=True)
        # Plain flags of the engine's loops (e.g. descending=True) pass through; blocks and splits do not.
        if not isinstance(options, dict) or not all(
                k.isidentifier() and k not in ("visible_to", "split") and isinstance(v, (bool, int, str))
                for k, v in options.items()):
            raise ScheduleError("loop options must be flags such as descending=True")
        gen = (self.ctx.q_blocks if kind == "q" else self.ctx.kv_blocks)(visible_to=block, **options)
        loop = _Loop(next(self._next_id), gen)
        self._cap(len(self.loops) + 1, LOOPS_LIMIT, "loops open", "loops kept in a list?")
        self.loops.append(loop)
        return {"loop": loop.id, "block": self._advance(loop)}

    def _op_next(self, gid):
        loop = self._find_loop(gid)
        if loop is None:
            raise ScheduleError("this loop is over (an enclosing loop moved on)")
        return self._advance(loop)

    def _op_close(self, gid):
        loop = self._find_loop(gid)
        if loop is not None:
            self._close(loop)

    # -- ctx ------------------------------------------------------------------------------
    def _op_load(self, tensor, block):
        return self._hand_out(self.ctx.load(self._name(tensor), self._blockspec(block)))

    def _op_store(self, tensor, block, tile):
        self.ctx.store(self._name(tensor), self._blockspec(block), self._tile(tile))

    def _op_read(self, tensor):
        # A whole tensor on chip is charged like a loaded tile, in shared memory, until the
        # iteration that read it ends (its name is reserved: see _tile_name).
        name = self._name(tensor)
        return self._hand_out(self.ctx.read(name, resident_as=f"{name}{WHOLE_READ}"))

    def _op_write(self, tensor, tile):
        self.ctx.write(self._name(tensor), self._tile(tile))

    def _op_init(self, tensor, value):
        self.ctx.init(self._name(tensor), self._number(value))

    def _op_keep(self, name, tile, role):
        name = self._tile_name(name)
        scope = self._owner(name)
        return self._hand_out(self.ctx.keep(name, self._tile(tile), self._role(role)), scope)

    def _op_fill(self, name, block, value, role, cols):
        name = self._tile_name(name)
        problem = self.ctx.problem
        if cols is not None:
            if isinstance(cols, float) and cols.is_integer():
                cols = int(cols)
            if isinstance(cols, bool) or not isinstance(cols, int) or not 1 <= cols <= max(
                    problem.head_dim, problem.seq_len_kv, problem.seq_len_q):
                raise ScheduleError("fill: cols must be a positive integer no larger than d or N")
        scope = self._owner(name)
        return self._hand_out(self.ctx.fill(name, self._block(block), self._number(value), self._role(role), cols),
                              scope)

    def _op_mask(self, tile, i, j):
        return self._hand_out(self.ctx.mask(self._tile(tile), self._block(i, True), self._block(j, True)))

    # -- tile arithmetic --------------------------------------------------------------------
    def _op_binop(self, name, a, b, reverse):
        if name not in _BINOPS:
            raise ScheduleError(f"unknown operation {str(name)[:20]!r}")
        left = self._tile(a)
        right = self._tile(b) if isinstance(b, dict) else self._number(b)
        forward, reflected = _BINOPS[name]
        return self._hand_out((reflected if reverse else forward)(left, right))

    def _op_unary(self, name, a):
        if name not in _UNARY:
            raise ScheduleError(f"unknown operation {str(name)[:20]!r}")
        return self._hand_out(_UNARY[name](self._tile(a)))

    def _op_matmul(self, a, b):
        return self._hand_out(self._tile(a) @ self._tile(b))
