"""Grouped-query attention (GQA/MQA) in the backward pass.

With H_k < H key/value heads, each of the H/H_k query heads of a group produces its own
contribution to dK and dV. The kernels write those to per-query-head buffers
(``dk_expanded``, ``dv_expanded`` in flash-attn's ``mha_bwd``) and then sum each group
into dK, dV: H·N·d elements written and read back, H_k·N·d written. Forward passes need
nothing special: every query head's thread blocks load their group's K and V, so the
requests are those of multi-head attention (a cache would serve the repeats: see
docs/simulator.md).
"""

from __future__ import annotations


def kv_gradient_targets(ctx) -> tuple[str, str]:
    """Where a per-query-head pass writes dK, dV: the tensors (MHA) or expanded buffers (GQA)."""
    return ("dK", "dV") if ctx.problem.group_size == 1 else ("dK_expanded", "dV_expanded")


def reduce_kv_gradients(ctx) -> None:
    """GQA only: dK = Σ over each group of dK_expanded, likewise dV (one read, one write)."""
    if ctx.problem.group_size == 1:
        return
    for name in ("dK", "dV"):
        ctx.write(name, ctx.read(f"{name}_expanded"), sum_over_group=True)
