"""Spans through a chain of caches (iosim/models/cache/chain.py), the player the windows use
where a cache sits behind the L2 (MI300X's Infinity Cache) or chunks have two sizes.

1. From cold caches it is the chain of iosim/models/cache/lru.py request for request: every
   level's counters, the DRAM bytes past the last, and the dirty bytes left (a chunk dirty in
   two levels once); per tensor, the counters sum to those totals.
2. From given states it counts only the span, as the chain does when the states were played
   first (the states :func:`chain.states` makes are the LRU's own where one level holds what
   the requests before left: each chunk's last request, the most recent that fit).
"""

from collections import OrderedDict

import numpy as np
import pytest

from iosim.models.cache import chain
from iosim.models.cache.playback import _caches, _dirty_left, _report
from iosim.models.cache.stream import Stream


def _stream(rng, n: int, chunks: int, sizes=(4096,)) -> Stream:
    """n requests over ``chunks`` chunks of 3 tensors (hi = tensor << 35), each chunk of one
    size from ``sizes``; a fifth writes, a tenth reductions."""
    key = rng.integers(0, chunks, n)
    tensor = key % 3
    parts = np.stack([key % 5, tensor << 35, key], axis=1).astype(np.int64)
    size = np.asarray(sizes, np.int64)[key % len(sizes)]
    kind = rng.choice([0, 1, 2], n, p=[0.7, 0.2, 0.1]).astype(np.int64)
    return Stream(parts, size, kind, np.zeros(n, np.int64), [])


def _lru_chain(s: Stream, capacities: list[int], start: int = 0):
    outer = tuple((f"level{i}", c) for i, c in enumerate(capacities[1:]))
    cache, levels = _caches(capacities[0], outer)
    for k, (key, size, w) in enumerate(zip(s.keys, s.sizes, s.writes)):
        if k == start:                      # the states played: count from here
            for c in [cache] + [c for _, c in levels]:
                c.stats = type(c.stats)()
        if w:
            cache.write(key, size, fill=w == 2)
        else:
            cache.read(key, size)
    _dirty_left(cache, levels)
    return cache, levels


@pytest.mark.parametrize("capacities,sizes", [
    ([64 << 10, 512 << 10], (4096,)),
    ([64 << 10, 256 << 10, 1 << 20], (4096, 8192)),
    ([48 << 10], (4096, 12288, 2048)),                # one level, chunks of three sizes
])
def test_from_cold_caches_it_is_the_lru_chain(capacities, sizes):
    rng = np.random.default_rng(7)
    s = _stream(rng, 20_000, 400, sizes)
    cache, levels = _lru_chain(s, capacities)
    got = chain.play([OrderedDict() for _ in capacities], capacities, s, 3)
    nearest, behind = _report(cache, levels)
    for level, stats in zip(got, [cache.stats] + [c.stats for _, c in levels]):
        for name in chain.COUNTERS:
            assert int(level[name].sum()) == getattr(stats, name), name
    assert int(got[0]["end_dirty"].sum()) == nearest.dirty_bytes_left
    assert int(got[-1]["dram_read_bytes"].sum()) == nearest.dram_read_bytes
    assert int(got[0]["read_bytes"].sum()) > int(got[0]["read_hit_bytes"].sum()) > 0


def test_from_the_states_it_counts_the_span():
    """One level: the state from each chunk's last request before the span (chain.states) is
    what the LRU holds there, so the span counts as in the whole stream."""
    rng = np.random.default_rng(11)
    s = _stream(rng, 12_000, 300)
    cut, capacity = 8_000, 96 << 10
    t = np.arange(cut)
    ids = s.key_ids()[:cut]
    last = np.array([np.flatnonzero(ids == i).max() for i in np.unique(ids)])
    seen = {"key": s.key_parts[last], "size": s.size[last], "t": t[last], "written": s.write[last] > 0}
    span = Stream(s.key_parts[cut:], s.size[cut:], s.write[cut:], np.zeros(len(s.size) - cut, np.int64), [])
    got = chain.play(chain.states(seen, [capacity]), [capacity], span, 3)
    cache, _ = _lru_chain(s, [capacity], start=cut)
    for name in ("read_bytes", "read_hit_bytes", "write_bytes", "dram_read_bytes"):
        assert int(got[0][name].sum()) == getattr(cache.stats, name), name


def test_a_level_behind_holds_what_fits_in_it_less_what_the_l2_holds_dirty():
    seen = {"key": np.array([[0, 0, k] for k in range(6)], np.int64), "size": np.full(6, 10, np.int64),
            "t": np.arange(6), "written": np.array([1, 0, 1, 0, 1, 0], bool)}
    l2, behind = chain.states(seen, [20, 50])
    assert list(l2) == [(0, 0, 4), (0, 0, 5)] and l2[(0, 0, 4)][1] is True
    assert list(behind) == [(0, 0, 1), (0, 0, 2), (0, 0, 3), (0, 0, 5)]       # 4: dirty in the L2 only
    assert behind[(0, 0, 2)][1] is True and behind[(0, 0, 5)][1] is False
