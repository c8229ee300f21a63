"""Cheat (fa2): no online softmax; hold a whole row of score tiles in Python variables.

For each query block, the first pass computes every S_ij and keeps the Python objects in
a list, so the exact row maximum is known before any exponential; K and V are read once
per query block as in FA2 and nothing is ever rescaled. The S_ij tiles were on chip only
during their own iteration: `iosim grade` must fail it on capacity (a tile used after
its iteration ended).
"""


def fa2_forward(ctx):
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        row = []
        for j in ctx.kv_blocks(visible_to=i):
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)
            row.append((ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), V_j))
        m = row[0][0].rowmax()                                       # uses tiles of ended iterations
        for S, _ in row[1:]:
            m = m + 0.0  # (the exact row maximum would follow here)
        P = [(S - m.col()).exp() for S, _ in row]
        l = P[0].rowsum()
        O = P[0] @ row[0][1]
        ctx.store("O", i, l.reciprocal().col() * O)
        ctx.store("L", i, m + l.log())
