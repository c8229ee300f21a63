"""The L2 model: an LRU, write-back cache, and the concurrency that feeds it."""

import pytest

from iosim import Options, Problem, ProblemError, simulate
from iosim.models.cache import LRUCache, occupancy


def test_working_set_that_fits_hits():
    cache = LRUCache(capacity_bytes=4 * 100)
    for _ in range(3):
        for key in "abcd":
            cache.read(key, 100)
    assert cache.stats.dram_read_bytes == 400            # the first pass only
    assert cache.stats.read_hit_bytes == 800
    assert cache.stats.hit_rate == pytest.approx(800 / 1200)


def test_cyclic_working_set_one_larger_thrashes_lru():
    cache = LRUCache(capacity_bytes=4 * 100)
    for _ in range(3):
        for key in "abcde":                                # 5 chunks through a 4-chunk LRU
            cache.read(key, 100)
    assert cache.stats.read_hit_bytes == 0                 # LRU evicts exactly the next one needed
    assert cache.stats.dram_read_bytes == 1500


def test_write_back_counts_each_dirty_chunk_once():
    cache = LRUCache(capacity_bytes=2 * 100)
    for _ in range(5):
        cache.write("a", 100)                              # rewritten in the cache, not in DRAM
    assert cache.stats.dram_write_bytes == 0
    cache.read("b", 100)
    cache.read("c", 100)                                   # evicts dirty "a": one write-back
    cache.read("d", 100)                                   # evicts clean "b": none
    assert cache.stats.dram_write_bytes == 100
    assert cache.stats.dram_read_bytes == 300              # writes allocate without a fetch


def test_a_second_level_catches_what_the_first_evicts():
    # MI300X-like: a 2-chunk L2 in front of a 4-chunk Infinity Cache. A 3-chunk cycle thrashes
    # the L2 but fits the outer level: DRAM sees each chunk once, the outer level serves the rest.
    outer = LRUCache(capacity_bytes=4 * 100)
    l2 = LRUCache(capacity_bytes=2 * 100, backing=outer)
    for _ in range(3):
        for key in "abc":
            l2.read(key, 100)
    assert l2.stats.read_hit_bytes == 0 and l2.stats.dram_read_bytes == 900   # all passed on
    assert outer.stats.read_bytes == 900 and outer.stats.dram_read_bytes == 300
    l2.write("d", 100)
    l2.read("a", 100)
    l2.read("b", 100)                                      # evicts dirty "d" into the outer level
    assert l2.stats.dram_write_bytes == 100 and outer.stats.write_bytes == 100
    assert outer.stats.dram_write_bytes == 0               # still held there, not in DRAM


def test_mi300x_reports_its_infinity_cache():
    r = simulate("mi300x", "fa2", Problem(seq_len=4096, head_dim=128, heads=64), blocks=(128, 64), options=Options(cache=True))
    outer = r.cache.outer_totals()
    assert list(outer) == ["infinity_cache"]
    # what reaches the Infinity Cache is what the L2 did not serve; DRAM is what it did not
    l2 = r.cache.total
    assert outer["infinity_cache"].read_bytes == l2.read_bytes - l2.read_hit_bytes
    assert l2.dram_read_bytes == outer["infinity_cache"].dram_read_bytes
    assert r.to_dict()["outer_caches"]["infinity_cache"]["read_bytes"] == outer["infinity_cache"].read_bytes


def test_occupancy():
    # H100/H200: 228 KiB of shared memory per SM; FA2 d=128 128×64 tiles need 64 KiB.
    assert occupancy(132, 228 * 1024, 64 * 1024, 128) == 132 * 3
    assert occupancy(132, 228 * 1024, 1024, 1024) == 132 * 2      # threads bound: 2048 / 1024


def test_fa2_reads_qkv_about_once_when_kv_fits():
    """One head's K and V (2 MiB each) fit the 50 MB L2: DRAM sees Q, K, V about once,
    while the requests are T_r times K and V."""
    r = simulate("h200", "fa2", Problem(seq_len=4096, head_dim=128, heads=4), blocks=(128, 64), options=Options(cache=True))
    s = r.cache.total
    qkv = 3 * 4 * 4096 * 128 * 2
    assert s.read_bytes == r.hbm.read_bytes                # every request goes through the L2
    assert qkv <= s.dram_read_bytes < 1.2 * qkv
    assert s.hit_rate > 0.9
    data = r.to_dict()
    assert data["dram"]["read_bytes"] == s.dram_read_bytes and "hit_rate" in data["l2"]


def _variant(profile, cache_bytes, sm_count, smem_per_sm):
    import dataclasses

    levels = {}
    for name, level in profile.levels.items():
        if level.role == "cache":
            level = dataclasses.replace(level, capacity_bytes=cache_bytes)
        if level.role == "scratchpad":
            level = dataclasses.replace(level, capacity_bytes=smem_per_sm)
        levels[name] = level
    return dataclasses.replace(profile, levels=levels, sm_count=sm_count)


def test_concurrency_decides_what_a_small_cache_serves():
    """A 64 KiB L2 cannot hold one head's K and V (1 MiB each). If all 32 query blocks run
    together they read each K/V tile at the same moment and the cache serves 31 of 32; if
    one runs at a time, every tile comes from DRAM again."""
    from iosim import load_profile

    h200 = load_profile("h200")
    problem = Problem(seq_len=4096, head_dim=128)
    together = simulate(_variant(h200, 64 * 1024, 132, 228 * 1024), "fa2", problem, blocks=(128, 64), options=Options(cache=True))
    alone = simulate(_variant(h200, 64 * 1024, 1, 64 * 1024), "fa2", problem, blocks=(128, 64), options=Options(cache=True))
    assert alone.cache.concurrency["main"] == 1
    assert alone.cache.total.dram_read_bytes == alone.hbm.read_bytes      # LRU thrashes: no reuse at all
    assert together.cache.total.dram_read_bytes < 0.05 * together.hbm.read_bytes


