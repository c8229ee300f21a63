"""Causal blocks grouped by the shape of their inner loop (iosim/engine/affine.py).

A count run groups the query (or key) blocks of a causal outer loop by the shape of their
inner loop and weights the inner loop's full blocks by Σ n_i over the group. Everything
it produces must be what one body per block gives (trace mode) and exactly what grouping
by active set gives (the count run before affine groups, still used as the fallback): the
traffic per kernel and tensor, the operations, the on-chip peaks, the times, and every
thread block's work in launch order.
"""

import itertools
import random

import pytest

import iosim.run.count as count_module
from iosim import Options, Problem, simulate
from iosim.engine.residency import ResidencyTracker
from iosim.models.kernel_time import busiest_sm
from count_summaries import records as _records, runs as _runs, summary as _summary


def _grouped_by_active_set(monkeypatch, *args, **kwargs):
    """The count run with affine groups off (grouped by active set, as before them)."""
    run = count_module._run
    with monkeypatch.context() as m:
        m.setattr(count_module, "_run", lambda *a, affine=True, **k: run(*a, affine=False, **k))
        return simulate(*args, **kwargs)


SHAPES = [  # (N_q, N_kv, B_r, B_c): ragged, B_r ≠ B_c both ways, unequal lengths both ways
    (256, 256, 64, 64), (333, 333, 64, 32), (333, 333, 16, 64), (100, 517, 32, 16),
    (517, 100, 16, 32), (1, 300, 64, 64), (300, 1, 64, 64), (250, 250, 48, 80), (96, 200, 32, 128),
]
RUNS = [("fa2", "forward", None), ("fa1", "forward", None), ("fa2", "backward", None),
        ("fa1", "backward", None), ("fa2", "forward+backward", "flash-attn-2")]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "q{}k{}_{}x{}".format(*s))
@pytest.mark.parametrize("algo,passes,kernel", RUNS, ids=lambda v: str(v))
@pytest.mark.parametrize("kv_heads", [None, 2])
def test_grouped_causal_count_equals_trace_and_active_set_groups(shape, algo, passes, kernel, kv_heads, monkeypatch):
    nq, nk, br, bc = shape
    problem = Problem(seq_len_q=nq, seq_len_kv=nk, head_dim=32, heads=4, kv_heads=kv_heads, causal=True)
    kw = dict(passes=passes, blocks=None if kernel else (br, bc),
              options=Options(kernel=kernel, num_splits=1 if kernel else None))
    counted = simulate("h100-sxm", algo, problem, **kw)
    traced = simulate("h100-sxm", algo, problem, mode="trace", **kw)
    before = _grouped_by_active_set(monkeypatch, "h100-sxm", algo, problem, **kw)
    assert _summary(counted) == _summary(traced)
    assert _runs(counted) == _runs(traced)
    assert _summary(counted) == _summary(before)
    assert _records(counted) == _records(before)


@pytest.mark.parametrize("options", [Options(tiles="padded"), Options(count_init=True), Options(residency="sram"),
                                     Options(dq_read_twice=True)], ids=["padded", "count_init", "sram", "dq_twice"])
def test_conventions_too(options, monkeypatch):
    problem = Problem(seq_len_q=300, seq_len_kv=450, head_dim=16, causal=True)
    for algo in ("fa2",) if options.dq_read_twice else ("fa1", "fa2"):   # FA2's option only
        kw = dict(passes="forward+backward", blocks=(32, 48), options=options)
        counted = simulate("h100-sxm", algo, problem, **kw)
        assert _summary(counted) == _summary(simulate("h100-sxm", algo, problem, mode="trace", **kw))
        assert _records(counted) == _records(_grouped_by_active_set(monkeypatch, "h100-sxm", algo, problem, **kw))


def test_split_kv_needs_members_and_is_counted_by_active_set(monkeypatch):
    # Flash-Decoding's splits need each query block's own active set: the affine run stops
    # and the launch is counted again grouped by active set, with the same counts.
    problem = Problem(seq_len_q=200, seq_len_kv=1000, head_dim=32, heads=2, causal=True)
    kw = dict(options=Options(kernel="flash-attn-2", num_splits=3))
    counted = simulate("h100-sxm", "fa2", problem, **kw)
    assert counted.kernels == simulate("h100-sxm", "fa2", problem, mode="trace", **kw).kernels
    assert _records(counted) == _records(_grouped_by_active_set(monkeypatch, "h100-sxm", "fa2", problem, **kw))


