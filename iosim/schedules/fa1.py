"""FlashAttention forward pass (Dao et al. 2022, arXiv 2205.14135, Algorithm 1).

Outer loop over key/value blocks j, inner loop over query blocks i. K_j and V_j are
loaded once; for every (i, j) the partial output O_i and the statistics ℓ_i, m_i are
read from HBM, updated on chip and written back. The repeated traffic is Q and O (T_c
passes), which is the Θ(N²d²/M) of Theorem 2.

Exact count (docs/spec/algorithms.md §3.1): 2·N·d + T_c·(3·N·d + 4·N) elements per head (the
first pass still reads the freshly initialised O, ℓ, m: convention C6). Causal (§5 there):
2·N·d + R·(3d + 4), R = Σ over active blocks of r_i. The initialisation of line 2 is
counted only with ``count_init``. With a block-sparsity mask this is Algorithm 5 (§3.3 there):
K_j, V_j are still loaded for every j (the load is outside the mask test), only nonzero
blocks are visited, and the initialisation counts when a query block has no nonzero block.

Paper symbol → code name:
  N → ``ctx.problem.seq_len_q`` / ``seq_len_kv``;  d → ``ctx.problem.head_dim``;
  B_r, B_c → ``ctx.blocks.block_q``, ``block_kv``;  T_c, T_r → the trip counts of
  ``ctx.kv_blocks()`` and ``ctx.q_blocks(visible_to=j)``;
  m_i, ℓ_i (HBM) → tensors ``"m"``, ``"l"``;  m̃_ij → ``m_tilde``;  P̃_ij → ``P_ij``;
  ℓ̃_ij → ``l_tilde``;  m_i^new, ℓ_i^new → ``m_new``, ``l_new``.
"""

from __future__ import annotations

import math

from ..engine.tiles import maximum


def fa1_forward(ctx) -> None:
    """Run FA1 Algorithm 1 (lines 2–15); line numbers in the comments."""
    # 2: initialise O, ℓ, m in HBM. Counted with count_init, and always when a block mask
    #    leaves some query block with no key block: its O_i is then the initial value
    #    (docs/spec/algorithms.md §3.3, Proposition 4's "we would still need to write the result O").
    empty_row = ctx.mask_info.has_empty_row()
    ctx.init("O", 0.0, force_count=empty_row)
    ctx.init("l", 0.0, force_count=empty_row)
    ctx.init("m", -math.inf, force_count=empty_row)
    for j in ctx.kv_blocks():                                      # 5: for 1 ≤ j ≤ T_c
        K_j = ctx.load("K", j)                                     # 6: load K_j, V_j (shared memory)
        V_j = ctx.load("V", j)
        for i in ctx.q_blocks(visible_to=j):                       # 7: for 1 ≤ i ≤ T_r (active only)
            Q_i = ctx.load("Q", i)                                 # 8: load Q_i, O_i, ℓ_i, m_i
            O_i = ctx.load("O", i)
            l_i = ctx.load("l", i)
            m_i = ctx.load("m", i)
            S_ij = ctx.keep("S_ij", (Q_i @ K_j.T) * ctx.softmax_scale, role="scores")  # 9
            S_ij = ctx.mask(S_ij, i, j)
            m_tilde = S_ij.rowmax()                                # 10: m̃_ij = rowmax(S_ij)
            # P̃_ij = exp(S_ij − m̃_ij); a row with no visible key here has m̃ = −∞ (inf_as_zero).
            P_ij = ctx.keep("S_ij", (S_ij - m_tilde.inf_as_zero().col()).exp(), role="scores")
            l_tilde = P_ij.rowsum()                                #     ℓ̃_ij = rowsum(P̃_ij)
            m_new = maximum(m_i, m_tilde)                          # 11: m_i^new
            m_base = m_new.inf_as_zero()
            old_scale = (m_i - m_base).exp()                       #     e^{m_i − m_new}: rescales the old state
            new_scale = (m_tilde - m_base).exp()                   #     e^{m̃_ij − m_new}: rescales this block
            l_new = old_scale * l_i + new_scale * l_tilde
            O_i = ctx.keep(                                        # 12: O_i ← diag(ℓ^new)^−1 (diag(ℓ_i) e^{m_i−m^new} O_i
                "O_i",                                             #        + e^{m̃_ij − m^new} P̃_ij V_j)
                l_new.reciprocal().col() * ((l_i * old_scale).col() * O_i + new_scale.col() * (P_ij @ V_j)),
                role="output",
            )
            ctx.store("O", i, O_i)                                 #     write O_i
            ctx.store("l", i, l_new)                               # 13: write ℓ_i ← ℓ^new, m_i ← m^new
            ctx.store("m", i, m_new)
            ctx.watch("l_i", l_new)
