"""iosim's own FlashAttention-2 forward kernel in Triton, tunable (optional: needs Triton
and PyTorch; nothing in the core imports this module). docs/triton.md.

Knobs: ``BLOCK_M`` (query rows per program, B_r), ``BLOCK_N`` (key rows per step, B_c),
``num_warps``, ``num_stages``. Layout (B, H, N, d) contiguous, fp16 or bf16, d a power of
two (64, 128 measured), causal or not. One program per (query block, batch·head): the grid
is ``(cdiv(N, BLOCK_M), B·H)``, axis 0 fastest, as FA2's forward.

Global traffic, in the terms of FlashAttention-2's Algorithm 1 (what the ``triton-fa2``
preset counts with the ``fa2`` schedule, key blocks ascending):

* Q_i (BLOCK_M × d) is loaded from HBM **once** per program, before the loop (line 4);
* K_j and V_j (BLOCK_N × d each) are loaded **once per active j** (line 6): every key block
  for a non-causal program, blocks 0 … ⌈(i+1)·BLOCK_M / BLOCK_N⌉ − 1 for a causal one
  (blocks wholly above the diagonal are skipped, not masked);
* S_ij, P_ij, the running max m_i and sum ℓ_i and the O_i accumulator never leave the
  chip (registers, fp32; online softmax in base 2 with the scale folded into log2 e);
* O_i (BLOCK_M × d) is stored **once** at the end (line 12), and L_i = m_i + log ℓ_i
  (natural log, fp32, BLOCK_M values) **once** (line 13).

Ragged edges (N not a multiple of a block) are masked loads and stores: they move only
the real rows, while the tensor cores compute the whole tile.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl



@triton.jit
def _fa2_forward(Q, K, V, O, L, sm_scale, N, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)             # query block i (axis 0: fastest)
    bh = tl.program_id(1)                  # batch · heads + head
    base = bh.to(tl.int64) * N * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    q = tl.load(q_ptrs, mask=offs_m[:, None] < N, other=0.0)              # Q_i once
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634                              # exp(x) = exp2(x · log2 e)
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, N)                         # last visible key + 1
    else:
        hi = N
    for start_n in range(0, hi, BLOCK_N):                                  # key blocks ascending
        cols = start_n + offs_n
        kv_mask = cols[:, None] < N
        k = tl.load(K + base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(V + base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_mask, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale                             # S_ij, fp32
        valid = cols[None, :] < N
        if CAUSAL:
            valid = valid & (cols[None, :] <= offs_m[:, None])
        qk = tl.where(valid, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    o_ptrs = O + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    tl.store(o_ptrs, acc.to(O.dtype.element_ty), mask=offs_m[:, None] < N)    # O_i once
    lse = (m_i + tl.math.log2(l_i)) / 1.4426950408889634                      # natural log
    tl.store(L + bh.to(tl.int64) * N + offs_m, lse, mask=offs_m < N)           # L_i once


def grid(n: int, batch_heads: int, block_m: int) -> tuple[int, int]:
    """The launch grid ``(cdiv(N, BLOCK_M), B·H)``."""
    return triton.cdiv(n, block_m), batch_heads


def fa2_forward(q, k, v, causal: bool, block_m: int, block_n: int, num_warps: int, num_stages: int):
    """O (like q) and L ((B, H, N), fp32) for q, k, v of shape (B, H, N, d), and the
    compiled kernel (its ``metadata.shared``, ``n_regs``, ``n_spills``)."""
    b, h, n, d = q.shape
    for name, t in (("k", k), ("v", v)):
        if t.shape != q.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, q {tuple(q.shape)}: the kernel runs MHA, N_q = N_kv")
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    o = torch.empty_like(q)
    lse = torch.empty((b, h, n), device=q.device, dtype=torch.float32)
    compiled = _fa2_forward[grid(n, b * h, block_m)](
        q, k, v, o, lse, 1.0 / math.sqrt(d), n, HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
        num_warps=num_warps, num_stages=num_stages)
    return o, lse, compiled


def reference(q, k, v, causal: bool):
    """O and L in float64 (on the same device), the numerics check's reference."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    s = (q64 @ k64.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return torch.softmax(s, dim=-1) @ v64, lse


__all__ = ["fa2_forward", "reference", "grid"]
