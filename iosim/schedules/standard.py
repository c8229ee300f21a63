"""Standard attention forward pass (FlashAttention paper, Algorithm 0).

Three kernels, each going through HBM: S = QKᵀ is written to HBM, read back for the
softmax, P = softmax(S) is written, then read back with V to form O = PV. Both N × N
matrices cross HBM twice, the Θ(Nd + N²) of Theorem 2. P stays in HBM because the
backward pass needs it (Algorithm 3).

``gemm="idealised"`` (default) counts as the paper does (convention C8): every input
element read once, every output element written once — exactly 4·N·d + 4·N² elements
per head (docs/spec/algorithms.md §2.1). No real kernel achieves that, and an idealised kernel has
no tiles, so no SRAM occupancy is modelled for it.

``gemm="tiled"`` models the matrix products as real tiled kernels run them: each
B_r × B_c tile of S loads its Q_i and K_j; each query block of O loads P_ij and V_j for
every key block. Q is then read T_c times and K, V T_r times. The row softmax still reads
S once and writes P once.

Causal masking is fused into the softmax, so the counts do not change (§5 there).

Paper symbol → code name: S → tensor ``"S"``, P → ``"P"``, O → ``"O"``; B_r, B_c →
``ctx.blocks`` (tiled only).
"""

from __future__ import annotations

from ..errors import ScheduleError


def _softmax_rows(S):
    """softmax over each row: exp(S − rowmax) / rowsum; a row with no visible key (causal,
    N_q > N_kv) has rowmax −∞ and gives P = 0, O = 0, as the FlashAttention kernels do."""
    P = (S - S.rowmax().inf_as_zero().col()).exp()
    return P.rowsum().reciprocal().col() * P


def standard_forward(ctx, gemm: str = "idealised") -> None:
    """Run Algorithm 0 (lines 1–3)."""
    if gemm == "idealised":
        _idealised(ctx)
    elif gemm == "tiled":
        _tiled(ctx)
    else:
        raise ScheduleError(f"standard: gemm must be 'idealised' or 'tiled', got {gemm!r}")


def _idealised(ctx) -> None:
    Q, K = ctx.read("Q"), ctx.read("K")                  # 1: load Q, K; S = QKᵀ; write S
    ctx.write("S", (Q @ K.T) * ctx.softmax_scale)
    S = ctx.mask(ctx.read("S"))                          # 2: read S; P = softmax(S); write P
    ctx.write("P", _softmax_rows(S))
    P, V = ctx.read("P"), ctx.read("V")                  # 3: load P, V; O = PV; write O
    ctx.write("O", P @ V)


def _tiled(ctx) -> None:
    # Three launches, as a tiled implementation makes them (iosim's CuPy kernels do): one
    # thread block per tile of S (key block fastest), the softmax, one per query block of O.
    with ctx.kernel("qk"):
        for i in ctx.q_blocks():                         # 1: S = QKᵀ, one B_r × B_c tile at a time
            for j in ctx.kv_blocks():
                with ctx.thread_block((i, j)):
                    Q_i, K_j = ctx.load("Q", i), ctx.load("K", j)
                    ctx.store("S", (i, j), ctx.keep("S_ij", (Q_i @ K_j.T) * ctx.softmax_scale, role="scores"))
    with ctx.kernel("softmax"):
        S = ctx.mask(ctx.read("S"))                      # 2: row softmax, one pass over S
        ctx.write("P", _softmax_rows(S))
    with ctx.kernel("pv"):
        for i in ctx.q_blocks():                         # 3: O_i = Σ_j P_ij V_j
            with ctx.thread_block(i):
                O_i = ctx.fill("O_i", i, 0.0, role="output", cols=ctx.problem.head_dim)
                for j in ctx.kv_blocks():
                    P_ij, V_j = ctx.load("P", (i, j)), ctx.load("V", j)
                    O_i = ctx.keep("O_i", O_i + P_ij @ V_j, role="output")
                ctx.store("O", i, O_i)
