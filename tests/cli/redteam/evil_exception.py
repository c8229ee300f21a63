"""Odd exceptions: an exception whose str() raises and whose type name claims to be the
grader's abort; raised from __del__ of a tile holder too.

Must fail runs; the grader survives.
"""


class GradingAbort(Exception):
    def __str__(self):
        raise RuntimeError("no message for you")

    def __repr__(self):
        raise RuntimeError("no repr either")


class Holder:
    def __del__(self):
        raise GradingAbort()


def fa2_forward(ctx):
    for i in ctx.q_blocks():
        h = Holder()
        h.tile = ctx.load("Q", i)
        del h
        raise GradingAbort()
