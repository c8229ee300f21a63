"""Hoarding (names): every S_ij and V_j is kept under ONE name made resident before the inner loop.

ctx.keep under a name that is already resident "replaces it in place", so the on-chip
charge stays one tile, while the Python handles of all the earlier tiles stay usable. With
the whole row of scores in hand the softmax is exact in two passes, no rescaling, and the
HBM traffic is FA2's. Must fail: capacity (the replaced tiles are still used) or a
ScheduleError on a tile used after it was replaced.
"""

import math

from iosim.engine.tiles import maximum


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        ctx.fill("S_row", i, 0.0, role="scores", cols=ctx.blocks.block_kv)   # name resident for the row
        ctx.fill("V_row", i, 0.0, role="input", cols=d)
        row = []
        for j in ctx.kv_blocks(visible_to=i):
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)
            S = ctx.keep("S_row", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
            V = ctx.keep("V_row", V_j, role="input")
            row.append((S, V))
        m = row[0][0].rowmax()
        for S, _ in row[1:]:
            m = maximum(m, S.rowmax())
        base = m.inf_as_zero().col()
        l = O = None
        for S, V in row:
            P = (S - base).exp()
            l = P.rowsum() if l is None else l + P.rowsum()
            O = P @ V if O is None else O + P @ V
        ctx.store("O", i, l.reciprocal().col() * O)
        ctx.store("L", i, m + l.log())


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
