"""FlashAttention backward pass (arXiv 2205.14135, Appendix B.4, Algorithm 4).

Outer loop over key/value blocks j (K_j, V_j loaded once; dK_j, dV_j accumulated on chip
and written once), inner loop over query blocks i: Q_i, O_i, dO_i, dQ_i, ℓ_i, m_i are
loaded every step and dQ_i is written back every step. P_ij is *recomputed* from the
stored statistics instead of being read from HBM.

Exact count (docs/spec/algorithms.md §3.2): 4·N·d + T_c·(5·N·d + 2·N) elements per head; causal
(§5 there): 4·N·d + R·(5d + 2). Initialising dQ, dK, dV in HBM (line 5) is counted only with
``count_init``. Dropout is not modelled (p_drop = 0).

Paper symbol → code name: τ → ``ctx.softmax_scale``; d̃K_j, d̃V_j → ``dK_j``, ``dV_j``;
ℓ_i, m_i → tensors ``"l"``, ``"m"``; D_i → ``D_i``.
"""

from __future__ import annotations

from .gqa import kv_gradient_targets, reduce_kv_gradients


def fa1_backward(ctx) -> None:
    """Run Algorithm 4 (lines 5–25); line numbers in the comments."""
    d = ctx.problem.head_dim
    dK, dV = kv_gradient_targets(ctx)                           # per-query-head buffers under GQA
    ctx.init("dQ", 0.0)                                         # 5: initialise dQ, dK, dV in HBM
    ctx.init(dK, 0.0)
    ctx.init(dV, 0.0)
    for j in ctx.kv_blocks():                                   # 6: for 1 ≤ j ≤ T_c
        K_j, V_j = ctx.load("K", j), ctx.load("V", j)           # 7: load K_j, V_j
        dK_j = ctx.fill("dK_j", j, 0.0, role="output", cols=d)  # 8: d̃K_j = 0, d̃V_j = 0 on chip
        dV_j = ctx.fill("dV_j", j, 0.0, role="output", cols=d)
        for i in ctx.q_blocks(visible_to=j):                    # 9: for 1 ≤ i ≤ T_r (active only)
            Q_i, O_i, dO_i = ctx.load("Q", i), ctx.load("O", i), ctx.load("dO", i)   # 10
            dQ_i, l_i, m_i = ctx.load("dQ", i), ctx.load("l", i), ctx.load("m", i)
            S_ij = ctx.keep("S_ij", (Q_i @ K_j.T) * ctx.softmax_scale, role="scores")  # 11: S = τ Q Kᵀ
            S_ij = ctx.mask(S_ij, i, j)                         # 12: mask
            P_ij = ctx.keep("S_ij", l_i.reciprocal().col() * (S_ij - m_i.inf_as_zero().col()).exp(),  # 13
                            role="scores")                      # (m_i = −∞, ℓ_i = 0: a row with no key, P = 0)
            dV_j = ctx.keep("dV_j", dV_j + P_ij.T @ dO_i, role="output")                 # 16
            dP_ij = ctx.keep("dP_ij", dO_i @ V_j.T, role="scores")                       # 17
            D_i = (dO_i * O_i).rowsum()                         # 19: D_i = rowsum(dO_i ∘ O_i), on chip
            dS_ij = ctx.keep("dP_ij", P_ij * (dP_ij - D_i.col()), role="scores")          # 20
            ctx.store("dQ", i, dQ_i + (dS_ij @ K_j) * ctx.softmax_scale)                # 21: write dQ_i
            dK_j = ctx.keep("dK_j", dK_j + (dS_ij.T @ Q_i) * ctx.softmax_scale, role="output")  # 22
        ctx.store(dK, j, dK_j)                                  # 24: write dK_j, dV_j
        ctx.store(dV, j, dV_j)
    reduce_kv_gradients(ctx)                                    # GQA: sum each group into dK, dV
