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
