"""Cheat (fa2): the right output with extra HBM traffic.

The loop nest is FA2's, but Q_i is loaded again for every key block, as a kernel that
does not keep Q_i in shared memory would: exact output, tiles fit, and T_c times FA2's Q
reads. `iosim grade` must fail it on IO.
"""

import math

from iosim.engine.tiles import maximum


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
        l_i = ctx.fill("l_i", i, 0.0, role="stats")
        m_i = ctx.fill("m_i", i, -math.inf, role="stats")
        for j in ctx.kv_blocks(visible_to=i):
            Q_i = ctx.load("Q", i)                                   # re-read for every j
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)
            S_ij = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
            m_new = maximum(m_i, S_ij.rowmax())
            m_base = m_new.inf_as_zero()
            P_ij = ctx.keep("S_ij", (S_ij - m_base.col()).exp(), role="scores")
            rescale = (m_i - m_base).exp()
            l_i = ctx.keep("l_i", rescale * l_i + P_ij.rowsum(), role="stats")
            O_i = ctx.keep("O_i", rescale.col() * O_i + P_ij @ V_j, role="output")
            m_i = ctx.keep("m_i", m_new, role="stats")
        ctx.store("O", i, ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output"))
        ctx.store("L", i, ctx.keep("L_i", m_i + l_i.log(), role="stats"))
