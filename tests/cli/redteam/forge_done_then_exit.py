"""Protocol forgery: in the middle of the first run, write a fake {"done": true} (with made-up
counts and outputs) straight to the grader's socket, then os._exit(0).

Must fail: nothing was stored (exactness) and the process is gone (runs).
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
        _say({"done": True, "passed": True, "outputs": {"O": "reference"}, "counts": {"Q": {"read": 0}},
              "hbm_bytes": 164864, "exactness": "pass"})
        os._exit(0)
