"""FlashAttention-2's backward pass as flash-attn's CUDA kernels run it (docs/spec/algorithms.md §7.3).

``run_flash_bwd_seqk_parallel`` launches three kernels, which differ from the paper's
Algorithm 2 in what they move:

1. ``flash_bwd_dot_do_o_kernel`` reads dO and O, writes D = rowsum(dO ∘ O) in fp32, and
   zeroes the fp32 accumulator dQaccum;
2. the main kernel, one thread block per key/value block j: K_j and V_j are read once;
   for each active query block i it reads Q_i, dO_i, L_i and D_i — **not O_i** — and adds
   its dQ_i contribution into dQaccum with fp32 atomics (a read-modify-write); dK_j, dV_j
   are written at the end;
3. ``flash_bwd_convert_dq_kernel`` reads dQaccum and writes dQ in the input dtype.

Per head, non-causal (exact tiles): dO r N·d + T_c·N·d; O r N·d; D w N, r T_c·N; L r T_c·N
(times ``stats_loads``, the warps that each load a row's L and D);
Q r T_c·N·d; K, V r N·d; dQaccum w N·d + T_c·N·d, r T_c·N·d + N·d; dQ, dK, dV w N·d.
The kernels allocate D (softmax_d) with N_q rounded up to 128 rows and dQaccum with N_q
rounded up and the head size rounded (:func:`~iosim.engine.tensors.rounded_head_size`),
and move whole blocks of them (the main kernel reads D's rows without a row predicate,
L's with one): their N counts whole blocks of B_r rows (T_r·B_r), and dQaccum's d the
rounded head size (measured: docs/validation/2026-12-01-sdpa-unseen.md).
Causal skips blocks as in §5 there. Under GQA the per-query-head dK, dV are summed per group
afterwards (:mod:`.gqa`).
"""

from __future__ import annotations

from .gqa import kv_gradient_targets, reduce_kv_gradients


def fa2_kernel_backward(ctx, stats_loads: int = 1, tma_box: int = 0, rounded_buffers: bool = True,
                        tile_blocks: int = 1, q_descending: bool = False) -> None:
    """The three backward kernels of flash-attn 2.

    ``stats_loads``: how many warps load each row's L_i and D_i in every step of the main
    kernel (kNWarps / AtomLayoutMSdP of the launch: the warps that split the key columns
    of S each load the row statistics themselves). 1 counts each element once.
    ``tma_box`` (cuDNN's Hopper kernel, :mod:`iosim.kernels.cudnn_preset`): K, V, Q, dO
    arrive by TMA in whole tiles, B rows × ``tma_box`` columns (the kernel's head dim), and
    dQ_i is added into dQaccum by a TMA reduction (a write of its real rows; no read).
    ``rounded_buffers=False``: D and dQaccum have N_q rows, and every kernel moves only
    their real rows (cuDNN), instead of flash-attn's blocks rounded to whole B_r rows; and
    dQaccum's rows are d wide, not flash-attn's rounded head size (cuDNN allocates it N_q × d:
    d = 80 and 112 measured, docs/validation/2026-12-04-s29-cudnn.md).
    ``tile_blocks``: thread blocks a key block (cuDNN's bprop above d = 128 launches two, each
    loading K_j, V_j and every visible Q_i, dO_i, L_i, D_i and writing half the columns of dK_j,
    dV_j and dQ_i: measured, docs/validation/2026-12-04-s29-cudnn.md). The engine tiles no
    head-dim columns, so the first writes all of them and the others write nothing: every byte
    moved is counted, and the others' half-column products are counted whole.
    ``q_descending``: a key block walks its visible query blocks from the last down, as
    flash-attn 2's ``compute_dq_dk_dv_1colblock`` does (``m_block = m_block_max - 1``, then
    ``--m_block``) and cuDNN's bprop does by its DRAM reads (docs/validation/2026-12-04-s29-cudnn.md).
    """
    d = ctx.problem.head_dim
    whole = rounded_buffers
    dK, dV = kv_gradient_targets(ctx)
    with ctx.kernel("dot_do_o"):                                # 1: D = rowsum(dO ∘ O); dQaccum = 0
        for i in ctx.q_blocks():
            with ctx.thread_block(("q", i.index)):
                dO_i, O_i = ctx.load("dO", i), ctx.load("O", i)
                ctx.store("D", i, (dO_i * O_i).rowsum(), whole_rows=whole)          # softmax_d: rounded rows
                ctx.store("dQaccum", i, ctx.fill("zero_i", i, 0.0, role="output", cols=d), whole_rows=whole,
                          rounded_cols=whole)
    with ctx.kernel("dq_dk_dv"):                                # 2: one thread block per key block
        for j in ctx.kv_blocks():
            for t in range(tile_blocks):
                with ctx.thread_block(("kv", j.index) if tile_blocks == 1 else ("kv", j.index, t)):
                    _key_block(ctx, j, dK, dV, stats_loads, tma_box, whole, writes=t == 0, q_descending=q_descending)
    with ctx.kernel("convert_dq"):                              # 3: dQ = convert(dQaccum)
        for i in ctx.q_blocks():
            with ctx.thread_block(("q", i.index)):
                ctx.store("dQ", i, ctx.load("dQaccum", i, whole_rows=whole, rounded_cols=whole))
    with ctx.kernel("reduce_dkv"):                              # GQA only: sum each group
        reduce_kv_gradients(ctx)


