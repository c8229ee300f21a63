"""Poisoned inputs: ctx.init("V", 0.0), then write O = 0 (the right answer for V = 0).

L is computed honestly (an online logsumexp; V_j is still loaded so the traffic is FA2's),
O is a tile of zeros. Against a reference computed from the zeroed V this passes. Must
fail: the inputs are read-only (runs) or exactness against a pristine reference.
"""

import math

from iosim.engine.tiles import maximum


def fa2_forward(ctx):
    ctx.init("V", 0.0)
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
        l_i = ctx.fill("l_i", i, 0.0, role="stats")
        m_i = ctx.fill("m_i", i, -math.inf, role="stats")
        for j in ctx.kv_blocks(visible_to=i):
            K_j, _ = ctx.load("K", j), ctx.load("V", j)
            S = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
            m_new = maximum(m_i, S.rowmax())
            base = m_new.inf_as_zero()
            l_i = ctx.keep("l_i", (m_i - base).exp() * l_i + (S - base.col()).exp().rowsum(), role="stats")
            m_i = ctx.keep("m_i", m_new, role="stats")
        ctx.store("O", i, O_i)
        ctx.store("L", i, ctx.keep("L_i", m_i + l_i.log(), role="stats"))


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
