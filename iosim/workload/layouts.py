"""The problem a kernel really runs, when it reshapes the user's.

flash-attn's ``mha_fwd`` turns a decoding step with grouped-query attention into a
different but equivalent problem before it launches anything (docs/spec/algorithms.md §6);
PyTorch's SDPA pads a head dim that is no multiple of 8 with zero columns before it calls
flash-attn (docs/spec/kernels.md §1.1). The counts are those of the problem the kernels run,
reported on the user's; a numeric run pads the inputs and trims the outputs the same way.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .problem import Problem

#: PyTorch's SDPA pads the head dim of Q, K and V to a multiple of this before flash-attn
SDPA_HEAD_DIM_ALIGN = 8
#: the tensors with a head-dim axis last, which padding widens (the statistics L have none)
HEAD_DIM_TENSORS = ("Q", "K", "V", "O", "dO", "dQ", "dK", "dV")


def sdpa_padded(problem: Problem) -> Problem:
    """The problem flash-attn 2 runs under PyTorch's SDPA: the head dim rounded up to a
    multiple of 8 (``pad_last_dim<8>`` of Q, K and V in attention.cpp; the output is sliced
    back, and the softmax scale stays 1/√d of the user's d). Unchanged where d is one. The padded
    copies are new tensors (``at::pad``), contiguous in their (B, H, N, d) shape whatever the
    inputs' strides: their layout is "bhnd"."""
    d = problem.head_dim
    padded = -(-d // SDPA_HEAD_DIM_ALIGN) * SDPA_HEAD_DIM_ALIGN
    return problem if padded == d else dataclasses.replace(problem, head_dim=padded, layout="bhnd")


def padded_layout_notes(problem: Problem, kernel: str | None) -> tuple[str, ...]:
    """A run's note where PyTorch pads flash-attn 2's head dim and the inputs' (B, N, H, d) layout is left behind
    (:func:`sdpa_padded`); () elsewhere."""
    if kernel != "flash-attn-2" or problem.layout != "bnhd" or sdpa_padded(problem) == problem:
        return ()
    return (f"PyTorch pads the head dim {problem.head_dim} into new tensors laid out (B, H, N, d): the inputs' "
            f"layout bnhd does not reach the kernels, which the L2 model plays as (B, H, N, d)",)


def kernel_inputs(inputs: dict[str, np.ndarray], user: Problem, runs: Problem) -> dict[str, np.ndarray]:
    """A numeric run's inputs on the user's problem, as the kernels of ``runs`` read them: the
    decode layout's query heads as rows, zero columns up to a padded head dim."""
    out = {}
    for name, v in inputs.items():
        if name in ("Q", "dO") and runs.heads != user.heads:
            v = v.reshape((runs.batch, runs.heads, runs.seq_len_q) + v.shape[3:])
        if name in HEAD_DIM_TENSORS and runs.head_dim != user.head_dim:
            v = np.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, runs.head_dim - user.head_dim)])
        out[name] = v
    return out


def user_outputs(outputs: dict[str, np.ndarray], user: Problem, runs: Problem) -> dict[str, np.ndarray]:
    """The kernels' outputs on ``runs`` back on the user's problem (:func:`kernel_inputs` undone)."""
    out = {}
    for name, v in outputs.items():
        if v.shape[1] * v.shape[2] == user.heads * user.seq_len_q:
            v = v.reshape((user.batch, -1, user.seq_len_q) + v.shape[3:])
        if name in HEAD_DIM_TENSORS and runs.head_dim != user.head_dim:
            v = v[..., :user.head_dim]
        out[name] = v
    return out


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
