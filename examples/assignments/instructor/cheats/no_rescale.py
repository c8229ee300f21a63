"""Cheat (fa2): FlashAttention-2 without the online-softmax rescaling e^{m − m_new}.

Every tile fits and the HBM traffic is exactly FA2's, but when a row's running maximum
grows the old ℓ_i and O_i keep the old scale: `iosim grade` must fail it on exactness.
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
            S_ij = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
            m_i = ctx.keep("m_i", maximum(m_i, S_ij.rowmax()), role="stats")
            P_ij = ctx.keep("S_ij", (S_ij - m_i.inf_as_zero().col()).exp(), role="scores")
            l_i = ctx.keep("l_i", l_i + P_ij.rowsum(), role="stats")          # no e^{m_old − m_new}
            O_i = ctx.keep("O_i", O_i + P_ij @ V_j, role="output")            # no e^{m_old − m_new}
        ctx.store("O", i, ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output"))
        ctx.store("L", i, ctx.keep("L_i", m_i + l_i.log(), role="stats"))
