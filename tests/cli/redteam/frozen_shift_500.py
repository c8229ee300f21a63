"""Numerical shortcut: the shift is frozen at the first key block's row maximum + 500 and
never updated, so nothing is ever rescaled.

e^{S − shift} cannot overflow unless a later block's scores exceed the first block's by
~1200, and e^{−500} is still a normal double: exact to rounding on ordinary inputs and on
|S| ≲ 1000. Must fail exactness on an adversarial input (row maximum in a later block,
scores of ±1e4).
"""


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
        l_i = ctx.fill("l_i", i, 0.0, role="stats")
        shift = ctx.fill("m_i", i, 0.0, role="stats")
        first = True
        for j in ctx.kv_blocks(visible_to=i):
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)
            S = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
            if first:
                first = False
                shift = ctx.keep("m_i", S.rowmax().inf_as_zero() + 500.0, role="stats")
            P = ctx.keep("S_ij", (S - shift.col()).exp(), role="scores")
            l_i = ctx.keep("l_i", l_i + P.rowsum(), role="stats")
            O_i = ctx.keep("O_i", O_i + P @ V_j, role="output")
        ctx.store("O", i, ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output"))
        ctx.store("L", i, ctx.keep("L_i", shift + l_i.log(), role="stats"))


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
