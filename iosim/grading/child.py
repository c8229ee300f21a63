"""The student's process: load the submission, run it against a stand-in ``ctx``.

This module runs in the child that :mod:`iosim.grading.sandbox` starts, under its time
and memory limits. The child never holds a number of the problem: it gets the shapes
(problem, block sizes), and every ``ctx`` call or tile operation the schedule makes is
sent to the grader, which runs it on the real engine and answers with a handle and a
shape. Inputs, outputs, byte counts, capacity bookkeeping and the reference answer all
stay in the grader's process, so a schedule cannot read them, edit them, or write an
output it did not compute with tile operations.

The stand-ins keep the documented schedule API (``docs/simulator.md``): loops, ``load``,
``store``, ``keep``, ``fill``, ``mask``, ``init``, ``read``, ``write`` and tile arithmetic,
``iosim.engine.tiles.maximum`` included. ``tile.data`` is not available.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import importlib.util
import operator
import os
import socket
import sys
import traceback

import numpy as np

from .. import errors
from ..engine.blocks import BlockMask
from ..workload.problem import BlockSizes, Problem
from .protocol import BLOCK_FIELDS, ERRORS, Channel

#: freed when the schedule runs out of memory, so the child can still report it
_RESERVE: list = []
_UFUNC_NAMES = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.divide: "div", np.maximum: "maximum"}
API = ("problem, blocks, softmax_scale, mode, mask_info, q_blocks, kv_blocks, load, store, read, write, init, "
       "keep, fill, mask, watch, kernel, thread_block")


class GradingAbort(BaseException):
    """The grader stopped this run (e.g. tiles over capacity); not meant to be caught."""


class Link:
    """Requests to the grader: one message out, one answer back."""

    def __init__(self, channel: Channel):
        self.channel = channel
        self.pending_free: list[int] = []
        self.active = False
        self.aborted: str | None = None

    def call(self, op: str, *args):
        if self.aborted is not None:
            raise GradingAbort(self.aborted)
        message = {"op": op, "a": [_encode(a) for a in args]}
        if self.pending_free:
            message["free"], self.pending_free = self.pending_free, []
        self.channel.send(message)
        reply = self.channel.recv()
        if "abort" in reply:
            self.aborted = str(reply["abort"])
            raise GradingAbort(self.aborted)
        if "e" in reply:
            kind, text = reply["e"]
            raise ERRORS.get(kind, RuntimeError)(text)
        return reply.get("r")

    def tile(self, op: str, *args) -> "RemoteTile":
        """A request answered with a new tile."""
        return RemoteTile(self, self.call(op, *args))

    def quiet(self, op: str, *args) -> None:
        """A call whose failure does not matter (closing a loop the schedule left)."""
        if self.active and self.aborted is None:
            try:
                self.call(op, *args)
            except Exception:
                pass

    def loop(self, kind: str, visible_to, options: dict):
        """A block loop: opened lazily, advanced by the grader's real loop (``options`` are passed on)."""
        reply = self.call("loop", kind, visible_to, options)
        gid, block = reply["loop"], reply["block"]
        finished = False
        try:
            while block is not None:
                yield RemoteBlock(block)
                block = self.call("next", gid)
            finished = True
        finally:
            if not finished:
                self.quiet("close", gid)


def _encode(value):
    if isinstance(value, RemoteTile):
        return {"t": value._id}
    if isinstance(value, RemoteBlock):
        return {"b": value._id}
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    raise TypeError(f"cannot pass a {type(value).__name__} to ctx or to a tile operation; "
                    "use tiles, blocks, numbers and names")


class RemoteBlock:
    """A block from ``ctx.q_blocks()``/``ctx.kv_blocks()``: where it starts and how many rows it has."""

    __slots__ = ("_id",) + BLOCK_FIELDS

    def __init__(self, desc: dict):
        self._id = desc["b"]
        for key in BLOCK_FIELDS:
            setattr(self, key, desc[key])

    @property
    def label(self) -> str:
        return f"{'i' if self.axis == 'q' else 'j'}={self.index}"

    def __repr__(self) -> str:
        return f"Block({self.axis}, index={self.index}, start={self.start}, rows={self.rows})"

    def __eq__(self, other):
        return isinstance(other, RemoteBlock) and (self.axis, self.index) == (other.axis, other.index)

    def __hash__(self):
        return hash((self.axis, self.index))


