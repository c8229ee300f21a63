"""An L2 partition of hashed sets (iosim.models.cache.sets): the draws give the measured hit
rate F_W, the stack's play with a capacity per request equals the request-by-request
reference (one partition and two, with cuts, groups and bands), and copies of heads stay exact."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iosim.models.cache import partitions, periodic, sets, stack

from test_l2_partitions import _random_stream, _same_play


def test_hit_probability_is_the_poisson_tail():
    """F_W(x) = P(Poisson(W x) < W), summed term by term, against math's own sum."""
    for ways in (1, 4, 16):
        for x in (0.0, 0.3, 1.0, 1.7):
            want = sum(math.exp(-ways * x) * (ways * x) ** k / math.factorial(k) for k in range(ways))
            assert sets.hit_probability(np.array([x]), ways)[0] == pytest.approx(want, rel=1e-12)


def test_the_drawn_capacities_hit_at_the_rate_f():
    """Over 200,000 draws, the share of rooms at least x·P is F_16(x) within 4 standard errors
    of a binomial share (0.0045 at most)."""
    n = 200_000
    s = sets.Sets(16, np.arange(n) * 7919)
    rooms = s.rooms(1_000_000, np.zeros(n, np.int64))
    for x in (0.5, 0.8, 1.0, 1.2, 1.5):
        f = float(sets.hit_probability(np.array([x]), 16)[0])
        assert abs((rooms >= x * 1_000_000).mean() - f) <= 4 * math.sqrt(f * (1 - f) / n) + 1e-6


def test_draws_depend_on_the_salt_and_the_occurrence_only():
    a = sets.draws(np.array([5, 5, 6]), np.array([0, 1, 0]))
    assert a[0] != a[1] and a[0] != a[2]
    assert sets.draws(np.array([5]), np.array([1]))[0] == a[1]
    assert ((a >= 0) & (a < 1)).all()


def test_reach_is_one_for_an_lru_and_past_the_capacity_for_sets():
    assert sets.reach(None) == 1.0
    r = sets.reach(16)
    assert 1.5 < r < 2.5
    assert sets.hit_probability(np.array([r]), 16)[0] == pytest.approx(1e-3, rel=0.01)


def _reference_one(keys, sizes, writes, capacity, salts, cuts):
    """One partition of sets request by request: counters at each cut and at the end."""
    part, stats, marks = sets.Part(capacity, 16, len(keys)), dict(read=0, hit=0, dram=0, back=0), []
    for i, (k, s, w, salt) in enumerate(zip(keys, sizes, writes, salts)):
        if i in cuts:
            marks.append((stats["hit"], stats["dram"], stats["back"] + sum(
                size for size, _, held in part.dirty_now() if not held)))
        hit, back = part.request(int(k), int(s), int(salt), w > 0)
        stats["back"] += back
        stats["hit"] += s if hit and w == 0 else 0
        stats["dram"] += s if not hit and w != 1 else 0
    left = part.dirty_now()
    back = stats["back"] + sum(size for size, _, held in left if not held)
    return (stats["hit"], stats["dram"], back, sum(size for size, _, held in left if held)), marks


@pytest.mark.parametrize("banded", [False, True])
def test_one_partition_played_at_once_is_the_reference(monkeypatch, banded):
    """The stack's play with a capacity drawn per request: read hits, DRAM reads, write-backs
    and dirty bytes left, at the cuts and the end, equal the reference's (with bands from
    every 16th request, on long streams)."""
    if banded:
        monkeypatch.setattr(stack, "STRIDE", 16)
        monkeypatch.setattr(stack, "MIN_BANDED", 2048)
    rng = np.random.default_rng(11 + banded)
    for _ in range(4 if banded else 150):
        n = 5000 if banded else int(rng.integers(1, 400))
        nk = int(rng.integers(20, 600 if banded else 60))
        keys = rng.integers(0, nk, n)
        sizes, writes = (keys % 3 + 1) * 4, rng.choice([0, 0, 0, 1, 2], n)
        capacity, salts = int(rng.integers(24, 1600 if banded else 200)), keys * 31 + 5
        cuts = sorted(set(rng.integers(0, n, 2).tolist()))
        got = stack.play(keys, sizes, writes, capacity, cuts, sets=sets.Sets(16, salts))
        want, marks = _reference_one(keys.tolist(), sizes.tolist(), writes.tolist(), capacity, salts.tolist(), cuts)
        s = got.stats
        assert (s.read_hit_bytes, s.dram_read_bytes, s.dram_write_bytes, s.dirty_bytes_left) == want
        assert [(m.read_hit_bytes, m.dram_read_bytes, m.dram_write_bytes) for m in got.marks] == marks


