"""The L2 model's fast path against its reference.

1. A count run records its accesses grouped (iosim/engine/requests.py); expanded
   (iosim/models/cache/programs.py) they are, array for array, what a trace run records
   one by one: every CTA's chunk accesses in the same order.
2. The cohort stream (iosim/models/cache/stream.py) against the round robin that plays
   every CTA's every request in turn (playback's ``method="round_robin"``): the same read
   and write requests, DRAM reads within 1 % (equal in most cases), on small problems
   whose caches are small enough to evict.
"""

import dataclasses
import itertools

import numpy as np
import pytest

from iosim import Options, Problem
from iosim.models.cache import LRUCache, occupancy, replay
from iosim.models.cache.programs import head_programs
from iosim.models.cache.stream import schedule
from iosim.run.count import count_launch
from iosim.run.setup import prepare

P = Problem
CASES = [
    ("fa2", "forward", P(seq_len=512, head_dim=32, heads=6), (32, 32), {}),
    ("fa2", "forward+backward", P(seq_len=256, head_dim=16, heads=3, causal=True), (32, 32), {}),  # one kernel
    ("fa2", "forward", P(seq_len=500, head_dim=32, heads=5, causal=True), (16, 32), {}),
    ("fa1", "forward", P(seq_len=300, head_dim=16, heads=4, causal=True), (32, 32), {}),
    ("fa1", "backward", P(seq_len=256, head_dim=16, heads=3), (32, 32), {}),
    ("fa2", "backward", P(seq_len=256, head_dim=16, batch=2, heads=6, kv_heads=2, causal=True), (32, 32), {}),
    ("fa2-splitkv", "forward", P(seq_len_q=1, seq_len_kv=2048, head_dim=32, heads=8, kv_heads=2, batch=3),
     (16, 32), {}),
    ("fa2", "forward", P(seq_len_q=100, seq_len_kv=260, head_dim=16, batch=2, heads=6, kv_heads=3, causal=True),
     (32, 32), {}),
    ("standard", "forward", P(seq_len=256, head_dim=16, heads=3), (64, 64), {"gemm": "tiled"}),
    ("fa2", "forward", P(seq_len=256, head_dim=16, heads=4), (32, 32), {"block_mask": "random:0.5:3"}),
    ("fa2", "forward", P(seq_len=4096, head_dim=128, heads=4, causal=True), None, {"kernel": "flash-attn-2"}),
    ("fa2", "forward+backward", P(seq_len=1000, head_dim=80, heads=3, kv_heads=1), None,
     {"kernel": "flash-attn-2"}),
    ("fa2", "forward", P(seq_len_q=1, seq_len_kv=5000, head_dim=128, heads=8, batch=2), None,
     {"kernel": "flash-attn-2"}),
]


def _recorded(algo, passes, problem, blocks, extra, mode):
    options = {k: v for k, v in extra.items() if k != "gemm"}
    setup = prepare("toy" if "kernel" not in extra else "h200", algo, problem, passes=passes, blocks=blocks,
                    options=Options(**options))
    out = []
    for launch in setup.launches:
        if "gemm" in extra:
            launch = dataclasses.replace(launch, schedule_options={**launch.schedule_options, "gemm": extra["gemm"]})
        c = count_launch(setup.profile, launch, setup.options, setup.sram_bytes, mode, record=True)
        out.append((setup, launch, c))
    return out


@pytest.mark.parametrize("algo,passes,problem,blocks,extra", CASES)
def test_grouped_records_expand_to_the_trace(algo, passes, problem, blocks, extra):
    counted = _recorded(algo, passes, problem, blocks, extra, "count")
    traced = _recorded(algo, passes, problem, blocks, extra, "trace")
    for (_, _, c), (_, _, t) in zip(counted, traced):
        assert len(c.requests) <= len(t.requests)
        a, b = head_programs(list(c.requests), 64), head_programs(list(t.requests), 64)
        assert a.keys() == b.keys()
        for kernel in a:
            assert len(a[kernel].cta_class) == len(b[kernel].cta_class)
            assert len(a[kernel].classes) <= len(b[kernel].classes)
            for cta in range(len(a[kernel].cta_class)):
                pa, pb = a[kernel].program(cta), b[kernel].program(cta)
                for name in pa:
                    assert np.array_equal(pa[name], pb[name]), (kernel, cta, name)


def _both(setup, launch, c, capacity):
    p = launch.problem
    slots = occupancy(setup.profile.sm_count, setup.profile.scratchpad.capacity_bytes, c.sram.peak_bytes,
                      launch.threads_per_block)
    kw = dict(heads_total=p.heads_total, kv_of_q=p.kv_head_of, capacity_bytes=capacity,
              leads_group=lambda h: (h % p.heads) % p.group_size == 0, concurrency={k: slots for k in c.kernels},
              group_size=p.group_size)
    return replay(list(c.requests), **kw), replay(list(c.requests), method="round_robin", **kw)


