"""cuDNN's decode forward (one query row), as PyTorch 2.11 runs it with cuDNN 9.19 on Hopper
(``…sm80_flash_fprop_wmma_f16…`` and ``cudnn::lean_reduction_kernel``; measured on an H200 and an
H100: docs/validation/2026-12-06-cudnn-splits.md, docs/spec/kernels.md §8).

It runs the problem of :func:`iosim.workload.layouts.decode_layout`: the g = H / H_kv query heads
of a K/V head are g rows of one head. The keys are cut into S splits (the caller's
``num_splits``: :func:`iosim.kernels.cudnn_preset.decode_splits`).

1. The decode kernel, one thread block a split of a K/V head (``halves`` = ⌈d / 128⌉ of them above
   d = 128, each with half of the head dim's outputs): the block loads its group's Q rows, walks its
   split's key blocks of B_c = 128 keys like FlashAttention-2 (K_j, V_j, online softmax), and
   writes its partial O (fp32) with the rows' maxima m and sums ℓ (fp32), or, with S = 1, O and
   the logsumexp L. Above d = 128 a block loads Q again at every key block, and both blocks of a
   split load all of K_j and half of V_j. The engine tiles no head-dim columns, so the first block
   loads V_j and writes everything, the second loads Q and K only (every byte moved is counted;
   the second block's half-column products are counted whole, as in ``fa2_kernel_backward``).
   The key blocks are split as flash-attn's split kernel splits them (⌈T_c / S⌉ consecutive blocks
   a split), so a split may have none; at d ≤ 128 it still loads its Q rows, and every split writes
   its partial results (those of a split with no key: O = 0, m = −∞, ℓ = 0).
2. Where S > 1, the reduction: every split's m and ℓ (read ``halves`` times: once for each half of
   the head dim) and partial O of the rows, then O = Σ_s w_s O_s / Σ_s w_s, w_s = e^{m_s − M} ℓ_s,
   M = max_s m_s, and L = M + log Σ_s w_s.

Per K/V head and split, at d ≤ 128 (exact tiles): Q r g·d; K, V r N_s·d (N_s keys of the split);
Oaccum w g·d (fp32); m_accum, l_accum w g (fp32); reduction: m_accum, l_accum r S·g, Oaccum r
S·g·d, O w g·d, L w g. The block's Q tile is 16 rows from the group's first query head, so it
also loads later groups' rows, unused: those bytes are the kernel's, not the attention's, and
:mod:`iosim.gpu.cudnn_lsu` adds them where it compares with the GPU's counters.
"""

from __future__ import annotations

import math

from ..engine.tiles import maximum

#: the launch's two kernels
DECODE, REDUCTION = "decode", "reduction"


def cudnn_decode(ctx, num_splits: int = 1, halves: int = 1) -> None:
    """The decode kernel over (K/V head, split, half), then, with S > 1, the reduction."""
    ctx.set_num_splits(num_splits)
    with ctx.kernel(DECODE):
        for i in ctx.q_blocks():                                   # one block of the group's g rows
            for s in ctx.splits(visible_to=i):
                for half in range(halves):                         # grid x: S · ⌈d / 128⌉
                    with ctx.thread_block(("split", s.index, half)):
                        _split_block(ctx, i, s, first=half == 0, per_key_block=halves > 1)
    if num_splits > 1:
        with ctx.kernel(REDUCTION):
            for i in ctx.q_blocks():
                with ctx.thread_block(("q", i.index)):
                    _reduce(ctx, i, halves)


def _split_block(ctx, i, s, first: bool, per_key_block: bool) -> None:
    """One thread block of the decode kernel: the group's rows i over split s's key blocks
    (``first``: it loads V and writes the results; ``per_key_block``: Q again every key block)."""
    d = ctx.problem.head_dim
    Q_i = None if per_key_block else ctx.load("Q", i)
    if not s.members:                                              # a split with no key block
        if first:
            _write(ctx, i, s, ctx.fill("O_i", i, 0.0, role="output", cols=d),
                   ctx.fill("m_i", i, -math.inf, role="stats"), ctx.fill("l_i", i, 0.0, role="stats"))
        return
    O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
    l_i = ctx.fill("l_i", i, 0.0, role="stats")
    m_i = ctx.fill("m_i", i, -math.inf, role="stats")
    for j in ctx.kv_blocks(split=s):
        if per_key_block:
            Q_i = ctx.load("Q", i)
        K_j = ctx.load("K", j)
        S_ij = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
        m_new = maximum(m_i, S_ij.rowmax())
        m_base = m_new.inf_as_zero()
        P_ij = ctx.keep("S_ij", (S_ij - m_base.col()).exp(), role="scores")
        rescale = (m_i - m_base).exp()
        l_i = ctx.keep("l_i", rescale * l_i + P_ij.rowsum(), role="stats")
        if first:                                                  # (the other half's block: its V half)
            O_i = ctx.keep("O_i", rescale.col() * O_i + P_ij @ ctx.load("V", j), role="output")
        m_i = ctx.keep("m_i", m_new, role="stats")
    if first:
        _write(ctx, i, s, ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output"), m_i, l_i)


def _write(ctx, i, s, O_i, m_i, l_i) -> None:
    """The block's results: with S = 1 O and L = m + log ℓ; else the split's O, m and ℓ (fp32)."""
    if ctx.num_splits == 1:
        ctx.store("O", i, O_i)
        ctx.store("L", i, m_i + l_i.log())
        return
    ctx.store("Oaccum", i, O_i, split=s)
    ctx.store("m_accum", i, m_i, split=s)
    ctx.store("l_accum", i, l_i, split=s)


def _reduce(ctx, i, halves: int) -> None:
    """One block of the reduction: the splits' rows i combined (their m and ℓ read once a half)."""
    splits = ctx.all_splits()
    for half in range(halves):
        m = [ctx.load("m_accum", i, split=s, name=f"m_{half},s={s.index}") for s in splits]
        l = [ctx.load("l_accum", i, split=s, name=f"l_{half},s={s.index}") for s in splits]
    top = m[0]
    for x in m[1:]:
        top = maximum(top, x)
    base = top.inf_as_zero()
    w = [ctx.keep(f"w_s={s.index}", (x - base).exp() * y, role="stats") for s, x, y in zip(splits, m, l)]
    total = ctx.fill("sum_i", i, 0.0, role="stats")
    for x in w:
        total = ctx.keep("sum_i", total + x, role="stats")
    O_i = ctx.fill("O_i", i, 0.0, role="output", cols=ctx.problem.head_dim)
    for s, x in zip(splits, w):
        O_i = ctx.keep("O_i", O_i + x.col() * ctx.load("Oaccum", i, split=s), role="output")
    ctx.store("O", i, total.reciprocal().col() * O_i)
    ctx.store("L", i, base + total.log())
