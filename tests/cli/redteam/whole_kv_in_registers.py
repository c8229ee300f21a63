"""Whole K and V moved to registers: read each whole (charged to shared memory under the
grader's reserved name), then keep it under that same name with role "stats", which would
put it in the whole read's place, in the 64 KiB of registers, out of the 8 KiB of shared
memory. Each query block then computes an exact softmax over every key at once (no online
rescaling), with FA2's traffic padded by dummy block loads. Must fail: the name is reserved.
"""


def fa2_forward(ctx):
    K = ctx.keep("K (whole tensor, ctx.read)", ctx.read("K"), role="stats")
    V = ctx.keep("V (whole tensor, ctx.read)", ctx.read("V"), role="stats")
    first = True
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        S = ctx.mask((Q_i @ K.T) * ctx.softmax_scale, i)
        m = S.rowmax()
        P = (S - m.col()).exp()
        l = P.rowsum()
        ctx.store("O", i, l.reciprocal().col() * (P @ V))
        ctx.store("L", i, m + l.log())
        for j in ctx.kv_blocks(visible_to=i):
            if not first:
                ctx.load("K", j)
                ctx.load("V", j)
        first = False


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""