def test_profile_without_cache_is_reported(tmp_path):
    import dataclasses

    from iosim import load_profile

    h200 = load_profile("h200")
    no_cache = dataclasses.replace(h200, levels={k: v for k, v in h200.levels.items() if v.role != "cache"},
                                   links=tuple(l for l in h200.links if "l2" not in (l.a, l.b)) +
                                   (type(h200.links[0])("hbm", "smem", 4.8e12),))
    with pytest.raises(ProblemError, match="no cache level"):
        simulate(no_cache, "fa2", Problem(seq_len=256, head_dim=64), options=Options(cache=True))


def test_cache_model_speed_target_shape_runs():
    """Issue 6's benchmark shape (N = 16,384, d = 128, 16 heads) runs; its time is measured
    in benchmarks/cache_speed.py, not here."""
    r = simulate("h200", "fa2", Problem(seq_len=16384, head_dim=128, heads=16), blocks=(128, 64), options=Options(cache=True))
    assert r.cache.concurrency["main"] == 132 * 3


def test_decode_split_kv_with_cache():
    """The decode layout (GQA swap) keeps the cache model: K and V come from DRAM once."""
    r = simulate("h200", "fa2-splitkv", Problem(seq_len_q=1, seq_len_kv=8192, head_dim=128, heads=32, kv_heads=8), blocks=(64, 128), options=Options(cache=True))
    kv = 2 * 8 * 8192 * 128 * 2
    assert r.cache is not None and kv <= r.cache.total.dram_read_bytes < 1.05 * kv


def test_per_launch_time_model():
    """With --kernel, each launch gets the kernel time model's time and its bound."""
    from iosim import load_profile
    from iosim.models.kernel_time import KernelRates

    h200 = load_profile("h200")
    r = simulate(h200, "fa2", Problem(seq_len=4096, head_dim=128, heads=8), passes="forward+backward", options=Options(kernel="flash-attn-2", cache=True))
    times = r.kernel_times
    assert set(times) == {"main", "dot_do_o", "dq_dk_dv", "convert_dq"}
    # K/V mostly from the L2; 256 blocks of 4 warps, two an SM (docs/validation/2026-12-02-block-cost.md)
    assert times["main"].bound.startswith("compute, two blocks an SM at 0.80 a step (tensor cores")
    # dot_do_o reads dO and O (16 MiB, from DRAM) and zeroes dQaccum (16 MiB of writes that
    # stay in the L2): the L2's traffic, 32 MiB at 7.79 TB/s, outlasts DRAM's 16 MiB at 4.41,
    # and the copy rate (loads and stores together, 4.30 TB/s) outlasts both;
    # a kernel that reads, then writes, takes at least the measured read-then-write floor
    per = times["dot_do_o"].per_resource_s
    assert per["L2"] > per["DRAM"] and times["dot_do_o"].bound == "loads and stores at the copy rate"
    rates = KernelRates.from_profile(h200, "fp16")
    requested = sum(rd + wr for rd, wr in r.kernel_bytes("dot_do_o").values())
    assert rates.read_write_s == pytest.approx(2.18e-6) and rates.launch_s == pytest.approx(1.46e-6)
    assert per["L2"] == requested / rates.l2_bytes
    assert times["dot_do_o"].predicted_s == rates.read_write_s + requested / rates.copy_bytes
    # the two launches' sums, added again: equal up to the order of float additions
    assert r.time.predicted_s == pytest.approx(sum(t.predicted_s for t in times.values()), rel=1e-14)


@pytest.mark.parametrize("hw,algorithm,problem,passes", [
    # GQA: the backward pass's dK/dV group reduction is made once per K/V head
    ("h200", "fa2", Problem(seq_len=2048, head_dim=64, heads=8, kv_heads=2), "forward+backward"),
    # decode: how many splits depends on B·H, so the trace must see the counted problem's heads
    ("h100-sxm", "fa2-splitkv", Problem(batch=16, heads=32, seq_len_q=1, seq_len_kv=16384, head_dim=128), "forward"),
    ("h100-sxm", "fa2-splitkv", Problem(batch=1, heads=4, seq_len_q=1, seq_len_kv=16384, head_dim=128), "forward"),
])
def test_the_l2_model_plays_exactly_the_counted_requests(hw, algorithm, problem, passes):
    r = simulate(hw, algorithm, problem, blocks=(64, 64) if algorithm == "fa2" else None, passes=passes,
                 options=Options(cache=True))
    assert set(r.cache.kernels) == set(r.kernels)
    assert r.cache.total.read_bytes == r.hbm.read_bytes
    assert r.cache.total.write_bytes == r.hbm.write_bytes


def test_a_reduction_reads_what_it_adds_to_when_the_cache_lacks_it():
    """A reduction (TMA ``.add``: the memory system adds to what it holds) needs the old
    value: absent, the chunk is read from DRAM first; present, nothing is read. Either way
    it is a write request, dirty afterwards, and no read request from the SMs."""
    for play in (False, True):
        cache = LRUCache(1000)
        if play:
            cache.play([("a",), ("a",)], [100, 100], [2, 2])
        else:
            cache.write(("a",), 100, fill=True)
            cache.write(("a",), 100, fill=True)
        s = cache.stats
        assert (s.dram_read_bytes, s.write_bytes, s.read_bytes) == (100, 200, 0)
        assert cache.dirty_keys() == {("a",): 100}
    plain = LRUCache(1000)
    plain.play([("a",)], [100], [1])
    assert plain.stats.dram_read_bytes == 0