@pytest.mark.parametrize("fraction", [0.05, 0.3, 1.5])
@pytest.mark.parametrize("algo,passes,problem,blocks,extra", CASES)
def test_the_cohort_stream_plays_as_the_round_robin(algo, passes, problem, blocks, extra, fraction):
    for setup, launch, c in _recorded(algo, passes, problem, blocks, extra, "count"):
        footprint = sum(t.read_bytes + t.write_bytes for t in c.tensors.values()) // launch.problem.heads_total
        capacity = max(4096, int(fraction * footprint * 4))      # a few heads' worth, or a fraction of one
        fast, slow = _both(setup, launch, c, capacity)
        for kernel, s in slow.kernels.items():
            f = fast.kernels[kernel]
            assert (f.read_bytes, f.write_bytes) == (s.read_bytes, s.write_bytes)
            assert abs(f.dram_read_bytes - s.dram_read_bytes) <= 0.01 * max(s.dram_read_bytes, 1), kernel
            assert abs(f.dram_write_bytes - s.dram_write_bytes) <= 0.01 * max(s.dram_write_bytes, 1) + 4096
            assert f.dram_write_bytes + f.dirty_bytes_left == s.dram_write_bytes + s.dirty_bytes_left


def _plain_replay(requests, heads, slots, capacity, kv_of_q, leads_group, chunk_rows=64):
    """The round robin written from the trace's requests alone (docs/cache.md), independent
    of iosim's programs: DRAM bytes read per kernel."""
    out = {}
    for kernel in dict.fromkeys(r.kernel for r in requests):
        ctas: dict = {}
        for r in requests:
            if r.kernel == kernel:
                for c in range(r.row_start // chunk_rows, (r.row_start + r.rows - 1) // chunk_rows + 1):
                    lo, hi = max(r.row_start, c * chunk_rows), min(r.row_start + r.rows, (c + 1) * chunk_rows)
                    ctas.setdefault(r.cta, []).append(((r.tensor, r.split, lo, hi, r.col_start),
                                                       (hi - lo) * r.cols * r.width, r.direction == "write",
                                                       r.gathered, r.per_kv_head))
        cache = LRUCache(capacity)
        pending = iter([(h, prog) for h in range(heads) for prog in ctas.values()])
        active = [[*nxt, 0] for nxt in itertools.islice(pending, slots)]
        while active:
            still = []
            for cta in active:
                head, prog, pc = cta
                key, size, write, gathered, per_kv = prog[pc]
                if not per_kv or leads_group(head):
                    full = (kv_of_q(head) if gathered or per_kv else head,) + key
                    (cache.write if write else cache.read)(full, size)
                cta[2] += 1
                if cta[2] < len(prog):
                    still.append(cta)
                elif (nxt := next(pending, None)) is not None:
                    still.append([*nxt, 0])
            active = still
        out[kernel] = cache.stats.dram_read_bytes
    return out


@pytest.mark.parametrize("algo,passes,problem,blocks,extra", CASES[:10])
def test_the_model_equals_a_round_robin_written_from_the_trace(algo, passes, problem, blocks, extra):
    for (setup, launch, c), (_, _, t) in zip(_recorded(algo, passes, problem, blocks, extra, "count"),
                                             _recorded(algo, passes, problem, blocks, extra, "trace")):
        p = launch.problem
        footprint = sum(x.read_bytes + x.write_bytes for x in c.tensors.values()) // p.heads_total
        slots = occupancy(setup.profile.sm_count, setup.profile.scratchpad.capacity_bytes, c.sram.peak_bytes,
                          launch.threads_per_block)
        lead = lambda h: (h % p.heads) % p.group_size == 0       # noqa: E731
        fast, _ = _both(setup, launch, c, footprint)
        plain = _plain_replay(list(t.requests), p.heads_total, slots, footprint, p.kv_head_of, lead)
        assert {k: s.dram_read_bytes for k, s in fast.kernels.items()} == pytest.approx(plain, rel=0.01)


def test_the_schedule_refills_slots_in_order():
    start, slot = schedule(np.array([3, 1, 2, 2, 1]), slots=2)
    # round 0: CTAs 0, 1 in slots 0, 1; CTA 1 ends in round 0 -> CTA 2 takes slot 1 at round 1;
    # CTA 0 ends in round 2 and CTA 2 too -> CTA 3 (slot 0) and CTA 4 (slot 1) at round 3
    assert start.tolist() == [0, 0, 1, 3, 3]
    assert slot.tolist() == [0, 1, 1, 0, 1]
    start, slot = schedule(np.array([4] * 5), slots=2)
    assert start.tolist() == [0, 0, 4, 4, 8] and slot.tolist() == [0, 1, 0, 1, 0]
