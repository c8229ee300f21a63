"""Hoarding (globals): S_ij and V_j go into a module-level dict, kept on chip under names made
resident before the inner loop (one charge each); the second pass reads the dict.

Must fail: capacity or a ScheduleError.
"""

from iosim.engine.tiles import maximum

HOARD = {}


def _pass_one(ctx, i, Q_i):
    global HOARD
    HOARD = {}
    for j in ctx.kv_blocks(visible_to=i):
        S = ctx.keep("S_g", ctx.mask((Q_i @ ctx.load("K", j).T) * ctx.softmax_scale, i, j), role="scores")
        HOARD[j.index] = (S, ctx.keep("V_g", ctx.load("V", j), role="input"))


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        ctx.fill("S_g", i, 0.0, role="scores", cols=ctx.blocks.block_kv)
        ctx.fill("V_g", i, 0.0, role="input", cols=d)
        _pass_one(ctx, i, Q_i)
        tiles = [HOARD[k] for k in sorted(HOARD)]
        m = tiles[0][0].rowmax()
        for S, _ in tiles[1:]:
            m = maximum(m, S.rowmax())
        base = m.inf_as_zero().col()
        l = O = None
        for S, V in tiles:
            P = (S - base).exp()
            l = P.rowsum() if l is None else l + P.rowsum()
            O = P @ V if O is None else O + P @ V
        ctx.store("O", i, l.reciprocal().col() * O)
        ctx.store("L", i, m + l.log())


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
