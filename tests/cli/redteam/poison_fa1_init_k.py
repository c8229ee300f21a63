"""Poisoned inputs (fa1): line 2 initialises O, l, m in HBM — and K too, "by mistake".

With K = 0 every score is 0, so this FA1 skips the maxima altogether (m is stored as 0),
and ctx.init is not counted, so the traffic is FA1's. Must fail: inputs are read-only
(runs) or exactness against a pristine reference.
"""


def fa1_forward(ctx):
    for name in ("O", "l", "m", "K"):
        ctx.init(name, 0.0)
    for j in ctx.kv_blocks():
        K_j, V_j = ctx.load("K", j), ctx.load("V", j)
        for i in ctx.q_blocks(visible_to=j):
            Q_i, O_i, l_i, m_i = ctx.load("Q", i), ctx.load("O", i), ctx.load("l", i), ctx.load("m", i)
            P = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j).exp(), role="scores")
            l_new = l_i + P.rowsum()
            O_i = ctx.keep("O_i", l_new.reciprocal().col() * (l_i.col() * O_i + P @ V_j), role="output")
            ctx.store("O", i, O_i)
            ctx.store("l", i, l_new)
            ctx.store("m", i, m_i)
