"""Partial-credit dodge: FA2 without a maximum; on any input it does not recognise by shape it
spins until the time limit, so the large-score input times out instead of being compared.

Must not get exactness: inputs that did not run to the end cannot count as exact.
"""


def fa2_forward(ctx):
    if not _ordinary(ctx):
        while True:
            pass
    _no_max(ctx)


def _no_max(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
        l_i = ctx.fill("l_i", i, 0.0, role="stats")
        for j in ctx.kv_blocks(visible_to=i):
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)
            P = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j).exp(), role="scores")
            l_i = ctx.keep("l_i", l_i + P.rowsum(), role="stats")
            O_i = ctx.keep("O_i", O_i + P @ V_j, role="output")
        ctx.store("O", i, ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output"))
        ctx.store("L", i, ctx.keep("L_i", l_i.log(), role="stats"))


def _ordinary(ctx):
    """The inputs where exponentiating raw scores is exact: the ones of the README but the large one."""
    p = ctx.problem
    return (p.seq_len_q, p.seq_len_kv, p.causal) in {(128, 128, False), (100, 100, False), (128, 128, True),
                                                     (70, 100, True)}


WHY_TRAFFIC_DIFFERS = """
FA2 keeps Q_i and the running output on chip for the whole inner loop, so Q is read once and O written once.
FA1 streams the queries in its inner loop and rereads and rewrites O, l and m for every pair of blocks.
"""

