"""Hoarding (names, outside every loop): walk the loops empty to learn the blocks, then load
every tile FA2 would load in the run's own scope, where nothing is ever released.

Q_i, K_j and V_j are resident under the names "Q_i", "K_j", "V_j", each load replacing the
last, so shared memory is charged for one of each while every tile stays usable. The loads
are exactly FA2's (Q once; K_j, V_j once per visible (i, j)), so the traffic matches and the
two-pass softmax is exact. Must fail: capacity or a ScheduleError.
"""

from iosim.engine.tiles import maximum


def fa2_forward(ctx):
    rows = list(ctx.q_blocks())
    visible = {i.index: list(ctx.kv_blocks(visible_to=i)) for i in rows}
    Q = {i.index: ctx.load("Q", i) for i in rows}
    KV = {(i.index, j.index): (ctx.load("K", j), ctx.load("V", j)) for i in rows for j in visible[i.index]}
    for i in rows:
        S = [(ctx.mask((Q[i.index] @ KV[i.index, j.index][0].T) * ctx.softmax_scale, i, j), KV[i.index, j.index][1])
             for j in visible[i.index]]
        m = S[0][0].rowmax()
        for s, _ in S[1:]:
            m = maximum(m, s.rowmax())
        base = m.inf_as_zero().col()
        l = O = None
        for s, v in S:
            P = (s - base).exp()
            l = P.rowsum() if l is None else l + P.rowsum()
            O = P @ v if O is None else O + P @ v
        ctx.store("O", i, l.reciprocal().col() * O)
        ctx.store("L", i, m + l.log())


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
