"""CPU burn in the grader: an endless stream of cheap tile operations, each answered by the
grader's engine, so the grader's CPU burns rather than the child's.

Must fail runs on the time limit; the grader stops serving at its deadline.
"""


def fa2_forward(ctx):
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        while True:
            (Q_i @ Q_i.T).rowmax()
