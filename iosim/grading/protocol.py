"""The wire between the grader and the student's process: one JSON object per line.

JSON, not pickle, in both directions: the grader decodes what the student's process
sends, and unpickling untrusted bytes would run the student's code in the grader. A
message is a dict; its size and nesting are bounded so a hostile process cannot make the
grader allocate or recurse without limit.

What the student's process may send, and what the grader makes of it (the functions at
the end check each message; anything else is a :class:`ProtocolViolation`, which the
grader reports as a failing grade):

* the answer to the first message: ``{"loaded": true}``, ``{"loaded": false, "error": {...}}``
  or ``{"loaded": false, "missing": true}``. Only a failure can come of it: whether the file
  defines the graded function is decided from its syntax tree before the process starts,
  and the written answer is read from there too, never from the process;
* during a schedule run: requests ``{"op": name, "a": [...], "free": [handles]}``, which the
  grader's engine carries out and counts, then ``{"done": true}`` or ``{"done": false,
  "error": {...}}``. "done" only ends the requests: the run is judged on what the engine
  recorded, never on the process's word;
* the answer to a ``choose_blocks`` call: ``{"done": true, "value": [B_r, B_c]}`` (or
  ``"value": null, "returned": text``) or ``{"done": false, "error": {...}}``: the value is
  the student's answer, and the grader simulates it itself.
"""

from __future__ import annotations

import json
import select
import socket
import time

from ..errors import ScheduleError

#: the longest line either side accepts
MAX_MESSAGE_BYTES = 1 << 20
#: the exceptions a refused request comes back as (``{"e": [name, message]}``), by name: the
#: grader sends only these names, and the student's process raises the same type
ERRORS = {cls.__name__: cls for cls in (ScheduleError, TypeError, ValueError, ZeroDivisionError)}
#: the facts of a block the grader sends with its handle (``{"b": id, field: value, ...}``)
BLOCK_FIELDS = ("axis", "index", "start", "rows", "block", "count")


class ChannelError(Exception):
    """The other side broke the protocol (bad JSON, a line too long, not a dict)."""


class ChannelClosed(ChannelError):
    """The other side closed the connection (it exited or crashed)."""


class ChannelTimeout(ChannelError):
    """No complete message arrived before the deadline."""


class ProtocolViolation(ChannelError):
    """A well-formed message that the protocol does not allow at this point."""


#: however the time splits, a grade session ends this long after it started (× the time limit, plus
#: WALL_EXTRA_S): a schedule that keeps the grader busy with requests cannot hold it without end
WALL_FACTOR, WALL_EXTRA_S = 10, 30.0


class StudentClock:
    """The time limit, counted on the student's side.

    Only the time the grader spends waiting for the student's process counts (loading the
    file, computing its next request or its answer, in :meth:`recv` and :meth:`send`); what
    the grader does meanwhile — running the engine on a request, preparing a run, counting —
    does not, so the grader's own work never eats into the student's limit. The whole session
    still ends at a hard wall-clock cap.
    """

    def __init__(self, timeout_s: float):
        self.timeout_s, self.used = timeout_s, 0.0
        self.wall_end = time.monotonic() + WALL_FACTOR * timeout_s + WALL_EXTRA_S

    def deadline(self) -> float:
        """The instant the current wait must end by."""
        now = time.monotonic()
        return min(now + max(self.timeout_s - self.used, 0.0), self.wall_end)

    def recv(self, channel: Channel) -> dict:
        start = time.monotonic()
        try:
            return channel.recv(self.deadline())
        finally:
            self.used += time.monotonic() - start

    def send(self, channel: Channel, message: dict) -> None:
        start = time.monotonic()
        try:
            channel.send(message, self.deadline())
        finally:
            self.used += time.monotonic() - start


