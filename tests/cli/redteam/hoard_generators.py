"""Hoarding (generators): one suspended generator per key block, each paused inside its own
iteration of a nested kv loop, right after loading its K_j and V_j.

Generator k opens a kv loop inside generator k−1's live iteration and walks it to block k,
so every K_j, V_j is in a live iteration at the same time; the loads all use the names
"K_j", "V_j", so the nested ones replace the outer ones' charge. K and V are loaded once
per visible (i, j), FA2's traffic, and the softmax is exact in two passes. Must fail:
capacity or a ScheduleError.
"""

from iosim.engine.tiles import maximum


def _park(ctx, i, k, out):
    for j in ctx.kv_blocks(visible_to=i):
        if j.index == k:
            out.append((j, ctx.load("K", j), ctx.load("V", j)))
            yield                           # suspended inside iteration k
            return


def fa2_forward(ctx):
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        ks = [j.index for j in ctx.kv_blocks(visible_to=i)]
        parked, gens = [], []
        for k in ks:
            g = _park(ctx, i, k, parked)
            next(g)
            gens.append(g)
        S = [(ctx.mask((Q_i @ K.T) * ctx.softmax_scale, i, j), V) for j, K, V in parked]
        m = S[0][0].rowmax()
        for s, _ in S[1:]:
            m = maximum(m, s.rowmax())
        base = m.inf_as_zero().col()
        l = O = None
        for s, V in S:
            P = (s - base).exp()
            l = P.rowsum() if l is None else l + P.rowsum()
            O = P @ V if O is None else O + P @ V
        ctx.store("O", i, l.reciprocal().col() * O)
        ctx.store("L", i, m + l.log())
        for g in reversed(gens):
            g.close()


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
