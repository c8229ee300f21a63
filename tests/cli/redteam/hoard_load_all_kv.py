"""Loading all of K/V in one iteration: list the key blocks first, then load every K_j, V_j
in the query block's own iteration (outside the inner loop).

Every load of K is resident under the same name "K_j", which replaces the last one, so the
shared memory charge is one K_j and one V_j although all of them are held; K and V are
still read once per query block, as in FA2. The scores are temporaries, and the softmax is
exact in two passes. Must fail: capacity (all K_j/V_j on chip at once) or a ScheduleError.
"""

from iosim.engine.tiles import maximum


def fa2_forward(ctx):
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        blocks = list(ctx.kv_blocks(visible_to=i))       # the loop runs to its end: blocks in hand
        K = [ctx.load("K", j) for j in blocks]
        V = [ctx.load("V", j) for j in blocks]
        S = [ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j) for K_j, j in zip(K, blocks)]
        m = S[0].rowmax()
        for s in S[1:]:
            m = maximum(m, s.rowmax())
        base = m.inf_as_zero().col()
        P = [(s - base).exp() for s in S]
        l, O = P[0].rowsum(), P[0] @ V[0]
        for p, v in zip(P[1:], V[1:]):
            l, O = l + p.rowsum(), O + p @ v
        ctx.store("O", i, l.reciprocal().col() * O)
        ctx.store("L", i, m + l.log())


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
