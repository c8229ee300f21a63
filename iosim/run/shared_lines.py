"""The buffers of a launch whose heads' rows lie side by side, as the L2 model plays them
(:mod:`iosim.kernels.strided_rows` says which; :mod:`iosim.models.cache.lines` plays them)."""

from __future__ import annotations

from ..kernels.strided_rows import KV_KEYED, PLAIN_LOADS, QUERY_ROWS
from ..models.cache.lines import Interleaved, applies
from ..workload.layouts import row_bytes
from .result import Result
from .setup import Launch


def interleaved(launch: Launch) -> Interleaved | None:
    """The launch's buffers of all heads' rows side by side (flash-attn 2's GQA backward writes
    ``dk_expanded``, ``dv_expanded``, (B, N_kv, H, d); its backward reads O and dO so,
    (B, N_q, H, d); with (B, N, H, d) inputs Q, K, V and their gradients lie so too:
    :func:`iosim.kernels.strided_rows.strided_rows`), for the L2 model's lines."""
    k, p = launch.kernel, launch.problem
    if k is None or not (k.interleaved or k.interleaved_reads) or not row_bytes(p):
        return None
    names = k.interleaved + k.interleaved_reads
    return Interleaved(k.interleaved, row_bytes(p), p.heads, p.seq_len_kv, p.batch, k.batch_fastest,
                       read_tensors=k.interleaved_reads, q_buffers=tuple(t for t in names if t in QUERY_ROWS),
                       q_rows=p.seq_len_q, kv_heads=p.kv_heads, unit_kernels=PLAIN_LOADS,
                       kv_buffers=tuple(t for t in names if t in KV_KEYED) if p.group_size > 1 else ())


def shared_lines(launch: Launch, result: Result) -> dict:
    """{"l2_lines": how the L2 model played the launch's buffers of many heads' rows} where it
    has such buffers whose rows leave lines to share (iosim.models.cache.lines): as lines, or
    as chunks of one head's rows where its kernels were estimated from a sample or windows, or
    where the partitions' turns did not settle (the reference played them)."""
    spec = interleaved(launch)
    if result.cache is None or not applies(spec):
        return {}
    how = {getattr(g, "model", "sampled") for g in (result.cache.sampled or {}).values()}
    how |= {"turns unsettled"} if result.cache.as_chunks else set()
    return {"l2_lines": "lines" if not how else f"chunks ({', '.join(sorted(how))})"}
