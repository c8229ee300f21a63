"""The attention problem being simulated, and the block sizes that tile it.

Paper symbols (FlashAttention, arXiv 2205.14135, Algorithm 1):

====================  ===========================================================
paper                 code
====================  ===========================================================
N                     ``Problem.seq_len_q`` (query rows) / ``Problem.seq_len_kv``
d                     ``Problem.head_dim``
M                     ``sram_elements`` (per-block SRAM in elements of the dtype)
B_r                   ``BlockSizes.block_q`` (query rows per tile)
B_c                   ``BlockSizes.block_kv`` (key/value rows per tile)
T_r = ⌈N/B_r⌉         ``BlockSizes.num_q_blocks(problem)``
T_c = ⌈N/B_c⌉         ``BlockSizes.num_kv_blocks(problem)``
====================  ===========================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..dtypes import width
from ..errors import ProblemError, require_positive_int


#: the largest sizes a problem may have (docs/input-limits.md): beyond them the counts are
#: still exact integers, but the loops, the arrays and the cache model would not finish
MAX_SEQ_LEN = 1 << 24          # 16,777,216 tokens
MAX_HEAD_DIM = 1 << 16         # 65,536 (the real kernels stop at 256)
MAX_HEADS_TOTAL = 1 << 24      # B·H
#: the memory layouts of the inputs (:attr:`Problem.layout`)
LAYOUTS = ("bhnd", "bnhd")


@dataclass(frozen=True)
class Problem:
    """One attention call: B·H independent heads of softmax(QKᵀ/√d)V.

    ``seq_len`` is a shorthand that sets both sequence lengths (square attention, the
    paper's case). ``kv_heads`` (H_k, default H) < ``heads`` is grouped-query attention:
    each K/V head serves H/H_k query heads (MQA when H_k = 1). With ``causal`` and unequal lengths the mask is aligned bottom-right,
    as flash-attn ≥ 2.1 does (docs/spec/algorithms.md §5): key k is visible to query q iff
    k ≤ q + seq_len_kv − seq_len_q.
    """

    head_dim: int
    seq_len_q: int = 0
    seq_len_kv: int = 0
    batch: int = 1
    heads: int = 1
    dtype: str = "fp16"
    causal: bool = False
    seq_len: int | None = None
    kv_heads: int | None = None
    #: how Q, K, V (and so O, dO, dQ, dK, dV) lie in memory: "bhnd", a head's rows contiguous
    #: (``torch.randn(B, H, N, d)``), or "bnhd", a row's heads side by side (flash-attn's own API,
    #: and a projection's output viewed per head). Only the L2 model of the flash-attn-2 preset
    #: tells them apart (docs/cache.md, "Layouts"); the counts are the same.
    layout: str = "bhnd"

    def __post_init__(self) -> None:
        if self.seq_len is not None:
            require_positive_int("seq_len", self.seq_len)      # named as given, not as the two it sets
            object.__setattr__(self, "seq_len_q", self.seq_len_q or self.seq_len)
            object.__setattr__(self, "seq_len_kv", self.seq_len_kv or self.seq_len)
            object.__setattr__(self, "seq_len", None)
        if self.kv_heads is None:
            object.__setattr__(self, "kv_heads", self.heads)
        for name in ("head_dim", "seq_len_q", "seq_len_kv", "batch", "heads", "kv_heads"):
            require_positive_int(name, getattr(self, name))
        lengths = (("seq_len", MAX_SEQ_LEN),) if self.seq_len_q == self.seq_len_kv else \
            (("seq_len_q", MAX_SEQ_LEN), ("seq_len_kv", MAX_SEQ_LEN))
        for name, most in lengths + (("head_dim", MAX_HEAD_DIM),):
            value = getattr(self, "seq_len_q" if name == "seq_len" else name)
            if value > most:
                raise ProblemError(f"{name} must be at most {most:,}, got {value:,}", field=name)
        if self.batch * self.heads > MAX_HEADS_TOTAL:
            raise ProblemError(f"batch × heads must be at most {MAX_HEADS_TOTAL:,}, got "
                               f"{self.batch:,} × {self.heads:,}", field="heads")
        width(self.dtype)  # validates the name
        if self.layout not in LAYOUTS:
            raise ProblemError(f"unknown layout {self.layout!r}: choose one of {', '.join(LAYOUTS)}", field="layout")
        if self.heads % self.kv_heads:
            raise ProblemError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")

    @property
    def heads_total(self) -> int:
        """B·H: every per-head count is multiplied by this."""
        return self.batch * self.heads

    @property
    def kv_heads_total(self) -> int:
        """B·H_k: how many K/V heads exist (B·H without grouped-query attention)."""
        return self.batch * self.kv_heads

    @property
    def group_size(self) -> int:
        """Query heads per K/V head (1 for plain multi-head attention)."""
        return self.heads // self.kv_heads

    def kv_head_of(self, h):
        """The K/V head (over batch × K/V heads) that query head ``h`` (over batch × heads)
        reads; ``h`` may be an int or a NumPy array of them."""
        return (h // self.heads) * self.kv_heads + (h % self.heads) // self.group_size

    @property
    def width(self) -> int:
        """Bytes per element of Q, K, V, O, S, P."""
        return width(self.dtype)

    @property
    def is_square(self) -> bool:
        return self.seq_len_q == self.seq_len_kv


@dataclass(frozen=True)
class BlockSizes:
    """B_r × B_c: query rows and key/value rows per tile."""

    block_q: int
    block_kv: int

    def check(self, problem: Problem) -> None:
        """Reject block sizes that cannot tile ``problem`` (non-positive ones)."""
        require_positive_int("block_q", self.block_q)
        require_positive_int("block_kv", self.block_kv)

    def num_q_blocks(self, problem: Problem) -> int:
        """T_r = ⌈N_q / B_r⌉."""
        return -(-problem.seq_len_q // self.block_q)

    def num_kv_blocks(self, problem: Problem) -> int:
        """T_c = ⌈N_kv / B_c⌉."""
        return -(-problem.seq_len_kv // self.block_kv)


def sram_elements(sram_bytes: int, dtype: str) -> int:
    """M: the per-block SRAM expressed in elements of ``dtype`` (the paper's unit)."""
    return sram_bytes // width(dtype)


def paper_block_sizes(sram_elems: int, head_dim: int) -> BlockSizes:
    """Algorithm 1 line 1: B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d)."""
    block_kv = math.ceil(sram_elems / (4 * head_dim))
    if block_kv < 1:
        raise ProblemError(f"SRAM of {sram_elems} elements is too small for head_dim {head_dim}")
    return BlockSizes(block_q=min(block_kv, head_dim), block_kv=block_kv)
