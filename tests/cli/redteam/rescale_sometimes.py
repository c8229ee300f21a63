"""Numerical shortcut: the running maximum is tracked, but O_i is rescaled only on even key
blocks (ℓ_i always), "to save multiplications".

Must fail exactness whenever a row's maximum grows on an odd block.
"""

import math

from iosim.engine.tiles import maximum


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
        l_i = ctx.fill("l_i", i, 0.0, role="stats")
        m_i = ctx.fill("m_i", i, -math.inf, role="stats")
        for j in ctx.kv_blocks(visible_to=i):
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)
            S = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
            m_new = maximum(m_i, S.rowmax())
            base = m_new.inf_as_zero()
            P = ctx.keep("S_ij", (S - base.col()).exp(), role="scores")
            rescale = (m_i - base).exp()
            l_i = ctx.keep("l_i", rescale * l_i + P.rowsum(), role="stats")
            O_i = ctx.keep("O_i", (rescale.col() * O_i if j.index % 2 == 0 else O_i) + P @ V_j, role="output")
            m_i = ctx.keep("m_i", m_new, role="stats")
        ctx.store("O", i, ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output"))
        ctx.store("L", i, ctx.keep("L_i", m_i + l_i.log(), role="stats"))


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
