"""The L2 model's LRU played at once from byte stack distances (iosim/models/cache/stack.py)
against the LRU played request by request (iosim/models/cache/lru.py): every counter equal,
at every cut and at the end, on random streams of reads, writes and reductions."""

import dataclasses

import numpy as np
import pytest

from iosim.models.cache import LRUCache
from iosim.models.cache import stack
from iosim.models.cache.periodic import copies


def _reference(keys, sizes, writes, capacity, cuts):
    cache = LRUCache(capacity)
    marks, done = [], 0
    for cut in list(cuts) + [len(keys)]:
        cache.play(keys[done:cut].tolist(), sizes[done:cut].tolist(), writes[done:cut].tolist())
        marks.append(dataclasses.replace(cache.stats))
        done = cut
    marks[-1].dirty_bytes_left = sum(cache.dirty_keys().values())
    return marks[-1], marks[:-1]


def _stream(rng, n, universe, max_size):
    size_of = rng.integers(1, max_size + 1, universe)
    keys = rng.integers(0, universe, n)
    return keys, size_of[keys], rng.choice([0, 0, 0, 1, 2], n)


@pytest.mark.parametrize("seed", range(40))
def test_stack_play_equals_the_lru(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    keys, sizes, writes = _stream(rng, n, int(rng.integers(1, 60)), int(rng.integers(1, 9)))
    capacity = int(rng.integers(int(sizes.max()), 3 * int(sizes.max()) + 40))
    cuts = sorted(rng.integers(0, n + 1, int(rng.integers(0, 4))).tolist())
    got = stack.play(keys, sizes, writes, capacity, cuts)
    assert (got.stats, got.marks) == _reference(keys, sizes, writes, capacity, cuts)


def test_looping_stream_larger_than_the_cache_misses_every_time():
    keys = np.tile(np.arange(10), 5)
    sizes = np.full(50, 4)
    final = stack.play(keys, sizes, np.zeros(50, np.int64), 36).stats      # 9 keys fit, 10 loop
    assert (final.read_hit_bytes, final.dram_read_bytes) == (0, 200)
    final = stack.play(keys, sizes, np.zeros(50, np.int64), 40).stats      # all 10 fit
    assert (final.read_hit_bytes, final.dram_read_bytes) == (160, 40)


def test_refuses_what_it_cannot_play_exactly():
    assert stack.play(np.array([1, 1]), np.array([2, 3]), np.zeros(2), 10) is None   # one key, two sizes
    assert stack.play(np.array([1, 2]), np.array([2, 30]), np.zeros(2), 10) is None  # larger than the cache


@pytest.mark.parametrize("seed", range(30))
def test_copies_of_a_stream_equal_the_stream_played(seed):
    """k copies of a stream, each with keys of its own, then another: periodic.copies from
    the two played alone equals the LRU on the whole concatenation."""
    rng = np.random.default_rng(seed)
    universe = int(rng.integers(1, 30))
    size_of = rng.integers(1, 9, universe)
    parts = []
    for length in (int(rng.integers(1, 120)), int(rng.integers(0, 60))):
        keys = rng.integers(0, universe, length)
        parts.append((keys, size_of[keys], rng.choice([0, 0, 1, 2], length)))
    times = int(rng.integers(2, 7))
    capacity = int(rng.integers(8, 120))
    whole = [np.concatenate([part[0] + c * universe for c, part in enumerate([parts[0]] * times + [parts[1]])])]
    whole += [np.concatenate([part[i] for part in [parts[0]] * times + [parts[1]]]) for i in (1, 2)]
    expected, _ = _reference(*whole, capacity, ())
    full, rest = (stack.play(*part, capacity) for part in parts)
    assert copies(full, times, rest, capacity) == expected


def _distinct_bytes(keys, sizes, lo, hi):
    """D(lo, hi) by brute force: the bytes of the distinct keys requested strictly between."""
    return sum({int(k): int(s) for k, s in zip(keys[lo + 1:hi], sizes[lo + 1:hi])}.values())


@pytest.mark.parametrize("stride", [2, 4, 8])
def test_bands_decide_every_window_as_its_distinct_bytes_do(monkeypatch, stride):
    """The bands (stack._banded, from a checkpoint every 2-8 requests) against D counted by
    brute force: every window fits exactly when D + s fits; a window the bands add back is
    exact. Over the streams, each way of deciding happens: the band's new bytes pass the
    capacity, its distinct bytes from the checkpoint fit, the keys of [c, L] are added back,
    and (with the smallest budget) the sums take the rest."""
    monkeypatch.setattr(stack, "STRIDE", stride)
    monkeypatch.setattr(stack, "ADDED_CHUNK", 3)          # the keys added back, a few windows at a time
    seen = {"miss": 0, "fits": 0, "added back": 0, "to the sums": 0}
    for seed in range(60):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(2, 300))
        keys, sizes, _ = _stream(rng, n, int(rng.integers(1, 40)), int(rng.integers(1, 9)))
        capacity = int(rng.integers(int(sizes.max()), 4 * int(sizes.max()) + 30))
        order = np.argsort(keys, kind="stable")
        same = keys[order[1:]] == keys[order[:-1]]
        prev, nxt = np.full(n, -1), np.full(n, n)
        prev[order[1:][same]], nxt[order[:-1][same]] = order[:-1][same], order[1:][same]
        at = np.flatnonzero(prev >= 0)
        if not len(at):
            continue
        exact = np.array([_distinct_bytes(keys, sizes, p, i) for p, i in zip(prev[at], at)]) + sizes[prev[at]]
        band = int(rng.integers(stride, 3 * stride + 8))
        monkeypatch.setattr(stack, "BAND_BUDGET", [0, 0.5, 64][seed % 3])
        got, known = stack._banded(at, prev[at], capacity, prev=prev, nxt=nxt, sizes=sizes, band=band)
        assert ((got <= capacity) == (exact <= capacity))[known].all()
        inside = at <= prev[at] // stride * stride + band
        added = known & inside & (got <= capacity) & (got == exact)
        seen["miss"] += int((known & (got > capacity)).sum())
        seen["fits"] += int((known & inside & (got <= capacity) & (got != exact)).sum())
        seen["added back"] += int(added.sum())
        seen["to the sums"] += int((~known).sum())
        total = np.concatenate([[0], np.cumsum(sizes)])
        whole = stack._need(at, prev[at], capacity, again=at, prev=prev, nxt=nxt, sizes=sizes, total=total,
                            band=band)
        assert ((whole <= capacity) == (exact <= capacity)).all()
    assert min(seen.values()) > 0, seen


