"""Assignment: FlashAttention-2's forward pass (Dao 2023, arXiv 2307.08691, Algorithm 1).

Read README.md in this folder, fill in the TODOs, then grade your work:

    iosim grade fa2_forward.py --assignment fa2

Paper symbol → code: N → ctx.problem.seq_len_q / seq_len_kv; d → ctx.problem.head_dim;
B_r, B_c → ctx.blocks.block_q, block_kv; τ = 1/√d → ctx.softmax_scale;
m_i^(j), ℓ_i^(j), O_i^(j) → m_i, l_i, O_i; S_i^(j), P̃_i^(j) → S_ij, P_ij; L_i → L_i.
"""

import math

from iosim.engine.tiles import maximum  # noqa: F401  (you will need it: m_new = maximum(m_i, ...))

WHY_TRAFFIC_DIFFERS = """
TODO: in two sentences, why does FA2 move fewer HBM bytes than FA1? Compare
`iosim simulate --hw toy --algo fa1 -N 1024 -d 32` with `--algo fa2`, tensor by tensor.
"""


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():                                        # line 3: for each query block i
        Q_i = ctx.load("Q", i)                                      # line 4: load Q_i into shared memory
        O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)        # line 5: O_i = 0, ℓ_i = 0, m_i = −∞ on chip
        l_i = ctx.fill("l_i", i, 0.0, role="stats")
        m_i = ctx.fill("m_i", i, -math.inf, role="stats")
        for j in ctx.kv_blocks(visible_to=i):                       # line 6: key blocks with a visible key
            # TODO line 7: load K_j and V_j.
            # TODO line 8: S_ij = τ · Q_i K_jᵀ, masked with ctx.mask(..., i, j), kept as "S_ij" (role "scores").
            # TODO line 9: m_new = max(m_i, rowmax(S_ij)); P̃_ij = exp(S_ij − m_new), kept over "S_ij";
            #              ℓ_i = e^{m_i − m_new} · ℓ_i + rowsum(P̃_ij).
            #              While a row has seen no visible key m_new is −∞: subtract m_new.inf_as_zero().
            # TODO line 10: O_i = diag(e^{m_i − m_new}) O_i + P̃_ij V_j; then m_i = m_new.
            # Update ℓ_i, O_i, m_i with ctx.keep under the names filled above ("l_i", "O_i", "m_i"):
            # that keeps them on chip across the inner loop.
            pass
        # TODO line 12: O_i = diag(ℓ_i)^−1 O_i      (l_i.reciprocal().col() * O_i)
        # TODO line 13: L_i = m_i + log(ℓ_i)
        L_i = ctx.fill("L_i", i, 0.0, role="stats")                 # placeholder: replace with line 13
        ctx.store("O", i, O_i)                                      # line 14: write O_i
        ctx.store("L", i, L_i)                                      # line 15: write L_i
