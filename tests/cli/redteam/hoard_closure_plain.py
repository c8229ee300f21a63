"""Hoarding (closures, no name tricks): closures made in the inner loop capture S_ij and V_j
held only in Python; they are called after the loop with the exact row maximum.

Must fail on capacity: the captured tiles ended with their iterations.
"""

from iosim.engine.tiles import maximum


def fa2_forward(ctx):
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        terms = []
        for j in ctx.kv_blocks(visible_to=i):
            S = ctx.mask((Q_i @ ctx.load("K", j).T) * ctx.softmax_scale, i, j)
            V = ctx.load("V", j)
            terms.append(lambda base, S=S, V=V: ((S - base).exp().rowsum(), (S - base).exp() @ V, S.rowmax()))
        m = None
        for S_max in (t(0.0)[2] for t in terms):
            m = S_max if m is None else maximum(m, S_max)
        base = m.inf_as_zero().col()
        l, O, _ = terms[0](base)
        for t in terms[1:]:
            dl, dO, _ = t(base)
            l, O = l + dl, O + dO
        ctx.store("O", i, l.reciprocal().col() * O)
        ctx.store("L", i, m + l.log())
