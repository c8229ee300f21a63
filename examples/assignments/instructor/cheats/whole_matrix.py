"""Cheat (fa2): compute the whole N × N score matrix at once, like standard attention.

The output is exact and only Q, K, V, O, L cross HBM once each, but the whole of Q, K
and V sits on chip: `iosim grade` must fail it on capacity (ctx.read charges the whole
tensor to shared memory).
"""


def fa2_forward(ctx):
    Q, K, V = ctx.read("Q"), ctx.read("K"), ctx.read("V")
    S = ctx.mask((Q @ K.T) * ctx.softmax_scale)
    m = S.rowmax()
    P = (S - m.col()).exp()
    l = P.rowsum()
    ctx.write("O", l.reciprocal().col() * (P @ V))
    ctx.write("L", m + l.log())
