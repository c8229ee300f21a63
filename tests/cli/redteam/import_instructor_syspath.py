"""Reading instructor files by import: put the instructor folder (and the cheats folder) on
sys.path — the known repository path and every folder above the iosim package — and
import the solution as a module.

Prints "LEAK ..." when the import works. Must fail (exactness: zeros) and print no LEAK.
"""

import os
import pathlib
import sys

REPO = "__REPO__"

for root in [REPO] + [str(pathlib.Path(p).resolve().parents[1]) for p in
                      [__import__("iosim").__file__]]:
    sys.path.insert(0, os.path.join(root, "examples", "assignments", "instructor"))

try:
    from fa2_solution import fa2_forward as _solution
    print("LEAK imported", _solution.__module__, flush=True)
except Exception:
    _solution = None


def fa2_forward(ctx):
    if _solution is not None:
        return _solution(ctx)
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

