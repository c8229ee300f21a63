"""The sampled L2 model (iosim/models/cache/sampled.py): 1 in m chunks of every head played
through m times less cache, each tensor's counters scaled by its exact distinct bytes over
the sampled ones. At m = 1 it is the exact model, counter for counter; on small problems
with a cache small enough to miss more than the compulsory reads, its DRAM reads stay within
2 % of the exact model's at a rate that keeps the scaled cache 256 chunks large; it is the
same every run, and the half sample it is checked against lies inside the sample."""

import numpy as np
import pytest

from iosim import Options, Problem, prepare
from iosim.models.cache import plan, sampled
from iosim.models.cache.programs import head_programs
from iosim.run import kernel_timing, launches
from iosim.run.count import count_launch

CASES = [
    ("fa2", "forward", Problem(seq_len=2048, head_dim=16, heads=12), (64, 64)),
    ("fa2", "forward", Problem(seq_len=2048, head_dim=16, heads=6, causal=True), (64, 64)),
    ("fa1", "forward", Problem(seq_len=1024, head_dim=32, heads=8, causal=True), (32, 32)),
    ("fa2", "backward", Problem(seq_len=1024, head_dim=16, heads=8, kv_heads=2, causal=True), (32, 32)),
    ("fa2-splitkv", "forward", Problem(seq_len_q=1, seq_len_kv=8192, head_dim=32, heads=16, kv_heads=4, batch=4),
     (16, 32)),
]
FIELDS = ("read_bytes", "read_hit_bytes", "write_bytes", "dram_read_bytes", "dram_write_bytes", "dirty_bytes_left")


def _recorded(algo, passes, problem, blocks):
    setup = prepare("toy", algo, problem, passes=passes, blocks=blocks, options=Options(cache=True))
    launch = setup.launches[0]
    c = count_launch(setup.profile, launch, setup.options, setup.sram_bytes, "count", record=True)
    slots = setup.profile.sm_count * kernel_timing.blocks_per_sm(setup.profile, launch, c.sram.peak_bytes)
    p = launch.problem
    kw = dict(kv_of_q=p.kv_head_of, leads_group=lambda h: (h % p.heads) % p.group_size == 0)
    return list(c.requests), slots, p, kw


def _both(case, capacity: int, m: int):
    """(exact stats, sampled :class:`~iosim.models.cache.sampled.Sampled`) per kernel."""
    requests, slots, p, kw = _recorded(*case)
    exact = plan(requests, heads_total=p.heads_total, capacity_bytes=capacity, group_size=p.group_size,
                 concurrency={r.kernel: slots for r in requests}, **kw).play().kernels
    got = {k: sampled.play(prog, p.heads_total, slots, m, capacity_bytes=capacity, chunk_rows=64, **kw)
           for k, prog in head_programs(requests, 64).items()}
    return exact, got


@pytest.mark.parametrize("case", CASES)
def test_one_in_one_is_the_exact_model(case):
    exact, got = _both(case, 64 * 1024, 1)
    for kernel, e in exact.items():
        assert got[kernel].rate == 1 and got[kernel].within == 0
        for name in FIELDS:
            assert getattr(got[kernel].stats, name) == getattr(e, name), (kernel, name)


#: 1 MiB against heads of 1 MiB of K and V and more: the dense run misses 43 times its compulsory
#: reads, its K/V reuse distances near the capacity (the hard case for sampling)
SMALL_CACHE = [
    ("fa2", "forward", Problem(seq_len=16384, head_dim=16, heads=2), (64, 64)),
    ("fa2", "forward", Problem(seq_len=16384, head_dim=16, heads=3, causal=True), (64, 64)),
    ("fa2", "backward", Problem(seq_len=4096, head_dim=32, heads=4, kv_heads=2, causal=True), (32, 32)),
]
#: measured: 0.43 % at most here, 0.33 % over 79 FA2 kernels on the H200 at the rates the model
#: uses (docs/cache.md); sampling in hashed keys missed 14 % on such streams
BOUND = 0.02


