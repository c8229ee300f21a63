"""Block-sparsity masks for block-sparse FlashAttention (arXiv 2205.14135 §3.3, Algorithm 5).

A mask M ∈ {0,1}^{T_r × T_c} marks which (query block, key block) pairs are computed;
its density s (the fraction of nonzero blocks) is Proposition 4's s. Masks come from a
generator spec or a file:

* ``local:W`` — a band: query block i sees the key blocks whose index is within W − 1 of
  the key block holding its first row, ⌊i·B_r/B_c⌋ (with B_r = B_c, the 2W − 1 blocks
  around the diagonal).
* ``random:S`` or ``random:S:SEED`` — each block nonzero with probability S (0 < S ≤ 1),
  from NumPy's default generator with SEED (default 0); the diagonal band of width 1 is
  kept so that no query block is left without keys.
* ``dense`` — all ones (the same counts as no mask, through the sparse code path).
* a path to a ``.npy`` file or a text file of 0/1 rows (whitespace or commas).
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import ProblemError


def parse_block_mask(spec: str | np.ndarray, num_q_blocks: int, num_kv_blocks: int, block_q: int, block_kv: int) -> np.ndarray:
    """The T_r × T_c boolean mask that ``spec`` describes, checked against the tiling."""
    shape = (num_q_blocks, num_kv_blocks)
    if isinstance(spec, np.ndarray):
        mask = spec
    elif spec == "dense":
        mask = np.ones(shape, dtype=bool)
    elif spec.startswith("local:"):
        mask = _local(_int_arg(spec, "local:W", 1), shape, block_q, block_kv)
    elif spec.startswith("random:"):
        mask = _random(spec, shape, block_q, block_kv)
    elif os.path.exists(spec):
        mask = _from_file(spec)
    else:
        raise ProblemError(
            f"block mask {spec!r}: expected local:W, random:S[:SEED], dense, or a path to a .npy or 0/1 text file"
        )
    mask = np.asarray(mask)
    if mask.shape != shape:
        raise ProblemError(f"block mask has shape {mask.shape}, but the tiling needs T_r × T_c = {shape}")
    if not np.isin(mask, (0, 1)).all():
        raise ProblemError("block mask entries must be 0 or 1")
    return mask.astype(bool)


def density(mask: np.ndarray) -> float:
    """s: the fraction of nonzero blocks."""
    return float(mask.mean())


def _int_arg(spec: str, form: str, minimum: int) -> int:
    try:
        value = int(spec.split(":", 1)[1])
    except ValueError:
        raise ProblemError(f"block mask {spec!r}: expected {form} with an integer") from None
    if value < minimum:
        raise ProblemError(f"block mask {spec!r}: {form.split(':')[1]} must be ≥ {minimum}")
    return value


def _diagonal(shape, block_q, block_kv) -> np.ndarray:
    """For each query block, the key block holding its first row."""
    return np.minimum(np.arange(shape[0]) * block_q // block_kv, shape[1] - 1)


def _local(width: int, shape, block_q, block_kv) -> np.ndarray:
    centre = _diagonal(shape, block_q, block_kv)
    return np.abs(np.arange(shape[1])[None, :] - centre[:, None]) < width


def _random(spec: str, shape, block_q, block_kv) -> np.ndarray:
    parts = spec.split(":")
    try:
        s = float(parts[1])
        seed = int(parts[2]) if len(parts) > 2 else 0
    except (ValueError, IndexError):
        raise ProblemError(f"block mask {spec!r}: expected random:S or random:S:SEED") from None
    if not 0 < s <= 1 or len(parts) > 3:
        raise ProblemError(f"block mask {spec!r}: S must be in (0, 1]")
    mask = np.random.default_rng(seed).random(shape) < s
    return mask | _local(1, shape, block_q, block_kv)


def _from_file(path: str) -> np.ndarray:
    try:
        if path.endswith(".npy"):
            return np.load(path)
        with open(path) as f:
            rows = [line.replace(",", " ").split() for line in f if line.strip() and not line.startswith("#")]
        return np.array([[int(x) for x in row] for row in rows])
    except (OSError, ValueError) as exc:
        raise ProblemError(f"cannot read block mask {path}: {exc}") from None
