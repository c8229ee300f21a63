"""Protocol forgery: raw bytes (not JSON) written straight to the grader's socket, found by
scanning /proc/self/fd, in the middle of a run.

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
    for i in ctx.q_blocks():
        ctx.load("Q", i)
        for fd in _grader_fds():
            os.write(fd, b"\x00\xff{not json at all}\n")
