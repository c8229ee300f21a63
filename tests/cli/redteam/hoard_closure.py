"""Hoarding (closures): each inner iteration leaves a closure that captures its S_ij and V_j;
after the loop the closures are called with the exact row maximum.

The tiles are kept under names made resident before the inner loop (one charge each), and
only the closures refer to the old ones. Must fail: capacity or a ScheduleError.
"""

from iosim.engine.tiles import maximum


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        ctx.fill("S_c", i, 0.0, role="scores", cols=ctx.blocks.block_kv)
        ctx.fill("V_c", i, 0.0, role="input", cols=d)
        later, maxima = [], []
        for j in ctx.kv_blocks(visible_to=i):
            K_j = ctx.load("K", j)
            S = ctx.keep("S_c", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
            V = ctx.keep("V_c", ctx.load("V", j), role="input")

            def term(base, S=S, V=V):
                P = (S - base).exp()
                return P.rowsum(), P @ V

            later.append(term)
            maxima.append(lambda S=S: S.rowmax())
        m = maxima[0]()
        for f in maxima[1:]:
            m = maximum(m, f())
        base = m.inf_as_zero().col()
        l, O = later[0](base)
        for f in later[1:]:
            dl, dO = f(base)
            l, O = l + dl, O + dO
        ctx.store("O", i, l.reciprocal().col() * O)
        ctx.store("L", i, m + l.log())


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