def _key_block(ctx, j, dK: str, dV: str, stats_loads: int, tma_box: int, whole: bool, writes: bool = True,
               q_descending: bool = False) -> None:
    """The main kernel's thread block for key block j: its walk over the visible query blocks
    (``writes``: it writes dQaccum, dK_j and dV_j; see ``tile_blocks``)."""
    d = ctx.problem.head_dim
    box = {"whole_rows": True, "box_cols": tma_box} if tma_box else {}
    K_j, V_j = ctx.load("K", j, **box), ctx.load("V", j, **box)
    dK_j = ctx.fill("dK_j", j, 0.0, role="output", cols=d)
    dV_j = ctx.fill("dV_j", j, 0.0, role="output", cols=d)
    for i in ctx.q_blocks(visible_to=j, descending=q_descending):
        Q_i, dO_i = ctx.load("Q", i, **box), ctx.load("dO", i, **box)  # O_i is not reloaded: D_i carries it
        for _ in range(stats_loads):                     # each warp column loads them
            L_i, D_i = ctx.load("L", i), ctx.load("D", i, whole_rows=whole)  # flash's dP_sum: unpredicated
        S_ij = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
        P_ij = ctx.keep("S_ij", (S_ij - L_i.inf_as_zero().col()).exp(), role="scores")  # L = −∞: P = 0
        dV_j = ctx.keep("dV_j", dV_j + P_ij.T @ dO_i, role="output")
        dP_ij = ctx.keep("dP_ij", dO_i @ V_j.T, role="scores")
        dS_ij = ctx.keep("dP_ij", P_ij * (dP_ij - D_i.col()), role="scores")
        if writes:                                       # (else another block of the key tile writes dQ_i)
            _add_dq(ctx, i, (dS_ij @ K_j) * ctx.softmax_scale, tma_box, whole)
        dK_j = ctx.keep("dK_j", dK_j + (dS_ij.T @ Q_i) * ctx.softmax_scale, role="output")
    if writes:
        ctx.store(dK, j, dK_j)
        ctx.store(dV, j, dV_j)


def _add_dq(ctx, i, dQ_ij, tma_box: int, whole: bool) -> None:
    """dQ_i += dQ_ij in dQaccum: a TMA reduction (added in L2, real rows, no read), or an atomicAdd
    (a read-modify-write in fp32, whole rows)."""
    if tma_box:
        ctx.store("dQaccum", i, dQ_ij, reduce=True, rounded_cols=whole)
    else:
        acc = ctx.load("dQaccum", i, whole_rows=whole, rounded_cols=whole)
        ctx.store("dQaccum", i, acc + dQ_ij, whole_rows=whole, rounded_cols=whole)