def test_sets_miss_where_an_lru_of_the_same_bytes_hits():
    """A key re-read after a window of 0.9 × the capacity: an LRU always hits, 16-way sets
    about F_16(0.9) ≈ 0.66 of the time (2,000 keys: within 0.05)."""
    n, size = 2000, 100
    keys = np.concatenate([np.arange(n), np.arange(n)])
    capacity = int(n * size / 0.9)
    lru = stack.play(keys, np.full(2 * n, size), np.zeros(2 * n, np.int64), capacity)
    got = stack.play(keys, np.full(2 * n, size), np.zeros(2 * n, np.int64), capacity, sets=sets.Sets(16, keys))
    assert lru.stats.read_hit_bytes == n * size
    f = float(sets.hit_probability(np.array([(n - 1) * size / capacity]), 16)[0])
    assert abs(got.stats.read_hit_bytes / (n * size) - f) < 0.05


@pytest.mark.parametrize("rule", ["first", "each"])
@pytest.mark.parametrize("turns", [partitions.MAX_TURNS, 1])
def test_two_partitions_of_sets_played_at_once_are_the_reference(monkeypatch, turns, rule):
    """Counters, the counters at each cut and per group, as in test_l2_partitions, with each
    partition of hashed sets."""
    monkeypatch.setattr(partitions, "MAX_TURNS", turns)
    rng = np.random.default_rng(17)
    played = 0
    for _ in range(300):
        keys, sizes, writes, sides = _random_stream(rng)
        capacity, salts = int(rng.integers(24, 200)), keys * 13 + 1
        cuts, groups = sorted(rng.integers(0, len(keys), 2).tolist()), rng.integers(0, 3, len(keys))
        ref = partitions.reference(keys, sizes, writes, sides, capacity, cuts, groups, ways=16, salts=salts, rule=rule)
        got = partitions.play(keys, sizes, writes, sides, capacity, cuts, groups, ways=16, salts=salts, rule=rule)
        _same_play(got, ref)
        played += got.parts is not None
    assert played > 0


def test_copies_of_a_stream_of_sets_are_the_whole_stream_played():
    """times copies of a stream with keys of their own and the same salts, then a rest:
    periodic.copies of the parts' plays equals the whole stream played (each tail key
    tested against its own drawn capacity)."""
    rng = np.random.default_rng(3)
    for _ in range(60):
        n, nk, times = int(rng.integers(5, 120)), int(rng.integers(2, 30)), int(rng.integers(2, 5))
        local = rng.integers(0, nk, n)
        writes, sides = rng.choice([0, 0, 1, 2], n), rng.integers(0, 2, n)
        sizes = (local % 3 + 1) * 4
        capacity = int(rng.integers(16, 400))
        whole = [np.concatenate([local + c * nk for c in range(times + 1)])[:times * n + n // 2]]
        tile = lambda a: np.concatenate([a] * (times + 1))[:times * n + n // 2]   # noqa: E731
        homes, salts = partitions.home(tile(local)), tile(local)
        full = partitions.play(whole[0], tile(sizes), tile(writes), tile(sides), capacity, homes=homes, ways=16,
                               salts=salts)
        one = partitions.play(local, sizes, writes, sides, capacity, homes=partitions.home(local), ways=16,
                              salts=local)
        rest = partitions.play(local[:n // 2], sizes[:n // 2], writes[:n // 2], sides[:n // 2], capacity,
                               homes=partitions.home(local[:n // 2]), ways=16, salts=local[:n // 2])
        if one.parts is None or rest.parts is None:
            continue
        assert periodic.copies(one, times, rest, capacity) == full.stats
