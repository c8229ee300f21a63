"""What two count runs must agree on, for the tests that compare ways of counting the same
run (affine groups, interchangeable loops, trace mode): the totals and each thread
block's work. Imported by its plain name (tests/conftest.py puts this folder on sys.path)."""


def summary(r):
    """The traffic, operations, on-chip peaks and times of a result."""
    return {"tensors": r.tensors, "kernels": r.kernels, "ops": r.ops, "kernel_ops": r.kernel_ops,
            "sram": r.sram, "registers": r.registers, "time": repr(r.time), "kernel_times": repr(r.kernel_times)}


def records(r):
    """Every thread-block record, in launch order, as the ledger gives it."""
    return {k: (w.heads, [(x.key, x.count, dict(x.ops), dict(x.products)) for x in w.blocks])
            for k, w in r.cta_work.items()}


def runs(r, skip=()):
    """Thread blocks in launch order as (count, ops, products) runs of equal work (trace
    mode records them one by one); the launches in ``skip`` left out."""
    out = {}
    for k, w in r.cta_work.items():
        if k in skip:
            continue
        found = []
        for x in w.blocks:
            if found and found[-1][1:] == [dict(x.ops), dict(x.products)]:
                found[-1][0] += x.count
            else:
                found.append([x.count, dict(x.ops), dict(x.products)])
        out[k] = (w.heads, found)
    return out
