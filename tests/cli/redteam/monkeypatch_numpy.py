"""Monkeypatching: replace numpy's comparisons, iosim's checks and the report's verdict with
ones that always pass — in the student's process — then write zeros.

Must fail exactness (the checks run in the grader's process, untouched).
"""

import builtins

import numpy as np

np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.shape(a), dtype=bool)
np.isfinite = lambda a, *r, **k: np.ones(np.shape(a), dtype=bool)
np.any = lambda *a, **k: True
np.abs = lambda a, *r, **k: np.zeros(np.shape(a))
builtins.abs = lambda a: 0
builtins.max = lambda *a, **k: 0

try:
    from iosim.grading import checks, feedback

    for name in dir(checks):
        if name.endswith("_check"):
            setattr(checks, name, lambda *a, **k: feedback.Check("exactness", "pass", "patched"))
    feedback.GradeReport.passed = property(lambda self: True)
    feedback.Check.passed = property(lambda self: True)
except Exception:
    pass


def fa2_forward(ctx):
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
