"""Numerical shortcut: no maximum at all, the scores are shifted by a constant 600 before
the exponential (the "large" input has |S| up to ~1000, e^{400} is finite).

Must fail exactness on an adversarial input (scores of ±1e4 overflow or underflow).
"""


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
        l_i = ctx.fill("l_i", i, 0.0, role="stats")
        for j in ctx.kv_blocks(visible_to=i):
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)
            P = ctx.keep("S_ij", (ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j) - 600.0).exp(), role="scores")
            l_i = ctx.keep("l_i", l_i + P.rowsum(), role="stats")
            O_i = ctx.keep("O_i", O_i + P @ V_j, role="output")
        ctx.store("O", i, ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output"))
        ctx.store("L", i, ctx.keep("L_i", l_i.log() + 600.0, role="stats"))


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