class RemoteTile:
    """A tile held by the grader: its shape here, its values there."""

    __slots__ = ("_id", "shape", "_link", "__weakref__")
    __array_ufunc__ = None  # numpy scalars defer to our reflected operators

    def __init__(self, link: Link, desc: dict):
        self._link, self._id, self.shape = link, desc["t"], tuple(desc["shape"])

    def __del__(self):
        link = getattr(self, "_link", None)
        if link is not None and link.active:
            link.pending_free.append(self._id)

    @property
    def data(self):
        raise AttributeError(
            "tile values stay in the grader's process: under `iosim grade` a schedule sees shapes only. "
            "To look at numbers, run your schedule yourself: simulate(hw, your_function, problem, mode='numeric')")

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"Tile{self.shape}"

    def _elementwise(self, other, ufunc, reverse: bool = False) -> "RemoteTile":
        name = _UFUNC_NAMES.get(ufunc)
        if name is None:
            raise TypeError(f"element-wise {getattr(ufunc, '__name__', ufunc)} is not a tile operation")
        return self._link.tile("binop", name, self, other, bool(reverse))

    def __add__(self, o): return self._elementwise(o, np.add)
    def __radd__(self, o): return self._elementwise(o, np.add, True)
    def __sub__(self, o): return self._elementwise(o, np.subtract)
    def __rsub__(self, o): return self._elementwise(o, np.subtract, True)
    def __mul__(self, o): return self._elementwise(o, np.multiply)
    def __rmul__(self, o): return self._elementwise(o, np.multiply, True)
    def __truediv__(self, o): return self._elementwise(o, np.divide)
    def __rtruediv__(self, o): return self._elementwise(o, np.divide, True)
    def __neg__(self): return self._link.tile("unary", "neg", self)
    def __matmul__(self, o): return self._link.tile("matmul", self, o)

    def exp(self): return self._link.tile("unary", "exp", self)
    def log(self): return self._link.tile("unary", "log", self)
    def rowmax(self): return self._link.tile("unary", "rowmax", self)
    def rowsum(self): return self._link.tile("unary", "rowsum", self)
    def inf_as_zero(self): return self._link.tile("unary", "inf_as_zero", self)
    def reciprocal(self): return self._link.tile("unary", "reciprocal", self)
    def col(self): return self._link.tile("unary", "col", self)

    @property
    def T(self): return self._link.tile("unary", "T", self)


class RemoteContext:
    """``ctx`` under the grader: the documented schedule API, nothing else."""

    __slots__ = ("problem", "blocks", "softmax_scale", "mode", "mask_info", "_link")

    def __init__(self, link: Link, spec: dict):
        self._link = link
        self.problem = Problem(**spec["problem"])
        self.blocks = BlockSizes(*spec["blocks"])
        self.softmax_scale = 1.0 / np.sqrt(self.problem.head_dim)
        self.mode = "numeric"
        self.mask_info = BlockMask(self.problem, self.blocks)

    def __getattr__(self, name):
        raise AttributeError(f"ctx.{name} is not available under `iosim grade`; a schedule may use {API}")

    def q_blocks(self, visible_to=None, **options):
        return self._link.loop("q", visible_to, options)

    def kv_blocks(self, visible_to=None, split=None, **options):
        """Options such as ``descending=True`` go to the engine's own ``kv_blocks``."""
        if split is not None:
            raise errors.ScheduleError("key/value splits are not part of the assignment's API")
        return self._link.loop("kv", visible_to, options)

    def load(self, tensor, block):
        return self._link.tile("load", tensor, block)

    def store(self, tensor, block, tile, sum_over_group=False):
        if sum_over_group:
            raise errors.ScheduleError("sum_over_group is not part of the assignment's API")
        self._link.call("store", tensor, block, tile)

    def read(self, tensor):
        return self._link.tile("read", tensor)

    def write(self, tensor, tile, sum_over_group=False):
        if sum_over_group:
            raise errors.ScheduleError("sum_over_group is not part of the assignment's API")
        self._link.call("write", tensor, tile)

    def init(self, tensor, value, force_count=False):
        if force_count:
            raise errors.ScheduleError("force_count is not part of the assignment's API")
        self._link.call("init", tensor, value)

    def keep(self, name, tile, role):
        return self._link.tile("keep", name, tile, role)

    def fill(self, name, block, value, role, cols=None):
        return self._link.tile("fill", name, block, value, role, cols)

    def mask(self, scores, i=None, j=None):
        return self._link.tile("mask", scores, i, j)

    def watch(self, name, tile) -> None:
        """Recording values is a no-op under the grader (values never reach this process)."""

    @contextlib.contextmanager
    def kernel(self, name):
        """Attributing traffic to kernel launches does not change what is graded: a no-op."""
        yield

    @contextlib.contextmanager
    def thread_block(self, key):
        """Marking thread blocks (for the cache model) does not change what is graded: a no-op."""
        yield


