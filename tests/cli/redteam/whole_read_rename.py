"""Returning the reference via ctx.read: read K, V, Q whole, one at a time, and after each read
keep a one-row tile under the whole tensor's resident name (it appears in the grader's own
capacity message), which "replaces it in place": the charge of the whole tensor is gone.

Standard attention on the whole tensors, traffic padded to FA2's. Must fail capacity.
"""


def fa2_forward(ctx):
    held = {}
    for name in ("K", "V", "Q"):
        held[name] = ctx.read(name)
        ctx.keep(f"{name} (whole tensor, ctx.read)", held[name].rowmax().rowmax(), role="stats")
    S = ctx.mask((held["Q"] @ held["K"].T) * ctx.softmax_scale)
    m = S.rowmax()
    P = (S - m.col()).exp()
    l = P.rowsum()
    O, L = l.reciprocal().col() * (P @ held["V"]), m + l.log()
    rows = list(ctx.q_blocks())
    for i in rows[:-1]:
        for j in ctx.kv_blocks(visible_to=i):
            ctx.load("K", j)
            ctx.load("V", j)
    ctx.write("O", O)
    ctx.write("L", L)


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
