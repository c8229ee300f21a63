"""The L2 of two partitions (iosim.models.cache.partitions): the vectorised play equals the
request-by-request reference, the reference does what docs/cache.md says on worked
examples, and the model's paths (every head exactly, copies of heads, a sample of the
chunks, windows) agree with each other on the H200 profile, which has two."""

from __future__ import annotations

import numpy as np
import pytest

from iosim import Options, Problem, load_profile, simulate
from iosim.models.cache import LRUCache, partitions, playback, sets, stack, writebacks
from iosim.run import launches


def _random_stream(rng, n_max=400):
    n, nk = int(rng.integers(1, n_max)), int(rng.integers(1, 60))
    keys = rng.integers(0, nk, n)
    return keys, (keys % 3 + 1) * 4, rng.choice([0, 0, 0, 1, 2], n), rng.integers(0, 2, n)


@pytest.mark.parametrize("rule", writebacks.RULES)
@pytest.mark.parametrize("turns", [partitions.MAX_TURNS, 1])
def test_played_at_once_it_is_the_reference_request_for_request(monkeypatch, turns, rule):
    """Counters, the counters at each cut and per group, under every write-back rule; with
    one turn allowed, most streams take the reference itself (the turns do not settle), the
    rest settle at once."""
    monkeypatch.setattr(partitions, "MAX_TURNS", turns)
    rng = np.random.default_rng(7)
    played = 0
    for _ in range(300):
        keys, sizes, writes, sides = _random_stream(rng)
        capacity = int(rng.integers(24, 200))
        cuts, groups = sorted(rng.integers(0, len(keys), 2).tolist()), rng.integers(0, 3, len(keys))
        ref = partitions.reference(keys, sizes, writes, sides, capacity, cuts, groups, rule=rule)
        got = partitions.play(keys, sizes, writes, sides, capacity, cuts, groups, rule=rule)
        _same_play(got, ref)
        played += got.parts is not None
    assert played > 0


