"""Surviving processes: double fork + setsid (a daemon outside the child's process group),
all descriptors closed; the daemon waits 2 s — past the end of the grade — then writes a
marker file.

Must leave nothing behind: no marker appears, no process with the token survives.
"""

import os
import time

MARKER = "__MARKER__"
TOKEN = "__TOKEN__"


def _daemon():
    if os.fork() != 0:
        return
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    os.closerange(0, 1024)
    try:
        os.execv("/bin/sh", ["sh", "-c", f"sleep 2; echo survived > {MARKER}; sleep 20; :", TOKEN])
    except OSError:
        time.sleep(2)
        with open(MARKER, "w") as f:
            f.write("survived\n")
        time.sleep(20)
    os._exit(0)


STARTED = []


def fa2_forward(ctx):
    if not STARTED:
        STARTED.append(1)
        _daemon()
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

