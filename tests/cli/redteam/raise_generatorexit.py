"""Odd exceptions: GeneratorExit raised inside the inner loop (it looks like the loop generator
being closed), and StopIteration leaking from a helper.

Must fail runs; the grader survives.
"""


def fa2_forward(ctx):
    for i in ctx.q_blocks():
        for j in ctx.kv_blocks(visible_to=i):
            ctx.load("K", j)
            if j.index == 1:
                raise GeneratorExit("loop closed")
        raise StopIteration