class Channel:
    """Send and receive dicts over a stream socket, with an optional deadline on each call."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._buffer = bytearray()

    def send(self, message: dict, deadline: float | None = None) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        if deadline is None:
            self.sock.sendall(data)
            return
        # A process that sends without reading could fill its receive buffer; never block forever.
        self.sock.settimeout(max(deadline - time.monotonic(), 1e-3))
        try:
            self.sock.sendall(data)
        except (socket.timeout, BlockingIOError):
            raise ChannelTimeout("the other side stopped reading") from None
        except OSError as exc:
            raise ChannelClosed(str(exc)) from None
        finally:
            self.sock.settimeout(None)

    def recv(self, deadline: float | None = None) -> dict:
        """The next message; ``deadline`` is a ``time.monotonic()`` instant."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[:end + 1]
                return _decode(line)
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                raise ChannelError(f"a message longer than {MAX_MESSAGE_BYTES:,} bytes")
            if deadline is not None:
                remaining = deadline - time.monotonic()
                ready = remaining > 0 and select.select([self.sock], [], [], remaining)[0]
                if not ready:
                    raise ChannelTimeout("no message before the deadline")
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError as exc:
                raise ChannelClosed(str(exc)) from None
            if not chunk:
                raise ChannelClosed("connection closed")
            self._buffer += chunk


def _decode(line: bytes) -> dict:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise ChannelError(f"not a JSON message: {str(exc)[:80]}") from None
    if not isinstance(message, dict):
        raise ChannelError("a message must be a JSON object")
    return message


# -- what the student's process may send ---------------------------------------------------------
def _describe(message: dict) -> str:
    return "{" + ", ".join(repr(str(k))[:40] for k in list(message)[:6]) + ("" if len(message) <= 6 else ", …") + "}"


def error_of(message: dict) -> dict:
    """The ``error`` of a failure message, as short strings (``type``, ``message``, ``where``)."""
    error = message.get("error", {})
    if not isinstance(error, dict):
        raise ProtocolViolation(f"an error report that is not an object: {_describe(message)}")
    return {"type": str(error.get("type", "Error"))[:80], "message": str(error.get("message", ""))[:2000],
            "where": str(error.get("where", ""))[:500]}


def hello_reply(message: dict) -> str:
    """``loaded``, ``missing`` or ``error``: how loading the file went, by the process's account."""
    loaded = message.get("loaded")
    if loaded is True and "missing" not in message and "error" not in message:
        return "loaded"
    if loaded is False and message.get("missing") is True and "error" not in message:
        return "missing"
    if loaded is False and "missing" not in message and isinstance(message.get("error"), dict):
        return "error"
    raise ProtocolViolation(f"expected the answer to the grader's first message, got {_describe(message)}")


def run_message(message: dict) -> str:
    """``request``, ``done`` or ``failed``: one message of the process during a schedule run."""
    if "done" in message:
        if "op" in message:
            raise ProtocolViolation(f"a request and the end of the run in one message: {_describe(message)}")
        if message["done"] is True and "error" not in message:
            return "done"
        if message["done"] is False:
            error_of(message)
            return "failed"
        raise ProtocolViolation(f"an end of the run that is neither done nor failed: {_describe(message)}")
    op, args, free = message.get("op"), message.get("a"), message.get("free", [])
    if not (isinstance(op, str) and op.isidentifier() and len(op) <= 40 and isinstance(args, list)
            and isinstance(free, list) and all(type(h) is int for h in free)):
        raise ProtocolViolation(f"expected a request or the end of the run, got {_describe(message)}")
    return "request"


def call_reply(message: dict) -> str:
    """``value`` or ``failed``: the process's answer to one ``choose_blocks`` call."""
    done = message.get("done")
    if done is True and "value" in message and "error" not in message:
        if message["value"] is None and not isinstance(message.get("returned", ""), str):
            raise ProtocolViolation(f"a returned value described by a non-string: {_describe(message)}")
        return "value"
    if done is False and "value" not in message:
        error_of(message)
        return "failed"
    raise ProtocolViolation(f"expected the answer to a choose_blocks call, got {_describe(message)}")
