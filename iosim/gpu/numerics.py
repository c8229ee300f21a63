"""The float64 NumPy reference the GPU kernels are checked against, and the tolerances.

Inputs are drawn from N(0, 1), rounded to the kernel's dtype, and the reference is computed
in float64 from those rounded values, so it measures only the kernels' own arithmetic.
"""

from __future__ import annotations

import numpy as np

# Tolerances on max |O_gpu − O_ref| (absolute; O is a convex combination of rows of V, and
# V ~ N(0, 1) gives |V| < ~6 for the sizes tested).
#
# fp32: every product and sum is fp32 (unit roundoff u = 2^-24 ≈ 6e-8). O_i is a length-N dot
# product of softmax weights (summing to 1) with V; its rounding error grows like √N·u·max|V|
# in practice (≈ 4e-5 at N = 16384 even with max|V| = 6), and the exp/rescale steps add a few
# u. 1e-4 leaves a margin over that and is still ~1000× below any indexing or masking bug,
# which shows up as an O(0.1–1) error. (Observed on an H200, 2026-11-29, over the 60-case
# validation grid: at most 1.3e-6.)
#
# fp16: the outputs are stored in fp16 (relative rounding 2^-11 ≈ 4.9e-4, so up to 2.4e-3 for
# |O| ≈ 5), P̃ is rounded to fp16 before the second product (2^-11 relative per weight), the
# standard algorithm also stores S in fp16 (a logit error up to |S|·2^-11 ≈ 3e-3 for |S| ≈ 6,
# i.e. that relative error in a weight), and FA1 writes O_i back in fp16 after every one of its
# T_c steps (a random walk of T_c roundings). Together these stay below ~5e-3 on N(0,1) data;
# 1e-2 is that with a factor-2 margin, still far below a wrong tile (O(0.1–1)). (Observed on
# an H200, 2026-11-29: at most 1.5e-3, for standard; 9.6e-4 for FA1 and FA2.) A missing tile in
# a large-N softmax can hide below 1e-2, so tests/gpu/test_gpu_kernels.py also checks each stage of
# the standard algorithm against float64 applied to that stage's own GPU inputs, at 2^-10
# relative.
OUTPUT_TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2}

# Tolerance on the row logsumexp L = m + log ℓ (fp32 in every kernel): the scores come from
# exactly-rounded inputs with fp32 accumulation, the exponentials from ex2.approx/expf
# (relative error ~2^-22); L ≈ log N + O(1) ≈ 10, so fp32 rounding gives ~1e-6. 1e-3 leaves
# room for the fp16 path and still flags any wrong row statistic.
LSE_TOLERANCE = 1e-3

NP_DTYPE = {"fp32": np.float32, "fp16": np.float16}


def make_inputs(heads_total: int, seq_len: int, head_dim: int, dtype: str, seed: int):
    """Q, K, V of shape [B·H, N, d] in ``dtype`` (NumPy), drawn from N(0, 1)."""
    rng = np.random.default_rng(seed)
    shape = (heads_total, seq_len, head_dim)
    return tuple(rng.standard_normal(shape, dtype=np.float32).astype(NP_DTYPE[dtype]) for _ in range(3))


def attention_rows(q: np.ndarray, k: np.ndarray, v: np.ndarray, rows: np.ndarray, causal: bool):
    """Reference O and logsumexp for the query ``rows`` of one head, in float64.

    O = softmax(Q Kᵀ/√d) V; the causal mask hides key k from query q when k > q.
    """
    q64, k64, v64 = (np.asarray(x, dtype=np.float64) for x in (q[rows], k, v))
    s = q64 @ k64.T / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.arange(k.shape[0])[None, :] > rows[:, None], -np.inf, s)
    m = s.max(axis=1, keepdims=True)
    p = np.exp(s - m)
    ell = p.sum(axis=1, keepdims=True)
    return (p / ell) @ v64, (m + np.log(ell))[:, 0]


def check_rows(heads_total: int, seq_len: int, max_elements: int, seed: int) -> list[np.ndarray]:
    """Which query rows of each head to check: all of them while the reference costs at most
    ``max_elements`` score entries in total, else an even sample (with the first and last row
    of every head, which exercise the causal corner and the ragged last tile)."""
    if heads_total * seq_len * seq_len <= max_elements:
        return [np.arange(seq_len)] * heads_total
    per_head = max(2, max_elements // (heads_total * seq_len))
    rng = np.random.default_rng(seed + 1)
    out = []
    for _ in range(heads_total):
        pick = rng.choice(seq_len, size=min(seq_len, per_head), replace=False)
        out.append(np.unique(np.concatenate([pick, [0, seq_len - 1]])))
    return out


def max_errors(q, k, v, o_gpu: np.ndarray, lse_gpu: np.ndarray | None, causal: bool,
               rows: list[np.ndarray]) -> tuple[float, float | None]:
    """max |O − O_ref| and max |L − L_ref| over the checked rows (NaN anywhere gives inf)."""
    err_o, err_l = 0.0, 0.0
    for h, head_rows in enumerate(rows):
        for start in range(0, len(head_rows), 1024):  # bound the N×rows float64 scratch
            r = head_rows[start:start + 1024]
            o_ref, l_ref = attention_rows(q[h], k[h], v[h], r, causal)
            diff = np.abs(o_gpu[h][r].astype(np.float64) - o_ref)
            err_o = max(err_o, float(diff.max()) if np.isfinite(diff).all() else float("inf"))
            if lse_gpu is not None:
                dl = np.abs(lse_gpu[h][r].astype(np.float64) - l_ref)
                err_l = max(err_l, float(dl.max()) if np.isfinite(dl).all() else float("inf"))
    return err_o, (err_l if lse_gpu is not None else None)
