"""Write a loop order of your own and run it through iosim's simulator.

The schedule below is *not* built in: "row-streaming" attention, the naive fused kernel
where each query row streams all of K and V through on-chip memory with the online
softmax, one row at a time. It is FA2's loop order with B_r = 1, so every key/value
block is re-read for every query row: 2·N²·d elements of K and V instead of FA2's
2·T_r·N·d. The same function counts bytes and computes the output.

Run:  python examples/custom_schedule.py
"""

from __future__ import annotations

import math

import numpy as np

from iosim import Problem, reference_attention, simulate
from iosim.engine.tiles import maximum
from iosim import random_inputs


def row_streaming(ctx) -> None:
    """One query row at a time (run it with block_q=1); K_j, V_j re-read for every row."""
    if ctx.blocks.block_q != 1:
        raise ValueError("row_streaming processes one query row at a time: pass block_q=1")
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():                       # every query row
        q = ctx.load("Q", i)                       # the row, into shared memory
        o = ctx.fill("o", i, 0.0, role="output", cols=d)
        l = ctx.fill("l", i, 0.0, role="stats")
        m = ctx.fill("m", i, -math.inf, role="stats")
        for j in ctx.kv_blocks(visible_to=i):
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)   # re-read for this row
            s = ctx.keep("s", ctx.mask((q @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
            m_new = maximum(m, s.rowmax())
            p = (s - m_new.inf_as_zero().col()).exp()
            rescale = (m - m_new.inf_as_zero()).exp()      # online-softmax rescaling
            l = ctx.keep("l", rescale * l + p.rowsum(), role="stats")
            o = ctx.keep("o", rescale.col() * o + p @ V_j, role="output")
            m = ctx.keep("m", m_new, role="stats")
        ctx.store("O", i, (1.0 / l).col() * o)


def main() -> None:
    problem = Problem(seq_len=1024, head_dim=64)
    counted = simulate("h100-sxm", row_streaming, problem, blocks=(1, 64))
    fa2 = simulate("h100-sxm", "fa2", problem, blocks=(64, 64))
    print(f"row streaming: K+V read {counted.tensors['K'].read_bytes + counted.tensors['V'].read_bytes:,} B, "
          f"HBM total {counted.hbm.total_bytes:,} B, SRAM peak {counted.sram.peak_bytes:,} B")
    print(f"fa2 (64×64):   K+V read {fa2.tensors['K'].read_bytes + fa2.tensors['V'].read_bytes:,} B, "
          f"HBM total {fa2.hbm.total_bytes:,} B")

    small = Problem(seq_len=200, head_dim=16, causal=True)
    x = random_inputs(small, seed=0)
    out = simulate("h100-sxm", row_streaming, small, blocks=(1, 32), mode="numeric", inputs=x)
    error = np.abs(out.outputs["O"] - reference_attention(x["Q"], x["K"], x["V"], causal=True)).max()
    print(f"numeric check (N=200, causal): max abs error vs reference {error:.1e}")


if __name__ == "__main__":
    main()
