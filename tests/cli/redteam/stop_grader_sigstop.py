"""Stopping the grader: SIGSTOP to the parent process; a stopped grader never enforces its
time limit and never reports.

Run in a separate grader process by the test. The grader must finish (the student's
process cannot stop it) and report a failure.
"""

import os
import signal


def fa2_forward(ctx):
    try:
        os.kill(os.getppid(), signal.SIGSTOP)
    except OSError:
        pass
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

