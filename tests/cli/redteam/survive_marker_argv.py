"""Surviving processes: fork a child that leaves the process group (setpgid), ignores SIGTERM,
SIGHUP and SIGINT, and execs a sleeper whose command line carries a marker token; the
student's process then exits normally.

Must leave nothing behind: no process with the token in its argv after the grade.
"""

import os
import signal
import sys

TOKEN = "__TOKEN__"


def _sleeper():
    pid = os.fork()
    if pid != 0:
        return
    os.setpgid(0, 0)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    os.closerange(3, 1024)
    try:
        os.execv(sys.executable, [sys.executable, "-c", "import signal, time\n"
                                  "for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT): "
                                  "signal.signal(s, signal.SIG_IGN)\ntime.sleep(30)", TOKEN])
    finally:
        os._exit(0)


STARTED = []


def fa2_forward(ctx):
    if not STARTED:
        STARTED.append(1)
        _sleeper()
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

