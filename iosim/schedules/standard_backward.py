"""Standard attention backward pass (FlashAttention paper, Appendix B.4, Algorithm 3).

Five kernels through HBM: dV = Pᵀ dO; dP = dO Vᵀ (written); dS = P ∘ (dP − rowsum(P ∘ dP))
(reads P and dP, writes dS); dQ = τ·dS K; dK = τ·dSᵀ Q. Counted as the paper counts it
(convention C8): every input element read once per line, every output written once —
exactly 8·N·d + 7·N² elements per head (docs/spec/algorithms.md §2.2). The softmax scale τ = 1/√d
is applied on chip (Algorithm 3 omits it; FA1 Algorithm 4 has it).

Paper symbol → code name: P → tensor ``"P"`` (kept in HBM by the forward pass),
dO, dP, dS, dQ, dK, dV → tensors of the same names.
"""

from __future__ import annotations

from ..errors import ScheduleError
from .gqa import kv_gradient_targets, reduce_kv_gradients


def standard_backward(ctx, gemm: str = "idealised") -> None:
    """Run Algorithm 3 (lines 1–5); only the paper's idealised count is modelled."""
    if gemm != "idealised":
        raise ScheduleError("standard backward: only gemm='idealised' is modelled")
    dK_name, dV_name = kv_gradient_targets(ctx)                 # per-query-head buffers under GQA
    P, dO = ctx.read("P"), ctx.read("dO")                       # 1: dV = Pᵀ dO
    ctx.write(dV_name, P.T @ dO)
    dO, V = ctx.read("dO"), ctx.read("V")                       # 2: dP = dO Vᵀ
    ctx.write("dP", dO @ V.T)
    P, dP = ctx.read("P"), ctx.read("dP")                       # 3: dS = P ∘ (dP − Σ_l P_il dP_il)
    ctx.write("dS", P * (dP - (P * dP).rowsum().col()))
    dS, K = ctx.read("dS"), ctx.read("K")                       # 4: dQ = τ dS K
    ctx.write("dQ", (dS @ K) * ctx.softmax_scale)
    dS, Q = ctx.read("dS"), ctx.read("Q")                       # 5: dK = τ dSᵀ Q
    ctx.write(dK_name, (dS.T @ Q) * ctx.softmax_scale)
    reduce_kv_gradients(ctx)                                    # GQA: sum each group into dK, dV
