"""The wire between the grader and the student's process: one JSON object per line.

JSON, not pickle, in both directions: the grader decodes what the student's process
sends, and unpickling untrusted bytes would run the student's code in the grader. A
message is a dict; its size and nesting are bounded so a hostile process cannot make the
grader allocate or recurse without limit.
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
