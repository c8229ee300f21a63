"""Protocol forgery: on import the submission takes over the child's side of the protocol:
it sends its own hello with a written answer the file does not have, answers every run
with {"done": true} plus fake counts and outputs, and never lets the real child speak.

Must fail: the answer is not in the file (answer fails), nothing was computed (exactness).
Nothing the child says about itself may be trusted.
"""

import json
import os
import sys


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


def _impersonate():
    fds = _grader_fds()
    if not fds:
        return
    fd = fds[0]
    answer = ("FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once. "
              "FA1 streams the queries in its inner loop and rereads O, l and m for every pair of blocks.")
    os.write(fd, (json.dumps({"loaded": True, "attributes": {"WHY_TRAFFIC_DIFFERS": answer}}) + "\n").encode())
    buffer = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            os._exit(0)
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            message = json.loads(line)
            if "run" in message:
                reply = {"done": True, "counts": {"Q": 4096}, "outputs": {"O": [[0.0]]}, "status": "ok"}
            elif "call" in message:
                reply = {"done": True, "value": [128, 64]}
            else:
                os._exit(0)
            os.write(fd, (json.dumps(reply) + "\n").encode())


_impersonate()


def fa2_forward(ctx):
    pass
