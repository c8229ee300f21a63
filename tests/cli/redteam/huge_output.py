"""Huge output: 200 MB to stdout (and stderr), hoping to fill the grader's disk or memory.

Must fail; the grader survives, quickly, and the report keeps only a bounded tail.
"""

import os
import sys


def fa2_forward(ctx):
    chunk = "x" * (1 << 20) + "\n"
    for _ in range(200):
        sys.stdout.write(chunk)
        sys.stderr.write(chunk)
    sys.stdout.flush()
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

