"""Cheat (fa2): skip the running maximum altogether and exponentiate the raw scores.

Mathematically exact, and exact to rounding on standard-normal inputs; the HBM traffic is
FA2's. On scores of a few hundred e^S overflows to ∞: `iosim grade` must fail it on
exactness through its large-score input.
"""


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
        l_i = ctx.fill("l_i", i, 0.0, role="stats")
        for j in ctx.kv_blocks(visible_to=i):
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)
            P_ij = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j).exp(), role="scores")
            l_i = ctx.keep("l_i", l_i + P_ij.rowsum(), role="stats")
            O_i = ctx.keep("O_i", O_i + P_ij @ V_j, role="output")
        ctx.store("O", i, ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output"))
        ctx.store("L", i, ctx.keep("L_i", l_i.log(), role="stats"))
