"""Cheat (fa2): look for the reference answer, the inputs or the grader's state.

Tries what a schedule can reach from its process: private attributes of ctx and of
tiles, every object the garbage collector knows, the frames below it, the grader's
modules, the environment, and the grader's memory through /proc. It prints what it
found, then writes an all-zero output. Nothing should be found — the inputs, the
expected counts and the reference live only in the grader's process, and the reference
is computed after this process has ended — so `iosim grade` fails it on exactness.
"""

import gc
import os
import sys

import numpy as np


def _peek(ctx, tile):
    found = []
    for owner, names in ((ctx, ("hbm", "ledger", "residency", "tensors", "inputs", "reference", "_ctx")),
                         (tile, ("data", "ctx", "home"))):
        for name in names:
            try:
                getattr(owner, name)
                found.append(f"{type(owner).__name__}.{name}")
            except AttributeError:
                pass
    for obj in gc.get_objects():
        if isinstance(obj, np.ndarray) and obj.dtype == np.float64 and obj.size >= 64:
            found.append(f"array {obj.shape}")
        elif str(vars(type(obj)).get("__module__", "")).startswith("iosim") and type(obj).__name__ in (
                "Context", "Result", "CaseRun", "Ledger", "ScheduleServer", "GradeReport"):
            found.append(type(obj).__name__)
    frame = sys._getframe()
    while frame is not None:
        for key in ("reference", "expected", "inputs", "runs", "result"):
            if key in frame.f_locals:
                found.append(f"frame {frame.f_code.co_name}: {key}")
        frame = frame.f_back
    for name, module in list(sys.modules.items()):
        if name.startswith("iosim.grading.") and hasattr(module, "best_blocks"):
            if module.best_blocks.cache_info().currsize:
                found.append(f"{name}: cached answers")
    found += [f"environment {k}" for k in os.environ if "IOSIM" in k or "GRADE" in k]
    try:
        with open(f"/proc/{os.getppid()}/maps") as f:
            start = int(f.readline().split("-")[0], 16)
        with open(f"/proc/{os.getppid()}/mem", "rb") as f:
            f.seek(start)
            f.read(16)
        found.append("the grader's memory")
    except OSError:
        pass
    return found


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        zero = ctx.fill("O_i", i, 0.0, role="output", cols=d)
        if i.index == 0:
            print("peek found:", _peek(ctx, zero), flush=True)
        ctx.store("O", i, zero)
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))