@pytest.mark.parametrize("seed", range(12))
def test_a_long_stream_played_with_bands_equals_the_lru(monkeypatch, seed):
    """Streams of 6,000 requests played with bands from every 16th: every counter equal to the
    LRU's at every cut and at the end."""
    monkeypatch.setattr(stack, "STRIDE", 16)
    monkeypatch.setattr(stack, "MIN_BANDED", 4096)
    monkeypatch.setattr(stack, "ADDED_CHUNK", 7)
    calls = []
    monkeypatch.setattr(stack, "_banded", lambda *a, **k: calls.append(1) or banded(*a, **k))
    rng = np.random.default_rng(100 + seed)
    n = 6000
    keys, sizes, writes = _stream(rng, n, int(rng.integers(20, 400)), 8)
    capacity = int(rng.integers(16, 600))
    cuts = sorted(rng.integers(0, n + 1, 3).tolist())
    got = stack.play(keys, sizes, writes, capacity, cuts)
    assert (got.stats, got.marks) == _reference(keys, sizes, writes, capacity, cuts)
    assert calls


banded = stack._banded


@pytest.mark.parametrize("seed", range(20))
def test_the_tail_is_each_dirty_cached_keys_distinct_bytes_to_the_end(seed):
    """Played.tail_need (what periodic.copies extends from): for each key the LRU leaves
    dirty, in the order of their last requests, D(its last request, end) + its size."""
    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(1, 300))
    keys, sizes, writes = _stream(rng, n, int(rng.integers(1, 40)), 6)
    capacity = int(rng.integers(6, 80))
    cache = LRUCache(capacity)
    cache.play(keys.tolist(), sizes.tolist(), writes.tolist())
    dirty = set(cache.dirty_keys())
    last = {int(k): i for i, k in enumerate(keys)}
    tail = sorted(i for k, i in last.items() if k in dirty)
    got = stack.play(keys, sizes, writes, capacity)
    assert got.tail_need.tolist() == [_distinct_bytes(keys, sizes, i, n) + int(sizes[i]) for i in tail]
    assert got.tail_size.tolist() == [int(sizes[i]) for i in tail]
