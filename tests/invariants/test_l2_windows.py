"""The L2 model in windows (iosim/models/cache/windows.py).

1. Played whole (a budget that covers every round) it is the round robin reference
   (playback's ``method="round_robin"``), counter for counter.
2. A window's span, played after its warm-up (each chunk's last request only, up to the
   capacity), counts what the whole stream counts in the same rounds, miss for miss and
   write-back for write-back, wherever the warm-up brought the capacity's distinct bytes.
3. Sampled (16 and more spans), on causal runs of the H200 with their real cache: DRAM
   reads within 2 % of the exact model's, write-backs within 5 % (measured: 0.27 % and
   3.3 % at most, docs/cache.md).
4. ``simulate`` past every budget says so: ``l2.model`` "windowed", the share played, the
   two halves' spread, the warm-ups' reach; the JSON validates.
"""

import json
import os

import numpy as np
import pytest

from iosim import Options, Problem, prepare, simulate
from iosim.models.cache import plan, stack, windows
from iosim.models.cache.programs import head_programs
from iosim.models.cache.sampled import exact_counts, sampler
from iosim.models.cache.uniform import uniform_programs
from iosim.run import launches
from iosim.run.count import count_launch

P = Problem
FIELDS = ("read_bytes", "read_hit_bytes", "write_bytes", "dram_read_bytes", "dram_write_bytes", "dirty_bytes_left")


def _recorded(hw, passes, kernel, problem):
    """Per launch: (requests, slots, kv_of_q, leads_group, group, heads)."""
    setup = prepare(hw, "fa2", problem, passes=passes, options=Options(kernel=kernel, cache=True))
    for launch in setup.launches:
        c = count_launch(setup.profile, launch, setup.options, setup.sram_bytes, "count", None, record=True)
        slots = setup.profile.sm_count * launches._blocks_per_sm(setup.profile, launch, c.sram.peak_bytes)
        order = launches._head_order(launch.problem, launch.kernel is not None and launch.kernel.batch_fastest)
        yield list(c.requests), slots, *order, launch.problem.heads_total


def _windowed(requests, slots, kv_of_q, leads_group, heads, capacity, budget):
    uniform = uniform_programs(requests, 64)
    got = windows.plan(uniform, {k: slots for k in uniform}, budget, heads=heads, capacity_bytes=capacity,
                       kv_of_q=kv_of_q, leads_group=leads_group)
    return uniform, got[1]()


@pytest.mark.parametrize("hw,passes,kernel,problem,capacity", [
    ("toy", "forward", None, P(seq_len=1000, head_dim=16, heads=4, kv_heads=2, causal=True), 32 << 10),
    ("h200", "backward", "flash-attn-2", P(seq_len=1000, head_dim=64, heads=4, kv_heads=2, causal=True), 1 << 20),
    ("h200", "forward", "flash-attn-2", P(seq_len=3000, head_dim=40, heads=2, causal=True), 1 << 20),   # split-KV
])
def test_played_whole_it_is_the_round_robin(hw, passes, kernel, problem, capacity):
    for requests, slots, kv_of_q, leads_group, group, heads in _recorded(hw, passes, kernel, problem):
        reference = plan(requests, heads_total=heads, capacity_bytes=capacity, group_size=group, kv_of_q=kv_of_q,
                         leads_group=leads_group, concurrency={r.kernel: slots for r in requests},
                         method="round_robin").play().kernels
        _, got = _windowed(requests, slots, kv_of_q, leads_group, heads, capacity, 10 ** 9)
        for kernel_name, g in got.items():
            assert g.rate == 1 and g.model == "windowed"
            for name in FIELDS:
                assert getattr(g.stats, name) == getattr(reference[kernel_name], name), (kernel_name, name)


@pytest.mark.parametrize("hw,passes,kernel,problem", [
    ("toy", "forward", None, P(seq_len=1000, head_dim=16, heads=4, kv_heads=2, causal=True)),
    ("h200", "backward", "flash-attn-2", P(seq_len=1000, head_dim=64, heads=8, kv_heads=2, batch=2, causal=True)),
    ("h200", "forward", "flash-attn-2", P(seq_len=3000, head_dim=40, heads=2, causal=True)),
])
def test_what_is_known_exactly_is_the_expanded_programs(hw, passes, kernel, problem):
    """Bytes read and written, and each tensor's distinct bytes and chunks, over every head:
    from the intervals as from the expanded programs (iosim/models/cache/sampled.py)."""
    for requests, slots, kv_of_q, leads_group, _, heads in _recorded(hw, passes, kernel, problem):
        expanded = head_programs(requests, 64)
        for name, u in uniform_programs(requests, 64).items():
            L = windows.launch(u, heads, slots, kv_of_q, leads_group)
            got = windows.exact(u, heads, L.kv, L.lead)
            read, written, distinct, chunks = exact_counts(expanded[name], heads, kv_of_q, leads_group)
            assert int(got["read"].sum()) == read and int(got["requested"].sum()) == read + written
            width = max(len(distinct), len(got["distinct"]))
            assert (np.pad(got["distinct"], (0, width - len(got["distinct"]))) ==
                    np.pad(distinct, (0, width - len(distinct)))).all()
            assert (np.pad(got["chunks"], (0, width - len(got["chunks"]))) ==
                    np.pad(chunks, (0, width - len(chunks)))).all()


