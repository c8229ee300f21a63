"""Random inputs for numeric runs: standard-normal Q, K, V (and dO), float64."""

from __future__ import annotations

import numpy as np

from .problem import Problem


def random_inputs(problem: Problem, seed: int = 0, gradient: bool = False) -> dict[str, np.ndarray]:
    """Standard-normal Q, K, V (and dO with ``gradient``), float64, shaped (batch, heads, rows, d);
    K and V have ``kv_heads`` heads."""
    rng = np.random.default_rng(seed)
    b, h, hk, d = problem.batch, problem.heads, problem.kv_heads, problem.head_dim
    inputs = {
        "Q": rng.standard_normal((b, h, problem.seq_len_q, d)),
        "K": rng.standard_normal((b, hk, problem.seq_len_kv, d)),
        "V": rng.standard_normal((b, hk, problem.seq_len_kv, d)),
    }
    if gradient:
        inputs["dO"] = rng.standard_normal((b, h, problem.seq_len_q, d))
    return inputs


__all__ = ["random_inputs"]
