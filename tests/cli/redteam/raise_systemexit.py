"""Odd exceptions: SystemExit(0) from inside the inner loop (an "exit with success" code).

Must fail runs (an exception, reported as such); the grader survives.
"""


def fa2_forward(ctx):
    for i in ctx.q_blocks():
        for j in ctx.kv_blocks(visible_to=i):
            ctx.load("K", j)
            raise SystemExit(0)
