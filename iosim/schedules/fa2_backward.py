"""FlashAttention-2 backward pass (arXiv 2307.08691, Algorithm 2).

First D = rowsum(dO ∘ O) is computed in one pass and written (line 4). Then one thread
block per key/value block j (outer loop) walks the query blocks i, loading Q_i, O_i,
dO_i, dQ_i, L_i, D_i; P is recomputed from the logsumexp L; dQ_i is read, updated and
written back in every step (the kernels do it with atomic adds).

Exact count (docs/spec/algorithms.md §4.2): 2·N·d + N + 4·N·d + T_c·(5·N·d + 2·N) elements per head
(canonical reading: dQ_i read once per step, O_i loaded as the listing says although only
line 4 uses it). ``dq_read_twice=True`` takes line 15 literally and reads dQ_i a second
time. Causal (§5 there): the inner loop visits active blocks only. Initialising dQ in HBM
(line 3) is counted only with ``count_init``.

Paper symbol → code name: L_i → tensor ``"L"``; D_i → tensor ``"D"``; dK_j, dV_j → on-chip
accumulators of the same names.
"""

from __future__ import annotations

from .gqa import kv_gradient_targets, reduce_kv_gradients


def fa2_backward(ctx, dq_read_twice: bool = False) -> None:
    """Run Algorithm 2 (lines 3–19); line numbers in the comments."""
    d = ctx.problem.head_dim
    dK, dV = kv_gradient_targets(ctx)                           # per-query-head buffers under GQA
    ctx.init("dQ", 0.0)                                         # 3: initialise dQ in HBM
    for i in ctx.q_blocks():                                    # 4: D = rowsum(dO ∘ O), write D
        dO_i, O_i = ctx.load("dO", i), ctx.load("O", i)
        ctx.store("D", i, (dO_i * O_i).rowsum())
    for j in ctx.kv_blocks():                                   # 5: for 1 ≤ j ≤ T_c
        K_j, V_j = ctx.load("K", j), ctx.load("V", j)           # 6: load K_j, V_j
        dK_j = ctx.fill("dK_j", j, 0.0, role="output", cols=d)  # 7: dK_j = 0, dV_j = 0 on chip
        dV_j = ctx.fill("dV_j", j, 0.0, role="output", cols=d)
        for i in ctx.q_blocks(visible_to=j):                    # 8: for 1 ≤ i ≤ T_r (active only)
            Q_i, O_i, dO_i = ctx.load("Q", i), ctx.load("O", i), ctx.load("dO", i)  # 9
            dQ_i, L_i, D_i = ctx.load("dQ", i), ctx.load("L", i), ctx.load("D", i)
            S_ij = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")  # 10
            P_ij = ctx.keep("S_ij", (S_ij - L_i.inf_as_zero().col()).exp(), role="scores")  # 11: P = exp(S − L_i)
            #   (L_i = −∞: a row with no visible key, whose P is 0, not e^{−∞+∞})
            dV_j = ctx.keep("dV_j", dV_j + P_ij.T @ dO_i, role="output")     # 12
            dP_ij = ctx.keep("dP_ij", dO_i @ V_j.T, role="scores")           # 13
            dS_ij = ctx.keep("dP_ij", P_ij * (dP_ij - D_i.col()), role="scores")  # 14
            if dq_read_twice:                                   # 15 read literally: load dQ_i again
                dQ_i = ctx.load("dQ", i)
            ctx.store("dQ", i, dQ_i + (dS_ij @ K_j) * ctx.softmax_scale)      # 15: update and write back
            dK_j = ctx.keep("dK_j", dK_j + (dS_ij.T @ Q_i) * ctx.softmax_scale, role="output")  # 16
        ctx.store(dK, j, dK_j)                                  # 18: write dK_j, dV_j
        ctx.store(dV, j, dV_j)
    reduce_kv_gradients(ctx)                                    # GQA: sum each group into dK, dV