@pytest.mark.parametrize("case", SMALL_CACHE)
def test_sampled_dram_reads_near_the_exact_model(case):
    """m = 2 leaves 512 KiB, 256 of the largest (2 KiB) chunks: sampled.MIN_CHUNKS."""
    assert sampled.MIN_CHUNKS == 256
    exact, got = _both(case, 1 << 20, 2)
    compulsory, _ = _both(case, 1 << 40, 1)
    for kernel, e in exact.items():
        s = got[kernel].stats
        assert s.read_bytes == e.read_bytes and s.write_bytes == e.write_bytes       # exact: not sampled
        assert e.dram_read_bytes > compulsory[kernel].dram_read_bytes     # the cache misses past the cold start
        assert abs(s.dram_read_bytes / e.dram_read_bytes - 1) <= BOUND, (kernel, s.dram_read_bytes, e.dram_read_bytes)


def test_the_same_every_run_and_the_half_sample_inside_the_sample():
    case = CASES[1]
    a = _both(case, 128 * 1024, 4)[1]
    b = _both(case, 128 * 1024, 4)[1]
    assert a == b
    head = np.repeat(np.arange(5), 400)
    hi = np.tile(np.arange(400) % 3, 5) << 35
    lo = np.tile(np.arange(400) * 64 * 65 + 64, 5)
    kept, half = (sampled.sampler(m, 64)(head, hi, lo) for m in (4, 8))
    assert not (half & ~kept).any() and abs(kept.mean() - 1 / 4) < 0.02 and abs(half.mean() - 1 / 8) < 0.02


def test_the_rate_leaves_the_scaled_cache_and_every_tensor_many_chunks():
    """m is about requests / budget, but never so large that the scaled cache holds fewer
    than MIN_CHUNKS of the largest chunks (2 KiB here), or a tensor keeps fewer in the sample."""
    requests, slots, p, kw = _recorded(*SMALL_CACHE[0])
    (prog,) = head_programs(requests, 64).values()
    exact = sampled.exact_counts(prog, p.heads_total, **kw)
    assert set(exact[3].tolist()) == {512}                    # Q, K, V, O, L: 2 heads × 256 windows
    assert sampled.modulus(100, 100, prog, 1 << 30, exact) == 1
    assert sampled.modulus(10 ** 9, 1, prog, 1 << 30, exact) == 2          # every tensor keeps 256 chunks
    assert sampled.modulus(10 ** 9, 1, prog, 1 << 20, exact) == 2          # 1 MiB / (256 × 2 KiB)
    assert sampled.modulus(10 ** 9, 1, prog, 1 << 19, exact) == 1


def test_a_sampled_run_says_so_in_the_result_and_in_explores_bound(monkeypatch):
    """A kernel preset's run is put together from its launches (``combine_results``): the
    sample's rate and check must survive that (they were dropped, so a preset's sampled DRAM
    bytes were reported as exact), and explore --kernel triton-fa2 names it in the bound."""
    from iosim import simulate
    from iosim.studies.explore import triton_configs
    monkeypatch.setattr(launches, "AUTO_REQUESTS", 30_000)      # this run plans more
    monkeypatch.setattr(launches, "SAMPLE_REQUESTS", 5_000)
    problem = Problem(seq_len=16384, head_dim=64, heads=16)
    options = Options(kernel="triton-fa2", kernel_config=(32, 64, 2, 2), cache="auto")
    r = simulate("h200", "fa2", problem, options=options)
    l2 = r.to_dict()["l2"]
    rate = l2["per_kernel"]["main"]["sample_rate"]
    m = round(1 / rate)
    assert l2["model"] == "sampled" and m > 1 and rate == 1 / m
    monkeypatch.setattr(triton_configs, "l2_by_default", lambda setup: True)
    (c,) = triton_configs.explore_triton("h200", problem, configs=[(32, 64, 2, 2)]).candidates
    assert c.bound.endswith(f"; DRAM bytes estimated by sampling 1 in {m} chunks")
