"""Dodge: the file defines fa2_forward, then rebinds the name to None at the end, so the child
honestly reports "no such function" — and the grader answers "cannot grade" (exit 2)
instead of a failing grade.

Must give a failing report (loads fails, the name is not a function after loading), not
raise GradingInputError.
"""


def fa2_forward(ctx):
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=ctx.problem.head_dim))


fa2_forward = None
