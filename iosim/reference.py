"""A naive float64 reference: softmax(QKᵀ/√d)V, with the same causal alignment.

Deliberately independent of the engine (no tiles, no online softmax), so that tests
comparing a schedule's numeric output with it can fail.
"""

from __future__ import annotations

import numpy as np


def reference_attention(Q: np.ndarray, K: np.ndarray, V: np.ndarray, causal: bool = False) -> np.ndarray:
    """O for arrays shaped (..., N_q, d), (..., N_kv, d), (..., N_kv, d), in float64."""
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    n_q, n_kv, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)
    if causal:
        visible = np.arange(n_kv)[None, :] <= np.arange(n_q)[:, None] + (n_kv - n_q)
        S = np.where(visible, S, -np.inf)
    S = S - S.max(axis=-1, keepdims=True)
    P = np.exp(S)
    return (P / P.sum(axis=-1, keepdims=True)) @ V
