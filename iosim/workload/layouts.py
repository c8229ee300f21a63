"""The problem a kernel really runs, when it reshapes the user's.

flash-attn's ``mha_fwd`` turns a decoding step with grouped-query attention into a
different but equivalent problem before it launches anything (docs/spec/algorithms.md §6); the
counts are those of the problem it runs, reported on the user's.
"""

from __future__ import annotations

import dataclasses

from .problem import Problem


def decode_layout(problem: Problem) -> Problem:
    """The problem flash-attn's ``mha_fwd`` actually runs for a decoding step.

    With one query row and grouped-query attention (``seqlenq_ngroups_swapped``), the
    H/H_k query heads that share a K/V head become H/H_k query *rows* of one head, so K
    and V are read once per K/V head instead of once per query head (docs/spec/algorithms.md §6).
    With one query row the causal flag is dropped too (it changes nothing). Any other
    problem is returned unchanged.
    """
    if problem.seq_len_q != 1:
        return problem
    if problem.heads == problem.kv_heads:
        return dataclasses.replace(problem, causal=False)
    return dataclasses.replace(problem, seq_len_q=problem.group_size, heads=problem.kv_heads,
                               kv_heads=problem.kv_heads, causal=False)


def row_bytes(problem: Problem) -> int:
    """The bytes of one head's row of Q, K, V (and dO, dK, dV) in the 2-byte elements the real
    kernels take (fp16, bf16), else 0."""
    return 2 * problem.head_dim if problem.dtype in ("fp16", "bf16") else 0


def unaligned_row_bytes(problem: Problem) -> int:
    """:func:`row_bytes` where every other row starts 16 bytes into a 32-byte sector (d ≡ 8
    mod 16), else 0: the rows whose sectors the L1 counts more (iosim.gpu.sectors) and which
    share sectors with their neighbours."""
    row = row_bytes(problem)
    return row if row % 32 else 0


__all__ = ["decode_layout", "row_bytes", "unaligned_row_bytes"]
