"""Fork bomb (bounded at 300 so a broken sandbox cannot take the machine down): fork until it
fails; every child execs a sleeper carrying a token in its argv.

Prints "forks limited after N" when fork fails before the bound (RLIMIT_NPROC works) and
"forks unlimited" otherwise. Must be limited, and nothing with the token may survive.
"""

import os
import time

TOKEN = "__TOKEN__"
BOUND = 300


def _bomb():
    made = 0
    while made < BOUND:
        try:
            pid = os.fork()
        except OSError:
            print(f"forks limited after {made}", flush=True)
            return
        if pid == 0:
            os.closerange(3, 1024)
            try:
                os.execv("/bin/sh", ["sh", "-c", "sleep 20; :", TOKEN])
            except OSError:
                time.sleep(20)
            os._exit(0)
        made += 1
    print("forks unlimited", flush=True)


def fa2_forward(ctx):
    _bomb()
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

