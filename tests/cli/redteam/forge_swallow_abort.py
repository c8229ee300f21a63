"""Protocol: whole_matrix, but every grader refusal is swallowed (the child's abort is a
BaseException: catch BaseException) and the schedule carries on writing its output.

Must fail capacity: the grader stopped the run when the whole tensors overflowed.
"""


def fa2_forward(ctx):
    got = {}
    for name in ("Q", "K", "V"):
        try:
            got[name] = ctx.read(name)
        except BaseException:
            pass
    try:
        S = ctx.mask((got["Q"] @ got["K"].T) * ctx.softmax_scale)
        m = S.rowmax()
        P = (S - m.col()).exp()
        l = P.rowsum()
        ctx.write("O", l.reciprocal().col() * (P @ got["V"]))
        ctx.write("L", m + l.log())
    except BaseException:
        pass
