"""Killing the grader: kill(-1, SIGKILL) — every process the user may signal.

DANGEROUS outside a PID namespace: it refuses to act unless its PID namespace differs from
the test's (__HOST_PIDNS__), and the test runs it only where isolation is available, in a
separate grader process. The grader must survive and report a failure.
"""

import os
import signal

HOST_PIDNS = "__HOST_PIDNS__"


def fa2_forward(ctx):
    try:
        mine = os.readlink("/proc/self/ns/pid")
    except OSError:
        mine = HOST_PIDNS
    if mine != HOST_PIDNS and not HOST_PIDNS.startswith("__"):
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
    else:
        print("kill_everything: not in a PID namespace of its own; refusing", flush=True)
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

