"""What the L1's tag stage counts beyond the bytes the kernels request: whole 32-byte sectors.

Nsight Compute's ``l1tex__t_bytes_pipe_lsu_mem_global_op_ld`` counts, for each warp's load
request, the 32-byte sectors it touches. Where a request's bytes start or end inside a
sector, the partly used sectors count whole. iosim counts requested bytes (what the
instructions ask for), so the two differ exactly there.

One such place decides the main backward kernel of flash-attn 2 at short or unaligned
query lengths: the softmax statistics L (``softmax_lse``, fp32, N_q values per head, the
heads packed one after another) are read, for each query block a key block's thread block
visits, by each of the ``stats_loads`` warps that split the key columns, for the block's
real rows, 8 rows per load instruction (the MMA accumulator layout: 4 lanes a row). The
8 rows from row k of query block i of head h start at byte 4·(h·N_q + i·B_r + k): on a
sector only when that is a multiple of 32, so with N_q not a multiple of 8 half or more of
the heads' requests count a sector more, and a block's last, partial request counts whole
sectors. :func:`stats_excess` sums this over every head and visited (key, query) block
pair. Measured on an H200: with it, the tag stage equals iosim on every main backward
launch of the committed grids but those at d = 40 (docs/validation/2026-12-01-sdpa-fresh.md):
N_q = 1 and 7, and N = 2,500 at d = 80 to 192, which were 0.2 % and 1 % off before.
"""

from __future__ import annotations

import math

SECTOR = 32
L_WIDTH = 4          # fp32
#: rows of L one warp's load instruction reads: in the MMA accumulator layout each group of
#: 4 lanes holds one row, so an instruction covers 8 consecutive rows
ROWS_PER_REQUEST = 8


def sectors(start: int, nbytes: int) -> int:
    """32-byte sectors that the bytes [start, start + nbytes) touch."""
    return 0 if nbytes <= 0 else (start + nbytes - 1) // SECTOR - start // SECTOR + 1


def visits(problem, block_q: int, block_kv: int) -> list[int]:
    """Per query block i, how many key blocks' thread blocks visit it (all of them; causal:
    those with a visible key, the mask aligned bottom-right as flash-attn aligns it)."""
    n_q, n_kv = problem.seq_len_q, problem.seq_len_kv
    t_kv = math.ceil(n_kv / block_kv)
    out = []
    for i in range(math.ceil(n_q / block_q)):
        if not problem.causal:
            out.append(t_kv)
            continue
        last_key = min((i + 1) * block_q, n_q) - 1 + (n_kv - n_q)     # the block's last row sees keys ≤ this
        out.append(max(0, min(t_kv, last_key // block_kv + 1)))
    return out


def stats_excess(problem, block_q: int, block_kv: int, stats_loads: int) -> int:
    """Bytes the tag stage counts beyond iosim's L loads in the main backward kernel, over
    every head (see the module's docstring). The alignment of head h repeats every 8 heads
    (sectors hold 8 values), so 8 heads are summed and scaled."""
    heads, n_q = problem.batch * problem.heads, problem.seq_len_q
    seen = visits(problem, block_q, block_kv)
    def per_head(h: int) -> int:
        extra = 0
        for i, count in enumerate(seen):
            rows = min(block_q, n_q - i * block_q)
            for k in range(0, rows, ROWS_PER_REQUEST):
                start, r = L_WIDTH * (h * n_q + i * block_q + k), min(ROWS_PER_REQUEST, rows - k)
                extra += count * (SECTOR * sectors(start, r * L_WIDTH) - r * L_WIDTH)
        return extra
    period = [per_head(h) for h in range(min(8, heads))]
    full, rest = divmod(heads, 8)
    return stats_loads * (full * sum(period) + sum(period[:rest]))
