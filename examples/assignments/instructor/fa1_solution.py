"""Instructor solution: FlashAttention's forward pass (Dao et al. 2022, Algorithm 1).

Grade it:  iosim grade examples/assignments/instructor/fa1_solution.py

Outer loop over key/value blocks j, inner loop over query blocks i. K_j and V_j are
loaded once; for every active (j, i) the partial output O_i and the statistics ℓ_i, m_i
are read from HBM, updated on chip and written back.
"""

import math

from iosim.engine.tiles import maximum


def fa1_forward(ctx):
    ctx.init("O", 0.0)                                              # 2: O = 0, ℓ = 0, m = −∞ in HBM
    ctx.init("l", 0.0)
    ctx.init("m", -math.inf)
    for j in ctx.kv_blocks():                                       # 5: for each key/value block
        K_j = ctx.load("K", j)                                      # 6: load K_j, V_j (shared memory)
        V_j = ctx.load("V", j)
        for i in ctx.q_blocks(visible_to=j):                        # 7: active query blocks only
            Q_i = ctx.load("Q", i)                                  # 8: load Q_i, O_i, ℓ_i, m_i
            O_i = ctx.load("O", i)
            l_i = ctx.load("l", i)
            m_i = ctx.load("m", i)
            S_ij = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")  # 9
            m_tilde = S_ij.rowmax()                                 # 10: m̃_ij, P̃_ij, ℓ̃_ij
            P_ij = ctx.keep("S_ij", (S_ij - m_tilde.inf_as_zero().col()).exp(), role="scores")
            l_tilde = P_ij.rowsum()
            m_new = maximum(m_i, m_tilde)                           # 11: m_new, ℓ_new
            m_base = m_new.inf_as_zero()
            old_scale = (m_i - m_base).exp()                        #     e^{m_i − m_new}
            new_scale = (m_tilde - m_base).exp()                    #     e^{m̃_ij − m_new}
            l_new = old_scale * l_i + new_scale * l_tilde
            # 12: O_i ← diag(ℓ_new)^−1 (diag(ℓ_i) e^{m_i−m_new} O_i + e^{m̃_ij−m_new} P̃_ij V_j)
            O_i = ctx.keep("O_i", l_new.reciprocal().col()
                           * ((l_i * old_scale).col() * O_i + new_scale.col() * (P_ij @ V_j)), role="output")
            ctx.store("O", i, O_i)                                  #     write O_i
            ctx.store("l", i, l_new)                                # 13: write ℓ_i, m_i
            ctx.store("m", i, m_new)
