"""A naive float64 reference: softmax(QKᵀ/√d)V, with the same causal alignment.

Deliberately independent of the engine (no tiles, no online softmax), so that tests
comparing a schedule's numeric output with it can fail.
"""

from __future__ import annotations

import numpy as np


def _masked_scores(Q, K, causal):
    """S = QKᵀ/√d, with −∞ where the causal mask (aligned bottom-right) hides a key."""
    n_q, n_kv, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)
    if causal:
        visible = np.arange(n_kv)[None, :] <= np.arange(n_q)[:, None] + (n_kv - n_q)
        S = np.where(visible, S, -np.inf)
    return S


def _safe_max(S):
    """Row maxima, 0 for a row with no visible key (all −∞), so that e^{S − max} is 0 there."""
    m = S.max(axis=-1, keepdims=True)
    return np.where(np.isneginf(m), 0.0, m)


def _softmax(S):
    """Row softmax; a row with no visible key (causal with N_q > N_kv: the first N_q − N_kv
    queries) is all 0, as FlashAttention defines it (its output row is 0)."""
    P = np.exp(S - _safe_max(S))
    total = P.sum(axis=-1, keepdims=True)
    return P / np.where(total == 0.0, 1.0, total)


def _probabilities(Q, K, causal):
    return _softmax(_masked_scores(Q, K, causal))


def reference_attention(Q: np.ndarray, K: np.ndarray, V: np.ndarray, causal: bool = False) -> np.ndarray:
    """O for arrays shaped (..., N_q, d), (..., N_kv, d), (..., N_kv, d), in float64."""
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    return _probabilities(Q, K, causal) @ V


def reference_statistics(Q: np.ndarray, K: np.ndarray, causal: bool = False) -> dict[str, np.ndarray]:
    """The row statistics of S = QKᵀ/√d, in float64: m = rowmax(S), ℓ = rowsum(e^{S−m}) and
    the logsumexp L = m + log ℓ, each shaped (..., N_q); a row with no visible key has
    m = −∞, ℓ = 0, L = −∞."""
    Q, K = (np.asarray(x, dtype=np.float64) for x in (Q, K))
    S = _masked_scores(Q, K, causal)
    m = S.max(axis=-1)
    l = np.exp(S - _safe_max(S)).sum(axis=-1)
    with np.errstate(divide="ignore"):          # a row with no visible key: ℓ = 0, L = −∞
        return {"m": m, "l": l, "L": m + np.log(l)}


def reference_gradients(Q, K, V, dO, causal: bool = False) -> dict[str, np.ndarray]:
    """dQ, dK, dV of O = softmax(QKᵀ/√d)V for the upstream gradient dO, in float64.

    The textbook chain rule on whole matrices: dV = Pᵀ dO, dP = dO Vᵀ,
    dS = P ∘ (dP − rowsum(P ∘ dP)), dQ = dS K / √d, dK = dSᵀ Q / √d.
    """
    Q, K, V, dO = (np.asarray(x, dtype=np.float64) for x in (Q, K, V, dO))
    P = _probabilities(Q, K, causal)
    dP = dO @ np.swapaxes(V, -1, -2)
    dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))
    scale = 1.0 / np.sqrt(Q.shape[-1])
    return {"dQ": dS @ K * scale, "dK": np.swapaxes(dS, -1, -2) @ Q * scale, "dV": np.swapaxes(P, -1, -2) @ dO}