@pytest.mark.parametrize("seed", range(4))
def test_played_with_bands_it_is_the_reference(monkeypatch, seed):
    """Long streams, each partition's windows decided by stack's bands (from every 16th
    request): the counters equal the reference's."""
    monkeypatch.setattr(stack, "STRIDE", 16)
    monkeypatch.setattr(stack, "MIN_BANDED", 2048)
    rng = np.random.default_rng(50 + seed)
    n, nk = 6000, int(rng.integers(100, 600))
    keys = rng.integers(0, nk, n)
    sizes, writes, sides = (keys % 3 + 1) * 4, rng.choice([0, 0, 0, 1, 2], n), rng.integers(0, 2, n)
    capacity = int(rng.integers(200, 1600))
    ref = partitions.reference(keys, sizes, writes, sides, capacity, [n // 3])
    got = partitions.play(keys, sizes, writes, sides, capacity, [n // 3])
    assert (got.stats, got.marks) == (ref.stats, ref.marks)


def _keys_homed(h: int, count: int) -> list[int]:
    ids = np.arange(200)
    return ids[partitions.home(ids) == h][:count].tolist()


def test_a_chunk_read_from_both_sides_is_read_from_dram_once_and_held_twice():
    """Side 0 reads a chunk, then side 1: the second is served on chip (over the fabric when
    the chunk is homed on side 0; near when homed on side 1, where side 0's miss filled it),
    and both partitions then hold it: each side hits without the other."""
    for h in (0, 1):
        key = _keys_homed(h, 1)[0]
        cache = partitions.PartitionedLRU(64)
        cache.play([key, key, key, key], [4] * 4, [0] * 4, [0, 1, 0, 1], [h] * 4)
        s = cache.finish()
        assert (s.read_bytes, s.read_hit_bytes, s.dram_read_bytes) == (16, 12, 4)
        assert all(key in part.entries for part in cache.parts)


def test_each_partition_holds_half_the_capacity():
    """Two chunks of 4 bytes read in turn by one side: one LRU of 8 bytes reads each from
    DRAM once; each partition holds 4 bytes, so every read misses, wherever the chunks are
    homed (homed on the other side, the far copy that serves over the fabric is evicted by
    the other chunk's fill as the near one is)."""
    one = LRUCache(8)
    for key in [1, 2] * 3:
        one.read(key, 4)
    assert one.stats.dram_read_bytes == 8
    for h in (0, 1):
        a, b = _keys_homed(h, 2)
        cache = partitions.PartitionedLRU(8)
        cache.play([a, b] * 3, [4] * 6, [0] * 6, [0] * 6, [h] * 6)
        assert cache.finish().dram_read_bytes == 24


def test_a_write_is_dirty_at_its_home_and_near_its_writer():
    """A write from side 1 to a chunk homed on side 0 allocates it dirty in partition 0 and
    in partition 1 (measured: docs/validation/2026-12-03-l2-write-near.md,
    2026-12-04-write-backs.md), without a fetch; side 1 reading it then hits near. Two more
    chunks homed on side 0, read from DRAM by side 1 (and so filled into both partitions),
    evict both copies: the line is written to DRAM once. Under the rule ``"each"`` each
    copy writes itself back; under ``"home"`` (shipped) the near copy is clean."""
    w, r1, r2 = _keys_homed(0, 3)
    for rule, near_dirty, written in (("first", True, 4), ("each", True, 8), ("home", False, 4)):
        cache = partitions.PartitionedLRU(8, rule=rule)
        cache.play([w], [4], [1], [1], [0])
        assert cache.parts[0].entries[w][1] and cache.parts[1].entries[w][1] == near_dirty
        cache.play([w, r1, r2], [4] * 3, [0] * 3, [1] * 3, [0] * 3)
        assert w not in cache.parts[0].entries and w not in cache.parts[1].entries
        s = cache.finish()
        assert (s.write_bytes, s.read_hit_bytes, s.dram_read_bytes, s.dram_write_bytes, s.dirty_bytes_left) == \
            (4, 4, 8, written, 0)


def test_the_first_copy_evicted_writes_the_line_and_the_other_writes_nothing():
    """Side 1 writes w (homed on side 0); side 1 then reads two chunks homed on side 1, which
    evict only the copy near it. The line is written back once, by that eviction, and the
    home's copy, still held, leaves nothing dirty (the home-only rule writes nothing and
    leaves it dirty). Neither copy evicted: the line is left dirty once."""
    (w,), (r1, r2) = _keys_homed(0, 1), _keys_homed(1, 2)
    for rule, counted in (("first", (4, 0)), ("each", (4, 4)), ("home", (0, 4))):
        cache = partitions.PartitionedLRU(8, rule=rule)
        cache.play([w, r1, r2], [4] * 3, [1, 0, 0], [1] * 3, [0, 1, 1])
        assert w in cache.parts[0].entries and w not in cache.parts[1].entries
        s = cache.finish()
        assert (s.dram_write_bytes, s.dirty_bytes_left) == counted, rule
        kept = partitions.PartitionedLRU(8, rule=rule)
        kept.play([w], [4], [1], [1], [0])
        s = kept.finish()
        assert (s.dram_write_bytes, s.dirty_bytes_left) == (0, 8 if rule == "each" else 4), rule


def test_slots_read_through_the_half_of_the_sms_they_run_on():
    sides = partitions.sides(np.arange(264), 132)
    assert sides[:66].tolist() == [0] * 66 and sides[66:132].tolist() == [1] * 66
    assert sides[132:].tolist() == sides[:132].tolist()


def test_the_h200_profile_has_two_partitions_and_the_others_one():
    assert load_profile("h200").cache.partitions == 2
    assert load_profile("a100-80gb").cache.partitions == 1


CASES = [  # (problem, passes): one length of thread blocks (copies of heads), then unequal ones
    (Problem(seq_len=2048, head_dim=128, batch=3, heads=100), "forward"),
    (Problem(seq_len=4096, head_dim=64, heads=24, causal=True), "forward"),
    (Problem(seq_len=2048, head_dim=128, heads=8), "forward+backward"),
]


@pytest.mark.parametrize("problem, passes", CASES)
def test_copies_of_heads_and_the_checked_extension_equal_every_head_played(monkeypatch, problem, passes):
    """With two partitions the copies of P heads (each partition's dirty tail evicted by the
    copies after it) and the heads' extension give what playing every head gives."""
    hw = load_profile("h200")
    quick = simulate(hw, "fa2", problem, passes=passes, options=Options(cache=True, kernel="flash-attn-2"))
    monkeypatch.setattr(playback, "_by_copies", lambda *a: None)
    monkeypatch.setattr(playback, "all_heads", lambda play, heads, **kw: (*play(heads), None))
    every = simulate(hw, "fa2", problem, passes=passes, options=Options(cache=True, kernel="flash-attn-2"))
    assert quick.cache.total == every.cache.total


@pytest.mark.parametrize("problem", [Problem(seq_len=8192, head_dim=128, heads=16),
                                     Problem(seq_len=8192, head_dim=128, heads=8, causal=True)])
def test_sampled_and_windowed_they_are_near_the_exact_model(monkeypatch, problem):
    """Past the budget the partitions are played from a sample of the chunks or in windows,
    each side's state its own most recent chunks: DRAM reads within 5 % of the exact model."""
    hw = load_profile("h200")
    opts = Options(cache=True, kernel="flash-attn-2")
    exact = simulate(hw, "fa2", problem, options=opts).cache.total
    for name, value in (("AUTO_REQUESTS", 5_000), ("MAX_REQUESTS", 5_000), ("SAMPLE_REQUESTS", 4_000)):
        monkeypatch.setattr(launches, name, value)
    approx = simulate(hw, "fa2", problem, options=opts)
    assert approx.cache.sampled                                 # not played whole
    got = approx.cache.total
    assert got.read_bytes == exact.read_bytes
    assert abs(got.dram_read_bytes - exact.dram_read_bytes) <= 0.05 * exact.dram_read_bytes


def test_a_windows_state_holds_a_write_at_its_home():
    """The state a window starts from (rounds._last, then held): a chunk last written is
    held in its home partition, whichever side wrote it, as the reference holds it. Side 0
    writes A (homed on 1), then reads B (homed on 0); each partition holds one of them."""
    from iosim.models.cache import rounds
    from iosim.models.cache.stream import Stream

    cand = np.array([[0, 0, lo] for lo in range(64)])
    home = partitions.homes(cand)
    a, b = cand[home == 1][0], cand[home == 0][0]
    s = Stream(np.array([a, b]), np.array([50, 50]), np.array([1, 0]), np.zeros(2, np.int64), [],
               side=np.array([0, 0]))
    state = rounds.held(rounds._last(s, np.array([0, 1])), 100)
    assert sorted(map(tuple, state.key_parts.tolist())) == sorted([tuple(a), tuple(b)])
    assert state.side.tolist() == [1, 0] and state.write.tolist() == [1, 0]
    ref = partitions.PartitionedLRU(100)
    ref.play([tuple(a), tuple(b)], [50, 50], [1, 0], [0, 0], [1, 0])
    assert [list(p.entries) for p in ref.parts] == [[tuple(b)], [tuple(a)]]


@pytest.mark.parametrize("hw, parts", [("h200", 2), ("h100-sxm", 2), ("a100-80gb", 1), ("mi300x", 1)])
def test_a_result_says_how_its_l2_was_played(hw, parts):
    """JSON ``l2.partitions`` and the text's L2 line name the two partitions where the
    profile has them (H200, H100) and not where it has one (A100) or a cache behind the L2."""
    from iosim.report.tables import result_table

    kernel = "flash-attn-2" if hw != "mi300x" else None        # a CUDA kernel's preset: not on the MI300X
    r = simulate(load_profile(hw), "fa2", Problem(seq_len=1024, head_dim=64, heads=2), passes="forward",
                 options=Options(cache=True, kernel=kernel))
    assert r.to_dict()["l2"]["partitions"] == parts
    assert ("L2 model (docs/cache.md; two partitions)" in result_table(r)) == (parts == 2)


def _same_play(got, ref) -> None:
    """``got`` (from stack distances) equals the request-by-request ``ref`` counter for
    counter, overall, at each cut and per group."""
    assert (got.stats, got.marks, got.distinct_bytes) == (ref.stats, ref.marks, ref.distinct_bytes)
    for name, row in ref.by_group.items():
        assert got.by_group[name][:len(row)].tolist() == row.tolist(), name
        assert int(got.by_group[name][len(row):].sum()) == 0


def test_the_rules_differ_only_in_write_backs_and_only_where_a_writer_is_far_from_the_home():
    """The rules ``"home"``, ``"first"`` and ``"each"`` read and hit alike; their write-backs
    and dirty bytes left grow in that order; where every write is made on its chunk's home
    side (no copy near a writer) they are equal."""
    rng = np.random.default_rng(21)
    grew = 0
    for _ in range(200):
        keys, sizes, writes, sides = _random_stream(rng)
        capacity = int(rng.integers(24, 200))
        got = {rule: partitions.play(keys, sizes, writes, sides, capacity, rule=rule).stats
               for rule in writebacks.RULES}
        for field in ("read_bytes", "read_hit_bytes", "dram_read_bytes"):
            assert len({getattr(s, field) for s in got.values()}) == 1
        out = {rule: s.dram_write_bytes + s.dirty_bytes_left for rule, s in got.items()}
        assert out["home"] <= out["first"] <= out["each"]
        assert got["home"].dram_write_bytes <= got["first"].dram_write_bytes <= got["each"].dram_write_bytes
        grew += got["first"].dram_write_bytes > got["home"].dram_write_bytes
        at_home = np.where(writes > 0, partitions.home(keys), sides)
        same = [partitions.play(keys, sizes, writes, at_home, capacity, rule=rule).stats for rule in writebacks.RULES]
        assert same[0] == same[1] == same[2]
    assert grew > 10


@pytest.mark.parametrize("grow", [True, False])
@pytest.mark.parametrize("ways", [None, 16])
def test_a_partitions_next_turn_keeps_only_the_hits_that_cannot_have_changed(grow, ways):
    """A partition's stream played with the hits of its turn before carried over (``partitions._kept``), where
    requests came into it (as the turns have them) or went, is the stream played afresh: every hit and
    counter, each bound on the side of the capacity its hit says; and most streams test fewer windows."""
    rng, fewer = np.random.default_rng(11), 0
    for _ in range(200):
        keys, sizes, writes, _ = _random_stream(rng, 600)
        n, capacity = len(keys), int(rng.integers(24, 300))
        base, extra = rng.random(n) < 0.7, rng.random(n) < 0.05
        before, now = (base, base | extra) if grow else (base | extra, base)
        salts = None if ways is None else sets.Sets(ways, keys)
        tested = []

        def played(mask, kept=None):
            seen = np.flatnonzero(mask)

            def settle(prev, room):           # the carried hits, and how many windows are tested
                got = kept(prev, room)
                tested.append(int((prev >= 0).sum() - got[0].sum()))
                return got
            return stack.play(keys[seen], sizes[seen], writes[seen], capacity, hits=True,
                              settle=None if kept is None else settle,
                              sets=None if salts is None else salts.subset(seen)), seen
        then, was = played(before)
        fresh, seen = played(now)
        carried, _ = played(now, partitions._kept((then, None, was), now, seen, keys, sizes))
        assert (carried.hits == fresh.hits).all() and carried.stats == fresh.stats
        again = carried.needs > 0                 # a key's first request: a miss, no window
        if ways is None:
            assert ((carried.needs[again] <= capacity) == carried.hits[again]).all()
        fewer += tested[0] < again.sum()
    assert fewer > 150


def test_a_partition_whose_turn_before_saw_nothing_tests_every_window():
    """An empty play keeps its (empty) bounds, so a turn after it carries nothing over."""
    then = stack.play(np.zeros(0), np.zeros(0), np.zeros(0), 100, hits=True)
    keys = np.array([5, 6, 5])
    settle = partitions._kept((then, None, np.zeros(0, np.int64)), np.ones(3, bool), np.arange(3), keys,
                              np.full(3, 4))
    known, _, _ = settle(np.array([-1, -1, 0]), np.full(3, 100))
    assert then.needs.size == 0 and not known.any()
