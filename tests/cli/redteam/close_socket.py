"""Deleting the socket: shut down and close every socket of the process in the middle of a run,
then return normally.

Must fail runs (the connection broke); the grader survives.
"""

import json
import os
import socket


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
            try:
                socket.socket(fileno=fd).shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                os.close(fd)
            except OSError:
                pass
        return
