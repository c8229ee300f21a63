"""Closed forms of docs/spec/algorithms.md (§2–§5), written independently of the engine.

Elements per head. These are the spec's formulas, transcribed; the engine never sees them.
"""

from __future__ import annotations

#: SRAM large enough that any block in the tables fits; counts do not depend on it
BIG = 1 << 30


def per_tensor(result, heads=1):
    """A result's elements (read, written) per tensor, divided by ``heads`` (per head when
    ``heads`` is B·H): what the closed forms below give."""
    return {k: (t.read_elements // heads, t.write_elements // heads) for k, t in result.tensors.items()}


def nonzero(forms):
    """``forms`` without the tensors that were neither read nor written."""
    return {k: v for k, v in forms.items() if v != (0, 0)}


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def tilde(n: int, b: int, padded: bool) -> int:
    """Ñ = Σ tile rows: N exactly, or T·B padded (C4)."""
    return ceil_div(n, b) * b if padded else n


def causal_R(n: int, br: int, bc: int) -> int:
    """R = Σ_{j=0}^{T_c−1} (N − ⌊j·B_c/B_r⌋·B_r)  (§5, square mask, exact tiles)."""
    return sum(n - (j * bc // br) * br for j in range(ceil_div(n, bc)))


def causal_C(n: int, br: int, bc: int) -> int:
    """C = Σ_{i=0}^{T_r−1} min(n_i·B_c, N), n_i = ⌈min((i+1)B_r, N)/B_c⌉  (§5)."""
    return sum(min(ceil_div(min((i + 1) * br, n), bc) * bc, n) for i in range(ceil_div(n, br)))


def standard_forward(n: int, d: int) -> dict:
    """§2.1: per tensor (read, write)."""
    return {"Q": (n * d, 0), "K": (n * d, 0), "V": (n * d, 0), "S": (n * n, n * n), "P": (n * n, n * n), "O": (0, n * d)}


def fa1_forward(n: int, d: int, br: int, bc: int, causal: bool, padded: bool = False, init: bool = False) -> dict:
    """§3.1 and §5: K, V read Ñ_c·d; Q, O read and O written R·d; ℓ, m read and written R."""
    nr, nc = tilde(n, br, padded), tilde(n, bc, padded)
    R = causal_R(n, br, bc) if causal else ceil_div(n, bc) * nr
    out = {"Q": (R * d, 0), "K": (nc * d, 0), "V": (nc * d, 0), "O": (R * d, R * d), "l": (R, R), "m": (R, R)}
    if init:  # + init: O w Ñ_r·d, ℓ w Ñ_r, m w Ñ_r
        out = {k: (r, w + {"O": nr * d, "l": nr, "m": nr}.get(k, 0)) for k, (r, w) in out.items()}
    return out


def fa2_forward(n: int, d: int, br: int, bc: int, causal: bool, padded: bool = False) -> dict:
    """§4.1 and §5: Q read Ñ_r·d; K, V read C·d; O written Ñ_r·d; L written Ñ_r."""
    nr, nc = tilde(n, br, padded), tilde(n, bc, padded)
    C = causal_C(n, br, bc) if causal else ceil_div(n, br) * nc
    return {"Q": (nr * d, 0), "K": (C * d, 0), "V": (C * d, 0), "O": (0, nr * d), "L": (0, nr)}


def standard_backward(n: int, d: int) -> dict:
    """§2.2: 8·N·d + 7·N²."""
    nd, n2 = n * d, n * n
    return {"Q": (nd, 0), "K": (nd, 0), "V": (nd, 0), "P": (2 * n2, 0), "dO": (2 * nd, 0),
            "dQ": (0, nd), "dK": (0, nd), "dV": (0, nd), "dP": (n2, n2), "dS": (2 * n2, n2)}


def fa1_backward(n: int, d: int, br: int, bc: int, causal: bool) -> dict:
    """§3.2 and §5: K, V read Ñ_c·d; Q, O, dO, dQ read R·d; dQ written R·d; ℓ, m read R."""
    R = causal_R(n, br, bc) if causal else ceil_div(n, bc) * n
    return {"Q": (R * d, 0), "K": (n * d, 0), "V": (n * d, 0), "O": (R * d, 0), "l": (R, 0), "m": (R, 0),
            "dO": (R * d, 0), "dQ": (R * d, R * d), "dK": (0, n * d), "dV": (0, n * d)}


def fa2_backward(n: int, d: int, br: int, bc: int, causal: bool, dq_twice: bool = False) -> dict:
    """§4.2 and §5: as FA1 plus D = rowsum(dO ∘ O) (dO, O read once more, D written N, read R)."""
    R = causal_R(n, br, bc) if causal else ceil_div(n, bc) * n
    dq_reads = 2 * R * d if dq_twice else R * d
    return {"Q": (R * d, 0), "K": (n * d, 0), "V": (n * d, 0), "O": (n * d + R * d, 0), "L": (R, 0),
            "dO": (n * d + R * d, 0), "dQ": (dq_reads, R * d), "dK": (0, n * d), "dV": (0, n * d), "D": (R, n)}
