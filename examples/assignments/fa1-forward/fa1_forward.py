"""Assignment: FlashAttention's forward pass (Dao et al. 2022, arXiv 2205.14135, Algorithm 1).

Read README.md in this folder, fill in the TODOs, then grade your work:

    iosim grade fa1_forward.py --assignment fa1

Paper symbol → code: N → ctx.problem.seq_len_q / seq_len_kv; d → ctx.problem.head_dim;
B_r, B_c → ctx.blocks.block_q, block_kv; τ = 1/√d → ctx.softmax_scale;
m_i, ℓ_i in HBM → tensors "m", "l"; m̃_ij, P̃_ij, ℓ̃_ij → m_tilde, P_ij, l_tilde.
"""

import math  # noqa: F401  (m starts at −math.inf)

from iosim.engine.tiles import maximum  # noqa: F401  (m_new = maximum(m_i, m_tilde))


def fa1_forward(ctx):
    # TODO line 2: initialise O = 0, ℓ = 0 and m = −∞ in HBM (ctx.init("O", 0.0), ...).
    for j in ctx.kv_blocks():                                       # line 5: for each key/value block j
        K_j = ctx.load("K", j)                                      # line 6: load K_j, V_j into shared memory
        V_j = ctx.load("V", j)
        for i in ctx.q_blocks(visible_to=j):                        # line 7: query blocks that see block j
            # TODO line 8: load Q_i, O_i, ℓ_i, m_i from HBM (tensors "Q", "O", "l", "m").
            # TODO line 9: S_ij = τ · Q_i K_jᵀ, masked with ctx.mask(..., i, j), kept as "S_ij" (role "scores").
            # TODO line 10: m̃_ij = rowmax(S_ij); P̃_ij = exp(S_ij − m̃_ij); ℓ̃_ij = rowsum(P̃_ij).
            #               A row with no visible key has m̃ = −∞: subtract m_tilde.inf_as_zero().
            # TODO line 11: m_new = max(m_i, m̃_ij); ℓ_new = e^{m_i − m_new} ℓ_i + e^{m̃_ij − m_new} ℓ̃_ij.
            # TODO line 12: O_i = diag(ℓ_new)^−1 (diag(ℓ_i) e^{m_i−m_new} O_i + e^{m̃_ij−m_new} P̃_ij V_j),
            #               kept as "O_i" (role "output"); write it to HBM (ctx.store("O", i, O_i)).
            # TODO line 13: write ℓ_i ← ℓ_new and m_i ← m_new to HBM.
            pass