@pytest.mark.parametrize("passes,kernel,problem", [
    ("forward", "flash-attn-2", P(seq_len=8192, head_dim=64, heads=2, causal=True)),
    ("backward", "flash-attn-2", P(seq_len=4096, head_dim=64, heads=2, kv_heads=1, causal=True)),
    ("forward", None, P(seq_len=8192, head_dim=64, heads=2, causal=True)),
])
def test_a_window_counts_what_the_whole_stream_counts(passes, kernel, problem):
    capacity, checked = 1 << 20, 0
    for requests, slots, kv_of_q, leads_group, _, heads in _recorded("h200", passes, kernel, problem):
        uniform = uniform_programs(requests, 64)
        for name, u in uniform.items():
            L = windows.launch(u, heads, slots, kv_of_q, leads_group)
            if L.rounds < 100:                       # the element-wise kernels: a few rounds
                continue
            whole, rounds = windows.requests(L, 0, L.rounds, sampler(1, 64))
            width = int((whole.key_parts[:, 1] >> 35).max()) + 1
            for r0 in np.linspace(L.rounds // 4, L.rounds - 20, 5).astype(int).tolist():
                r1 = r0 + 16
                a, b = np.searchsorted(rounds, [r0, r1])
                full = stack.play(whole.key_ids(), whole.size, whole.write, capacity, cuts=[a, b])
                got, reached = windows.window(L, r0, r1, capacity, width, [0, 0])
                if reached < 1:
                    continue
                checked += 1
                assert got["dram_read_bytes"].sum() == full.marks[1].dram_read_bytes - full.marks[0].dram_read_bytes
                assert got["read_hit_bytes"].sum() == full.marks[1].read_hit_bytes - full.marks[0].read_hit_bytes
                assert got["written_back"] == full.marks[1].dram_write_bytes - full.marks[0].dram_write_bytes
    assert checked >= 5


@pytest.mark.parametrize("passes,problem", [
    ("forward", P(seq_len=16384, head_dim=128, heads=16, causal=True)),
    ("backward", P(seq_len=8192, head_dim=128, heads=16, kv_heads=4, batch=2, causal=True)),
])
def test_sampled_it_is_near_the_exact_model(passes, problem):
    capacity = prepare("h200", "fa2", problem).profile.cache.capacity_bytes
    for requests, slots, kv_of_q, leads_group, group, heads in _recorded("h200", passes, "flash-attn-2", problem):
        exact = plan(requests, heads_total=heads, capacity_bytes=capacity, group_size=group, kv_of_q=kv_of_q,
                     leads_group=leads_group, concurrency={r.kernel: slots for r in requests}).play().kernels
        uniform, got = _windowed(requests, slots, kv_of_q, leads_group, heads, capacity, 300_000)
        main = [k for k, u in uniform.items() if (u.lengths != u.lengths[0]).any()]
        assert main
        for k in main:
            g, e = got[k], exact[k]
            assert g.rate < 0.6
            assert abs(g.stats.dram_read_bytes / e.dram_read_bytes - 1) <= 0.02, k
            assert abs(g.stats.dram_write_bytes / e.dram_write_bytes - 1) <= 0.05, k
            assert g.stats.read_bytes == e.read_bytes and g.stats.write_bytes == e.write_bytes


def test_simulate_says_the_run_was_played_in_windows(monkeypatch):
    jsonschema = pytest.importorskip("jsonschema")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    schema = json.load(open(os.path.join(root, "docs", "result.schema.json")))
    for name, value in (("AUTO_REQUESTS", 20_000), ("SAMPLE_REQUESTS", 5_000)):
        monkeypatch.setattr(launches, name, value)
    r = simulate("h200", "fa2", P(seq_len=8192, head_dim=64, heads=4, causal=True), options=Options(
        kernel="flash-attn-2", cache="auto"))
    d = r.to_dict()
    jsonschema.Draft202012Validator(schema).validate(d)
    main = d["l2"]["per_kernel"]["main"]
    assert d["l2"]["model"] == "windowed" and main["model"] == "windowed" and 0 < main["sample_rate"] < 1
    assert main.get("warm_up_reached", 1) >= 1 and main["sampled_within"] >= 0
    assert d["dram"]["read_bytes"] >= 4 * 8192 * 64 * 2 * 3          # Q, K and V at least once
