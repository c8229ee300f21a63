"""Split-KV forward pass ("Flash-Decoding"), as flash-attn's kernels run it (docs/spec/algorithms.md §6).

For decoding (few query rows against a long KV cache) one query block per head cannot
fill the GPU, so the key/value blocks are cut into S splits processed by separate thread
blocks. Each (query block i, split s) loads Q_i, walks its split's key blocks like
FlashAttention-2 and writes a normalised partial output Oaccum and its logsumexp
LSEaccum, both fp32. A split with no active key block writes zeros and −∞ and loads
nothing. A combine kernel then reads every split's LSEaccum and Oaccum and writes
O = Σ_s e^{LSE_s − L} O_s with L = log Σ_s e^{LSE_s}.

Counts per head, non-causal (§6 there): Q read S'·N_q·d (S' non-empty splits); K, V read
T_m·N_kv·d; Oaccum written and read S·N_q·d; LSEaccum written and read S·N_q; O written
N_q·d; L written N_q. With S = 1 the plain FlashAttention-2 kernel runs instead.

Code names: S → ``num_splits`` (chosen by the caller; by default flash-attn's heuristic,
:mod:`iosim.kernels.split_heuristic`);
O_s, LSE_s → tensors ``"Oaccum"``, ``"LSEaccum"``; m, ℓ → ``m_i``, ``l_i``.
"""

from __future__ import annotations

import math

from ..engine.tiles import maximum
from .fa2 import fa2_forward

#: the launch that runs the tiles (query block i, split s); the combine's is "combine"
SPLIT_KERNEL = "splitkv"


def fa2_splitkv_forward(ctx, num_splits: int, kv_descending: bool = False) -> None:
    """The split kernel over (query block, split), then the combine kernel.

    S = ``num_splits`` is the caller's (:func:`iosim.prepare` asks flash-attn's heuristic,
    :mod:`iosim.kernels.split_heuristic`, when the user gives none). ``kv_descending``: each
    split's key blocks from its last down, as flash-attn's split kernel walks them
    (``compute_attn_1rowblock_splitkv``: ``n_block = n_block_max - 1``, then ``--n_block``)."""
    ctx.set_num_splits(num_splits)
    if num_splits == 1:
        fa2_forward(ctx, kv_descending=kv_descending)
        return
    with ctx.kernel(SPLIT_KERNEL):
        for i in ctx.q_blocks():
            for s in ctx.splits(visible_to=i):
                with ctx.thread_block(("q", i.index, "split", s.index)):
                    _split_rows(ctx, i, s, kv_descending)
    with ctx.kernel("combine"):
        _combine(ctx)


def _split_rows(ctx, i, s, kv_descending: bool = False) -> None:
    """One thread block of the split kernel: query block i over the key blocks of split s."""
    d = ctx.problem.head_dim
    if not s.members:                                          # empty split: exits early
        ctx.store("Oaccum", i, ctx.fill("O_i", i, 0.0, role="output", cols=d), split=s)
        ctx.store("LSEaccum", i, ctx.fill("L_i", i, -math.inf, role="stats"), split=s)
        return
    Q_i = ctx.load("Q", i)                                     # every split reloads its Q tile
    O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
    l_i = ctx.fill("l_i", i, 0.0, role="stats")
    m_i = ctx.fill("m_i", i, -math.inf, role="stats")
    for j in ctx.kv_blocks(split=s, descending=kv_descending):  # FlashAttention-2's inner loop
        K_j, V_j = ctx.load("K", j), ctx.load("V", j)
        S_ij = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
        m_new = maximum(m_i, S_ij.rowmax())
        m_base = m_new.inf_as_zero()
        P_ij = ctx.keep("S_ij", (S_ij - m_base.col()).exp(), role="scores")
        rescale = (m_i - m_base).exp()                         # online-softmax rescaling
        l_i = ctx.keep("l_i", rescale * l_i + P_ij.rowsum(), role="stats")
        O_i = ctx.keep("O_i", rescale.col() * O_i + P_ij @ V_j, role="output")
        m_i = ctx.keep("m_i", m_new, role="stats")
    ctx.store("Oaccum", i, l_i.reciprocal().col() * O_i, split=s)   # this split's normalised O
    ctx.store("LSEaccum", i, m_i + l_i.log(), split=s)              # and its logsumexp


def _combine(ctx) -> None:
    """combine_attn_seqk_parallel: L = log Σ_s e^{LSE_s}; O = Σ_s e^{LSE_s − L} O_s."""
    for i in ctx.q_blocks():
        with ctx.thread_block(("q", i.index)):
            _combine_rows(ctx, i)


def _combine_rows(ctx, i) -> None:
    """One query block of the combine kernel. Every split's LSE is on chip at once (the
    kernel's sLSE, kMaxSplits × kBlockM), each under its own name; the Oaccum tiles pass
    through one buffer, each replacing the previous."""
    lse = [ctx.load("LSEaccum", i, split=s, name=f"LSEaccum_i,s={s.index}") for s in ctx.all_splits()]
    lse_max = lse[0]
    for x in lse[1:]:
        lse_max = maximum(lse_max, x)
    base = lse_max.inf_as_zero()
    total = ctx.fill("sum_i", i, 0.0, role="stats")
    for x in lse:
        total = total + (x - base).exp()
    L_i = ctx.keep("L_i", base + total.log(), role="stats")
    O_i = ctx.fill("O_i", i, 0.0, role="output", cols=ctx.problem.head_dim)
    for s, x in zip(ctx.all_splits(), lse):
        O_i = ctx.keep("O_i", O_i + (x - L_i.inf_as_zero()).exp().col() * ctx.load("Oaccum", i, split=s),
                       role="output")                           # L = −∞ (no key in any split): O = 0
    ctx.store("O", i, O_i)
    ctx.store("L", i, L_i)

