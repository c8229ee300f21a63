"""The inputs of a schedule assignment: Q, K, V for each :class:`~.specs.Case`, made in the
grader's process from a seed (:func:`build_inputs`): standard-normal random ones, and the
adversarial patterns of :data:`PATTERNS`, built to break the shortcuts of the online
softmax. Every adversarial input has the shape of a random one, so a schedule cannot tell
from ``ctx.problem`` which kind it is on.
"""

from __future__ import annotations

import numpy as np

from ..workload.inputs import random_inputs
from ..workload.problem import Problem
from .specs import Case

#: |S| the adversarial inputs reach. e^S overflows float64 above S ≈ 709 and underflows below
#: ≈ −745, so 10⁴ is far outside what any shift but the true running maximum survives; yet
#: S − m, e^{S−m} and the reference stay exact to ~1e-12 in float64 (the engine's and the
#: reference's arithmetic), well inside :data:`~.specs.ATOL` + :data:`~.specs.RTOL`·|reference|.
SCORE_RANGE = 1e4


# -- the inputs ---------------------------------------------------------------------------------
def build_inputs(case: Case, block_kv: int, seed: int) -> dict:
    """Q, K, V for ``case``: float64 arrays shaped (B, H, N, d), made in the grader from
    ``seed`` (the same seed gives the same arrays). ``block_kv`` (B_c) places the adversarial
    maxima in key blocks."""
    p = case.problem
    if case.kind == "random":
        inputs = random_inputs(p, seed=seed)
        for name in ("Q", "K"):
            inputs[name] = inputs[name] * case.score_scale
        return inputs
    rng = np.random.default_rng(seed)
    return PATTERNS[case.kind](p, block_kv, rng)


def _controlled(p: Problem, rng, a: np.ndarray, b: np.ndarray) -> dict:
    """Q, K, V with S_ij = SCORE_RANGE · a_i · b_j plus standard-normal noise: dimension 0 of Q
    and K carries the designed part (a: (B, H, N_q), b: (B, H_k, N_kv), each in [−1, 1]), the
    other dimensions are random as in a plain input; V is standard normal."""
    bsz, h, hk, d = p.batch, p.heads, p.kv_heads, p.head_dim
    c = np.sqrt(SCORE_RANGE * np.sqrt(d))   # c²/√d = SCORE_RANGE
    Q = rng.standard_normal((bsz, h, p.seq_len_q, d))
    K = rng.standard_normal((bsz, hk, p.seq_len_kv, d))
    Q[..., 0] = c * a
    K[..., 0] = c * b
    return {"Q": Q, "K": K, "V": rng.standard_normal((bsz, hk, p.seq_len_kv, d))}


def _strength(rng, shape, signed: bool) -> np.ndarray:
    """Per-row factors |a| ∈ [0.3, 1], so every jump below is ≥ 0.3 · its size; a random sign per
    row with ``signed`` (a negative row has its maximum where the others have their minimum)."""
    a = rng.uniform(0.3, 1.0, shape)
    return a * rng.choice([-1.0, 1.0], shape) if signed else a


def _max_last(p: Problem, block_kv: int, rng) -> dict:
    """Keys of the last key block score +1, the others −1 (× SCORE_RANGE × |a_i|): head 0's rows
    peak in the last block ~2e4·|a| above the first block's maximum; in the other heads a row
    of either sign (a negative one peaks in the first blocks, the last far below)."""
    b = -np.ones((p.batch, p.kv_heads, p.seq_len_kv))
    b[..., (p.seq_len_kv - 1) // block_kv * block_kv:] = 1.0
    a = _strength(rng, (p.batch, p.heads, p.seq_len_q), signed=True)
    a[:, 0] = np.abs(a[:, 0])
    return _controlled(p, rng, a, b)


def _max_middle(p: Problem, block_kv: int, rng) -> dict:
    """Keys of one middle key block score +1, the others −1: block 1 in K/V head 0, block 2 in
    head 1 (the blocks between the first and the last, cycling, for other shapes)."""
    blocks = -(-p.seq_len_kv // block_kv)
    middle = list(range(1, blocks - 1)) or [0]
    b = -np.ones((p.batch, p.kv_heads, p.seq_len_kv))
    for h in range(p.kv_heads):
        j = middle[h % len(middle)]
        b[:, h, j * block_kv:(j + 1) * block_kv] = 1.0
    return _controlled(p, rng, _strength(rng, (p.batch, p.heads, p.seq_len_q), signed=False), b)


def _ramp(p: Problem, block_kv: int, rng) -> dict:
    """Scores rising linearly from −|a_i| to +|a_i| (× SCORE_RANGE) along the keys: a row with
    a > 0 peaks at its last visible key (the last key, in the ragged block; under the causal mask
    its diagonal key) and its maximum grows at every key block; a row with a < 0 peaks at key 0."""
    b = np.broadcast_to(np.linspace(-1.0, 1.0, p.seq_len_kv), (p.batch, p.kv_heads, p.seq_len_kv))
    return _controlled(p, rng, _strength(rng, (p.batch, p.heads, p.seq_len_q), signed=True), b)


def _ties(p: Problem, block_kv: int, rng) -> dict:
    """Integer Q and K, so that every score is an exact multiple of 1/√d and equal scores are
    equal to the last bit. Head 0: pairs of neighbouring keys in the second and in the last
    key block with identical K rows and a large positive dimension 0, so each row's maximum is
    tied exactly among the four, ~1e4-2e4 above the other keys (the first block's included,
    so a shift frozen there overflows). Other heads:
    dimension 0 of K is the same for every key and some rows of Q are zero outside it, so
    those rows are constant at 0, about +1e4 or about −1e4."""
    bsz, h, hk, d, n_q, n_kv = p.batch, p.heads, p.kv_heads, p.head_dim, p.seq_len_q, p.seq_len_kv
    big = int(np.ceil(np.sqrt(SCORE_RANGE * np.sqrt(d))))          # big²/√d ≥ SCORE_RANGE
    Q = rng.integers(-2, 3, (bsz, h, n_q, d)).astype(float)
    K = rng.integers(-2, 3, (bsz, hk, n_kv, d)).astype(float)
    Q[..., 0] = rng.integers(big // 2, big + 1, (bsz, h, n_q))
    last = n_kv - 1
    tied = sorted({min(block_kv + 3, last - 1), min(block_kv + 4, last), last - 1, last})
    K[:, 0, :, 0] = -big
    K[:, 0, tied, :] = K[:, 0, tied[:1], :]                        # identical rows ...
    K[:, 0, tied, 0] = big                                          # ... scoring +big·Q[i, 0]
    if hk > 1:
        K[:, 1:, :, 0] = big
        constant = rng.random((bsz, h, n_q)) < 0.5
        constant[:, 0] = False
        level = rng.choice([0.0, big, -big], (bsz, h, n_q))
        Q[..., 1:] = np.where(constant[..., None], 0.0, Q[..., 1:])
        Q[..., 0] = np.where(constant, level, Q[..., 0])
    return {"Q": Q, "K": K, "V": rng.standard_normal((bsz, hk, n_kv, d))}


#: how each adversarial ``Case.kind`` is built: (problem, B_c, numpy Generator) -> Q, K, V
PATTERNS = {"max_last": _max_last, "max_middle": _max_middle, "ramp": _ramp, "ties": _ties}
