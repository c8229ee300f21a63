"""Reading the seed: the inputs are random_inputs(problem, seed + k); with the seed a student
could rebuild them (and the reference) in the child. Looks in its own argv and environment,
/proc/PPID/cmdline and environ, every /proc/*/cmdline, and the frames and objects of its
own process (the hello message), for "seed".

Prints "LEAK ..." with what it finds. Must print no LEAK and not the seed.
"""

import gc
import os
import sys


def _look():
    found = []
    for arg in sys.argv:
        if "seed" in arg.lower():
            found.append(f"argv {arg}")
    for k, v in os.environ.items():
        if "SEED" in k.upper() or "seed" in v.lower():
            found.append(f"env {k}={v}")
    for pid in [str(os.getppid()), "1"] + [p for p in os.listdir("/proc") if p.isdigit()]:
        for what in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    data = f.read().replace(b"\0", b" ")
            except OSError:
                continue
            at = data.lower().find(b"seed")
            if at >= 0:
                found.append(f"/proc/{pid}/{what}: {data[max(0, at - 20):at + 40].decode(errors='replace')}")
    frame = sys._getframe()
    while frame is not None:
        for name, value in frame.f_locals.items():
            if isinstance(value, dict) and any("seed" in str(k).lower() for k in value):
                found.append(f"frame {frame.f_code.co_name}.{name}: {value}")
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, dict) and isinstance(obj.get("seed"), int) and obj.get("seed") not in (0, None):
            found.append(f"object {obj.get('seed')}")
    return found


def fa2_forward(ctx):
    for leak in _look()[:6]:
        print("LEAK", leak[:200], flush=True)
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

