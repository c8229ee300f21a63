"""Reading the environment: os.environ, /proc/1/environ, /proc/PPID/environ and every other
/proc/*/environ it can open, looking for the grader's variables (the test puts a canary,
IOSIM_REDTEAM_CANARY, into the grader's environment).

Prints "LEAK ..." with what it finds. Must print no LEAK and no canary value.
"""

import os

NEEDLE = b"IOSIM_REDTEAM_CANARY"


def _look():
    found = [f"os.environ {k}={v}" for k, v in os.environ.items() if k.encode() == NEEDLE]
    pids = ["1", str(os.getppid()), "self"] + [p for p in os.listdir("/proc") if p.isdigit()]
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                data = f.read()
        except OSError:
            continue
        for item in data.split(b"\0"):
            if item.startswith(NEEDLE):
                found.append(f"/proc/{pid}/environ {item.decode(errors='replace')}")
    return found


def fa2_forward(ctx):
    for leak in _look()[:5]:
        print("LEAK", leak, flush=True)
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

