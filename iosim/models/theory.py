"""The closed-form IO expressions of the FlashAttention paper (Theorems 2 and 5).

Theorem 2 (arXiv 2205.14135 §3.2): with d ≤ M ≤ N·d, standard attention (Algorithm 0)
needs Θ(N·d + N²) HBM accesses and FlashAttention (Algorithm 1) Θ(N²·d²/M). Accesses are
elements (convention C1), M is the SRAM size in elements. Theorem 5 states the same two
bounds for the backward passes (Algorithms 3 and 4).

These expressions are for *comparison* (ratios, fitted exponents); the counts themselves
always come from running a schedule.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

#: which theorem bounds each pass (Theorem 5 is Theorem 2's statement for the backward pass)
THEOREM_BY_PASSES = {"forward": "Theorem 2", "backward": "Theorem 5", "forward+backward": "Theorems 2 + 5"}


#: Theorem 2's expressions (elements per head), as printed
STANDARD_EXPRESSION = "N·d + N²"
FLASH_EXPRESSION = "N²·d²/M"


def standard_accesses(seq_len_q: int, seq_len_kv: int, head_dim: int) -> int:
    """N·d + N², exactly (N_q·d + N_q·N_kv for N_q ≠ N_kv)."""
    return seq_len_q * head_dim + seq_len_q * seq_len_kv


def flash_accesses(seq_len_q: int, seq_len_kv: int, head_dim: int, sram_elements: int) -> Fraction:
    """N²·d²/M, exactly (N_q·N_kv·d²/M for N_q ≠ N_kv)."""
    return Fraction(seq_len_q * seq_len_kv * head_dim * head_dim, sram_elements)


@dataclass(frozen=True)
class Theorem2:
    """A Theorem 2 expression evaluated at one problem size."""

    family: str          # "standard" or "flash"
    expression: str      # human-readable form
    value: float         # the expression evaluated, in elements
    in_regime: bool      # whether d ≤ M ≤ N·d holds
    name: str = "Theorem 2"  # Theorem 5 states the same bounds for the backward pass

    def ratio(self, count_elements: int) -> float:
        """count / expression: the constant hidden in the Θ."""
        return count_elements / self.value


@functools.lru_cache(maxsize=256)     # every tile of an explore point asks for the same one
def theorem2(family: str, seq_len_q: int, seq_len_kv: int, head_dim: int, sram_elements: int,
             name: str = "Theorem 2", density: float | None = None) -> Theorem2:
    """Theorem 2's expression for ``family`` ("standard" or "flash").

    For N_q ≠ N_kv, N² becomes N_q·N_kv and N·d becomes N_q·d (the theorem itself is
    stated for square attention). With a block-sparsity ``density`` s, the flash family
    takes Proposition 4's Θ(N·d + N²·d²·s/M) instead.
    """
    n2 = seq_len_q * seq_len_kv
    d, M = head_dim, sram_elements
    in_regime = d <= M <= seq_len_q * d
    if family == "standard":
        return Theorem2(family, STANDARD_EXPRESSION, standard_accesses(seq_len_q, seq_len_kv, d), in_regime, name)
    if density is not None:
        return Theorem2(family, "N·d + N²·d²·s/M", seq_len_q * d + n2 * d * d * density / M, in_regime,
                        "Proposition 4")
    return Theorem2(family, FLASH_EXPRESSION, float(flash_accesses(seq_len_q, seq_len_kv, d, M)), in_regime, name)
