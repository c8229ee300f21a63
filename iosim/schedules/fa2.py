"""FlashAttention-2 forward pass (Dao 2023, arXiv 2307.08691, Algorithm 1).

Outer loop over query blocks i, inner loop over key/value blocks j. The output
accumulator O_i and the row statistics m_i, ℓ_i stay on chip for the whole inner loop;
O_i and the logsumexp L_i are written to HBM once per query block. The repeated HBM
traffic is K and V, read once per query block (T_r passes).

Exact count (docs/spec/algorithms.md §4.1): 2·N·d + N + 2·T_r·N·d elements per head; with causal
block skipping (§5 there) the K/V term becomes 2·C·d, C = Σ over active blocks of c_j.

Paper symbol → code name:
  N → ``ctx.problem.seq_len_q`` / ``seq_len_kv``;  d → ``ctx.problem.head_dim``;
  B_r, B_c → ``ctx.blocks.block_q``, ``block_kv``;  T_r, T_c → the trip counts of
  ``ctx.q_blocks()`` and ``ctx.kv_blocks(visible_to=i)``;
  m_i^(j) → ``m_i``;  ℓ_i^(j) → ``l_i``;  O_i^(j) → ``O_i``;  S_i^(j), P̃_i^(j) → ``S_ij``;
  L_i → ``L_i``.
"""

from __future__ import annotations

import math

from ..engine.tiles import maximum


def fa2_forward(ctx, kv_descending: bool = False, tma_box: int = 0) -> None:
    """Run FA2 Algorithm 1 (lines 3–16); line numbers in the comments.

    ``kv_descending``: walk the key blocks from last to first, as flash-attn's kernel does
    (same counts; it changes which tiles concurrent thread blocks share in the L2).
    ``tma_box``: Q, K, V arrive by TMA in whole tiles, B rows × the kernel's head dim
    (cuDNN's Hopper kernel: a ragged block and the columns past d count; O and L do not).
    Both loops are interchangeable: a query block's work depends only on its rows and its
    active key blocks, and every inner iteration finds O_i, ℓ_i, m_i filled or kept at the
    same shapes, so a count may run one body per group of identical blocks.
    """
    d = ctx.problem.head_dim
    box = {"whole_rows": True, "box_cols": tma_box} if tma_box else {}
    for i in ctx.q_blocks(interchangeable=True):                   # 3: for 1 ≤ i ≤ T_r
        with ctx.thread_block(("q", i.index)):                     #    one thread block per query block
            Q_i = ctx.load("Q", i, **box)                          # 4: load Q_i (shared memory)
            O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)   # 5: on chip, O_i = 0 (registers)
            l_i = ctx.fill("l_i", i, 0.0, role="stats")            #    ℓ_i = 0
            m_i = ctx.fill("m_i", i, -math.inf, role="stats")      #    m_i = −∞
            for j in ctx.kv_blocks(visible_to=i, descending=kv_descending,   # 6: for 1 ≤ j ≤ T_c (active)
                                   interchangeable=True):
                K_j = ctx.load("K", j, **box)                      # 7: load K_j, V_j
                V_j = ctx.load("V", j, **box)
                S_ij = ctx.keep("S_ij", (Q_i @ K_j.T) * ctx.softmax_scale, role="scores")  # 8
                S_ij = ctx.mask(S_ij, i, j)
                m_new = maximum(m_i, S_ij.rowmax())                # 9: m_i^(j) = max(m_i^(j−1), rowmax(S))
                m_base = m_new.inf_as_zero()                       #    (−∞ while a row has seen no visible key)
                P_ij = ctx.keep("S_ij", (S_ij - m_base.col()).exp(), role="scores")  # P̃ = exp(S − m^(j)), overwrites S
                rescale = (m_i - m_base).exp()                     #    e^{m^(j−1) − m^(j)}: the online-softmax rescaling
                l_i = ctx.keep("l_i", rescale * l_i + P_ij.rowsum(), role="stats")
                O_i = ctx.keep("O_i", rescale.col() * O_i + P_ij @ V_j, role="output")  # 10
                m_i = ctx.keep("m_i", m_new, role="stats")
                ctx.watch("m_i", m_i)
                ctx.watch("l_i", l_i)
            O_i = ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output")  # 12: O_i = diag(ℓ_i)^−1 O_i
            L_i = ctx.keep("L_i", m_i + l_i.log(), role="stats")       # 13: L_i = m_i + log ℓ_i
            ctx.store("O", i, O_i)                                 # 14: write O_i
            ctx.store("L", i, L_i)                                 # 15: write L_i
