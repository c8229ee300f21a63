"""How flash-attn chooses the number of splits for Flash-Decoding (docs/spec/kernels.md §3).

``set_params_splitkv`` in flash-attn's ``flash_api.cpp`` (HEAD 0251105a) calls
``num_splits_heuristic(B·H·m_blocks, 2·#SMs, n_blocks, 128)`` — the SM count is doubled
"to hard-code the fact that we're using 128 threads per block". The heuristic:

1. one split if B·H·m_blocks ≥ 0.8 × (2·#SMs): the grid already fills the GPU;
2. otherwise, over s = 1 … min(128, 2·#SMs, n_blocks), the *eligible* s (s = 1 or
   ⌈n/s⌉ ≠ ⌈n/(s−1)⌉) have efficiency w/⌈w⌉ with w = B·H·m_blocks·s / (2·#SMs);
3. the smallest eligible s whose efficiency is ≥ 0.85 × the best.

The C++ computes w and the efficiency in single precision; so does this port.
"""

from __future__ import annotations

import math

import numpy as np


def num_splits_heuristic(batch_nheads_mblocks: int, num_sms: int, num_n_blocks: int, max_splits: int = 128) -> int:
    """flash-attn's ``num_splits_heuristic``; ``num_sms`` is what the caller passes (2·#SMs there)."""
    if batch_nheads_mblocks >= np.float32(0.8) * num_sms:
        return 1
    max_splits = min(max_splits, num_sms, num_n_blocks)

    def eligible(s: int) -> bool:
        return s == 1 or -(-num_n_blocks // s) != -(-num_n_blocks // (s - 1))

    efficiency = {}
    for s in range(1, max_splits + 1):
        if eligible(s):
            waves = np.float32(batch_nheads_mblocks * s) / np.float32(num_sms)
            efficiency[s] = waves / np.float32(math.ceil(waves))
    best = max(efficiency.values())
    for s in range(1, max_splits + 1):
        if s in efficiency and float(efficiency[s]) >= 0.85 * float(best):
            return s
    return 1


def default_num_splits(batch: int, heads: int, seq_len_q: int, num_kv_blocks: int, sm_count: int,
                       block_q: int = 64) -> int:
    """The splits flash-attn would pick: m_blocks = ⌈N_q/64⌉ (the split kernel's kBlockM)."""
    m_blocks = -(-seq_len_q // block_q)
    return num_splits_heuristic(batch * heads * m_blocks, 2 * sm_count, num_kv_blocks, 128)


__all__ = ["num_splits_heuristic", "default_num_splits"]
