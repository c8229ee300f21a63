"""Killing the grader: SIGKILL to the parent process (the grader, when the child is its direct
child), so no grade is ever reported.

Run in a separate grader process by the test. The grader must survive and report a failure.
"""

import os
import signal


def fa2_forward(ctx):
    try:
        os.kill(os.getppid(), signal.SIGKILL)
    except OSError:
        pass
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

