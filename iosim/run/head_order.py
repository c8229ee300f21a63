"""Heads in launch order: which K/V head the ℓ-th launched head reads, for the L2 model's play and the
forward's first wave (:mod:`.launches`, :mod:`.kernel_timing`)."""

from __future__ import annotations


def head_order(p, batch_fastest: bool) -> tuple:
    """(the K/V head of the ℓ-th head in launch order, whether it leads its GQA group, the
    launch-ordered heads after which the sharing of K/V heads repeats). Heads launch as
    b·H + h, or, where the grid's batch dimension is faster (flash-attn 2), as h·B + b: then
    the H/H_k query heads of one K/V head are B heads apart in launch order, not next to
    each other, and they share K and V in the L2 only if the heads between them leave them
    cached (a GQA decode backward of B = 8 reads K and V from DRAM once per query head)."""
    if not batch_fastest or p.batch == 1 or p.group_size == 1:
        return p.kv_head_of, (lambda h: (h % p.heads) % p.group_size == 0), p.group_size

    def head(ell):                               # launch order -> b·H + h
        return (ell % p.batch) * p.heads + ell // p.batch
    return (lambda ell: p.kv_head_of(head(ell))), (lambda ell: (ell // p.batch) % p.group_size == 0), \
        p.batch * p.group_size


__all__ = ["head_order"]
