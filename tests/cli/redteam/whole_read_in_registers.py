"""Returning the reference via ctx.read: read Q, K, V whole, one at a time, and move each out
of shared memory into registers by keeping it under its own resident name with role
"stats" (fp32 registers: 3 × 16 KiB fit the toy's 64 KiB and are only reported).

Standard attention on the whole tensors is exact; the traffic is padded to FA2's with
dummy block loads (K, V once per visible (i, j) minus the one whole read) and O, L are
written whole. Must fail capacity: whole tensors sat on chip.
"""

from iosim.engine.tiles import maximum  # noqa: F401


def fa2_forward(ctx):
    held = {}
    for name in ("Q", "K", "V"):
        whole = ctx.read(name)
        held[name] = ctx.keep(f"{name} (whole tensor, ctx.read)", whole, role="stats")
    S = ctx.mask((held["Q"] @ held["K"].T) * ctx.softmax_scale)
    m = S.rowmax()
    P = (S - m.col()).exp()
    l = P.rowsum()
    O, L = l.reciprocal().col() * (P @ held["V"]), m + l.log()
    _pad_traffic(ctx)
    ctx.write("O", O)
    ctx.write("L", L)


def _pad_traffic(ctx):
    last = sum(1 for _ in ctx.q_blocks()) - 1
    for i in ctx.q_blocks():
        if i.index == last:              # the last query block sees every key: the whole read stood for it
            continue
        for j in ctx.kv_blocks(visible_to=i):
            ctx.load("K", j)
            ctx.load("V", j)


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