def test_block_mask_is_unchanged(monkeypatch):
    problem = Problem(seq_len=512, head_dim=32, causal=True)
    kw = dict(blocks=(64, 64), options=Options(block_mask="local:2"), passes="forward+backward")
    counted = simulate("h100-sxm", "fa2", problem, **kw)
    assert _summary(counted) == _summary(simulate("h100-sxm", "fa2", problem, mode="trace", **kw))


@pytest.mark.parametrize("algo,passes", [("fa2", "forward"), ("fa1", "forward"), ("fa2", "backward"),
                                         ("fa1", "backward")])
def test_loop_bodies_do_not_grow_with_n(algo, passes, monkeypatch):
    # The point of the grouping: a causal count runs a number of loop bodies independent of N.
    bodies = []
    push = ResidencyTracker.push

    def counting_push(self, *a, **k):
        bodies.append(1)
        return push(self, *a, **k)

    monkeypatch.setattr(ResidencyTracker, "push", counting_push)
    per_n = []
    for n in (4096, 1 << 20):
        bodies.clear()
        simulate("h100-sxm", algo, Problem(seq_len=n, head_dim=128, causal=True), blocks=(128, 64), passes=passes)
        per_n.append(len(bodies))
    assert per_n[0] == per_n[1] < 40, per_n


def test_exact_counts_at_one_million():
    # FA2 forward, causal, N = 2^20, B_r = 128, B_c = 64: query block i reads n_i = 2(i+1)
    # key blocks; K and V reads are 2·d·B_c·Σ n_i = 2·d·64·T_r(T_r+1), T_r = 8192.
    n, d, t_r = 1 << 20, 128, 8192
    r = simulate("h100-sxm", "fa2", Problem(seq_len=n, head_dim=d, causal=True), blocks=(128, 64))
    assert r.tensors["K"].read_elements == r.tensors["V"].read_elements == d * 64 * t_r * (t_r + 1)
    assert r.tensors["Q"].read_elements == r.tensors["O"].write_elements == n * d


def _heap(durations, sm_count):
    """The plain definition: every block, in order, to the least-loaded SM."""
    import heapq
    loads = [0.0] * sm_count
    for t, c in durations:
        for _ in range(c):
            heapq.heapreplace(loads, loads[0] + t)
    return max(loads)


def test_busiest_sm_takes_the_head_count():
    rng = random.Random(13)
    for _ in range(300):
        runs = [(rng.choice([0.5, 1.0, 1.25, 3.0, rng.random()]), rng.randint(1, 5)) for _ in range(rng.randint(1, 8))]
        sms, heads = rng.randint(1, 9), rng.randint(1, 12)
        got = busiest_sm(runs, sms, heads)
        assert got == busiest_sm(runs * heads, sms)               # bit for bit the list's result
        if len({t for t, _ in runs}) > 1:
            assert got == _heap(runs * heads, sms)                # the heap, the same floats in order
        else:                                                     # the closed form: to rounding
            assert got == pytest.approx(_heap(runs * heads, sms), rel=1e-12)
    assert busiest_sm([(2.0, 3)], 4, 5) == 4 * 2.0          # uniform: ⌈15 / 4⌉ waves
    assert busiest_sm([], 4, 5) == 0.0


def test_busiest_sm_average_bound_without_the_list(monkeypatch):
    import iosim.models.sm_schedule as schedule
    monkeypatch.setattr(schedule, "MAX_SCHEDULED_BLOCKS", 10)
    runs = [(1.0, 3), (2.0, 1), (0.5, 2)]
    for heads in (4, 7, 1000):
        assert busiest_sm(runs, 3, heads) == pytest.approx(busiest_sm(runs * heads, 3), rel=1e-12)
        assert busiest_sm(runs, 3, heads) == pytest.approx(max(6.0 * heads / 3, 2.0), rel=1e-12)


def test_many_shapes_quickly(monkeypatch):
    # A sweep of small shapes, fa2 forward and fa1 backward, against the active-set grouping.
    for nq, nk, br, bc in itertools.product((17, 64, 130), (33, 64, 200), (16, 32), (16, 48)):
        problem = Problem(seq_len_q=nq, seq_len_kv=nk, head_dim=8, causal=True)
        for algo, passes in (("fa2", "forward"), ("fa1", "backward")):
            kw = dict(blocks=(br, bc), passes=passes)
            counted = simulate("h100-sxm", algo, problem, **kw)
            before = _grouped_by_active_set(monkeypatch, "h100-sxm", algo, problem, **kw)
            assert (_summary(counted), _records(counted)) == (_summary(before), _records(before)), (nq, nk, br, bc)
