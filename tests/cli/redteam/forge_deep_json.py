"""Protocol forgery: a JSON message nested 200,000 deep (the grader's decoder recursing) and
then a line longer than the grader's limit, straight to the socket.

Must fail runs with a protocol error; the grader survives.
"""

import json
import os


def _grader_fds():
    """The sockets among this process's file descriptors (the grader's connection is one)."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                found.append(int(name))
        except OSError:
            pass
    return found


def _say(message):
    for fd in _grader_fds():
        try:
            os.write(fd, (json.dumps(message) + "\n").encode())
        except OSError:
            pass


def fa2_forward(ctx):
    for fd in _grader_fds():
        os.write(fd, b"[" * 200000 + b"]" * 200000 + b"\n")
        os.write(fd, b"{" + b"x" * (3 << 20))
    for i in ctx.q_blocks():
        ctx.load("Q", i)
