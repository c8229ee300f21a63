"""Network: connect to a listener on 127.0.0.1 (the test opens it and writes its port here)
and send what the submission knows — the way out for anything it finds.

Prints "LEAK ..." if the connection worked. Must not reach the listener.
"""

import socket

PORT = "__PORT__"


def _phone_home():
    try:
        with socket.create_connection(("127.0.0.1", int(PORT)), timeout=2) as s:
            s.sendall(b"hello from the sandbox\n")
        return True
    except (OSError, ValueError):
        return False


def fa2_forward(ctx):
    if _phone_home():
        print("LEAK connected to 127.0.0.1", flush=True)
    _zeros(ctx)


def _zeros(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        ctx.store("O", i, ctx.fill("O_i", i, 0.0, role="output", cols=d))
        ctx.store("L", i, ctx.fill("L_i", i, 0.0, role="stats"))

