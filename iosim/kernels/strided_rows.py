"""Which tensors of flash-attn 2's launches hold the rows of all heads side by side.

A buffer laid out (B, N, H, d) puts a row's H heads next to each other in memory: where a head's
row of R bytes is no whole number of 128-byte lines, neighbouring heads' rows share lines, and
the L2 model plays such buffers as lines (:mod:`iosim.models.cache.lines`,
:mod:`iosim.models.cache.line_reads`). flash-attn 2 meets them in three ways:

* its GQA backward writes dK and dV per query head into (B, N_kv, H, d) buffers
  (``dk_expanded``, ``dv_expanded`` in flash_api.cpp's ``mha_bwd``), whatever the inputs;
* its backward reads O and dO as PyTorch's ``_flash_attention_backward`` passes them,
  ``out.contiguous()`` and ``grad_out.contiguous()`` of (B, N_q, H, d) views;
* with (B, N, H, d) inputs (:attr:`iosim.workload.problem.Problem.layout` "bnhd": flash-attn's
  own API, and a projection's output viewed per head), Q, K and V, and what is allocated like
  them: O (``empty_like(q)`` in ``mha_fwd``), dQ, dK and dV (``empty_like`` in ``mha_bwd``).
"""

from __future__ import annotations

from ..workload.problem import Problem

#: flash-attn 2's GQA backward writes dK and dV per query head into (B, N_kv, H, d) buffers
EXPANDED = ("dK_expanded", "dV_expanded")
#: what flash-attn 2's backward reads as PyTorch passes it, a query row's neighbours the other
#: heads' same row
HEAD_MAJOR_READS = ("O", "dO")
#: the buffers of N_q rows a head (the others have N_kv), and those keyed by K/V head under GQA
QUERY_ROWS, KV_KEYED = ("Q", "O", "dO", "dQ"), ("K", "V", "dK", "dV")
#: the kernels that load such rows with plain loads (dot_do_o: ``GmemTiledCopydO``, an LDG), whose miss
#: reads the 64-byte DRAM units the rows touch; the others load them with ``cp.async.cg.shared.global.L2::128B``
#: (``Gmem_copy_struct``, ``SM80_CP_ASYNC_CACHEGLOBAL``; SASS ``LDGSTS.E.BYPASS.LTC128B``), whose miss reads
#: the whole 128-byte line
PLAIN_LOADS = ("dot_do_o",)


def strided_rows(run: Problem, own_rows: bool, passes: str) -> dict:
    """KernelLaunch's ``interleaved`` (written) and ``interleaved_reads`` of flash-attn 2 running
    ``run`` in ``passes`` ("forward" or "backward"). ``own_rows``: False where the forward runs
    the decode layout (:func:`iosim.workload.layouts.decode_layout`), whose query rows are one
    K/V head's group of query heads, contiguous in either layout."""
    bnhd = run.layout == "bnhd"
    query = run.heads > 1 and own_rows
    keys = bnhd and run.kv_heads > 1
    if passes == "forward":
        return {"interleaved": ("O",) if bnhd and query else (),
                "interleaved_reads": (("Q",) if bnhd and query else ()) + (("K", "V") if keys else ())}
    return {"interleaved": (EXPANDED if run.group_size > 1 else ()) + (("dQ",) if bnhd and query else ())
            + (("dK", "dV") if keys else ()),
            "interleaved_reads": (HEAD_MAJOR_READS if query else ()) + (("Q",) if bnhd and query else ())
            + (("K", "V") if keys else ())}
