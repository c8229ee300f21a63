"""Instructor solution: FlashAttention-2's forward pass (Dao 2023, Algorithm 1).

Grade it:  iosim grade examples/assignments/instructor/fa2_solution.py

Outer loop over query blocks i, inner loop over key/value blocks j. O_i, ℓ_i and m_i stay
on chip for the whole inner loop (made with ctx.fill before it, updated with ctx.keep
under the same names inside it); O_i and the logsumexp L_i are written once per query
block.
"""

import math

from iosim.engine.tiles import maximum

WHY_TRAFFIC_DIFFERS = """
FA1 keeps K_j and V_j on chip in its outer loop and streams the query blocks through the inner loop, so for
every pair of blocks it reads Q_i, O_i, ℓ_i and m_i from HBM and writes O_i, ℓ_i and m_i back: Q and O cross
the HBM boundary T_c times. FA2 swaps the loops, so Q_i and the running O_i, ℓ_i, m_i stay on chip through the
whole inner loop and are written once, and only K and V are re-read, T_r times, which with B_r ≤ B_c and the
O writes gone moves fewer bytes.
"""


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():                                        # 3: for each query block
        Q_i = ctx.load("Q", i)                                      # 4: load Q_i (shared memory)
        O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)        # 5: O_i = 0, ℓ_i = 0, m_i = −∞ on chip
        l_i = ctx.fill("l_i", i, 0.0, role="stats")
        m_i = ctx.fill("m_i", i, -math.inf, role="stats")
        for j in ctx.kv_blocks(visible_to=i):                       # 6: active key blocks only
            K_j = ctx.load("K", j)                                  # 7: load K_j, V_j
            V_j = ctx.load("V", j)
            S_ij = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")  # 8
            m_new = maximum(m_i, S_ij.rowmax())                     # 9: running maximum
            m_base = m_new.inf_as_zero()                            #    −∞ while a row has seen no key
            P_ij = ctx.keep("S_ij", (S_ij - m_base.col()).exp(), role="scores")
            rescale = (m_i - m_base).exp()                          #    e^{m_old − m_new}
            l_i = ctx.keep("l_i", rescale * l_i + P_ij.rowsum(), role="stats")
            O_i = ctx.keep("O_i", rescale.col() * O_i + P_ij @ V_j, role="output")  # 10
            m_i = ctx.keep("m_i", m_new, role="stats")
        O_i = ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output")      # 12: O_i / ℓ_i
        L_i = ctx.keep("L_i", m_i + l_i.log(), role="stats")                    # 13: L_i = m_i + log ℓ_i
        ctx.store("O", i, O_i)                                      # 14
        ctx.store("L", i, L_i)                                      # 15