# -- the child's main loop ------------------------------------------------------------------
def describe(exc: BaseException, path: str) -> dict:
    """Type, message and the innermost line of the submission the exception passed through."""
    if isinstance(exc, MemoryError):
        _RESERVE.clear()
        gc.collect()
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if os.path.abspath(frame.filename) == path:
            where = f"line {frame.lineno}, in {frame.name}: {(frame.line or '').strip()}"
            break
    return {"type": type(exc).__name__, "message": str(exc)[:2000], "where": where[:500]}


def _apply_limits(memory_bytes: int | None, cpu_s: int | None) -> None:
    """The grader's limits (checked there); a value the kernel refuses leaves the limit as it is."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    limits = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, 16 << 20)]
    if memory_bytes:
        limits.append((resource.RLIMIT_AS, memory_bytes))
    if cpu_s:
        limits.append((resource.RLIMIT_CPU, cpu_s))
    for which, value in limits:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OverflowError, TypeError, OSError):
            pass


def _drop_ptrace() -> None:
    """Give up CAP_SYS_PTRACE for good (bounding set too), so the grader's memory stays unreadable.

    Only a process with capabilities (root) has it to give up; a normal user has none, and
    the grader's non-dumpable flag keeps such a process out of its memory.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        cap_sys_ptrace = 19
        libc.prctl(24, cap_sys_ptrace, 0, 0, 0)              # PR_CAPBSET_DROP
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)        # _LINUX_CAPABILITY_VERSION_3, this process
        data = (ctypes.c_uint32 * 6)()                       # {effective, permitted, inheritable} × 2
        if libc.capget(header, data) == 0 and data[1] & (1 << cap_sys_ptrace):
            for k in range(3):
                data[k] &= ~(1 << cap_sys_ptrace)
            libc.capset(header, data)
    except (OSError, AttributeError):
        pass


def _load(path: str):
    sys.dont_write_bytecode = True  # leave no __pycache__ next to the submission
    sys.path.append(os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("submission", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    spec.loader.exec_module(module)
    return module


def _as_blocks(value) -> list[int]:
    """(block_q, block_kv) as two ints, from a pair or a BlockSizes; TypeError otherwise."""
    if hasattr(value, "block_q") and hasattr(value, "block_kv"):
        value = (value.block_q, value.block_kv)
    if not isinstance(value, (tuple, list)) or len(value) != 2 or any(isinstance(v, bool) for v in value):
        raise TypeError("not a pair of integers")
    return [operator.index(v) for v in value]


def _serve(channel: Channel, function, path: str) -> None:
    link = Link(channel)
    while True:
        message = channel.recv()
        if "run" in message:
            link.active, link.aborted = True, None
            try:
                ctx = RemoteContext(link, message["run"])
                function(ctx)
                del ctx
                gc.collect()
                reply = {"done": True}
            except BaseException as exc:  # the grade reports it; the child goes on
                reply = {"done": False, "error": describe(exc, path)}
            link.active, link.pending_free = False, []
            channel.send(reply)
        elif "call" in message:
            spec = message["call"]
            try:
                value = function(spec["hw"], Problem(**spec["problem"]))
            except BaseException as exc:
                reply = {"done": False, "error": describe(exc, path)}
            else:
                try:
                    reply = {"done": True, "value": _as_blocks(value)}
                except (TypeError, ValueError):
                    reply = {"done": True, "value": None, "returned": repr(value)[:80]}
            channel.send(reply)
        else:
            return


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    channel = Channel(socket.socket(fileno=int(argv[0])))
    hello = channel.recv()
    _apply_limits(hello.get("memory_bytes"), hello.get("cpu_s"))
    _drop_ptrace()
    faulthandler.enable()
    _RESERVE.append(bytearray(4 << 20))
    path = hello["file"]
    try:
        module = _load(path)
    except BaseException as exc:
        channel.send({"loaded": False, "error": describe(exc, path)})
        return
    function = getattr(module, hello["function"], None)
    if not callable(function):
        channel.send({"loaded": False, "missing": True})
        return
    answers = {}
    for name in hello.get("attributes", []):
        value = getattr(module, name, None)
        answers[name] = value[:4000] if isinstance(value, str) else None
    channel.send({"loaded": True, "attributes": answers})
    _serve(channel, function, path)
