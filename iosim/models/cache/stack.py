"""The LRU of :mod:`.lru`, played at once with NumPy from stack distances in bytes.

Why it is the same cache. When every key keeps one size and none is larger than the
cache, the LRU holds exactly the longest run of its recency stack, from the top, whose
sizes sum to at most its capacity: a hit moves a key within that run; a miss pushes a key
on top and evicts from the run's bottom until it fits, and every key below the run was
evicted before, so the run is again the longest that fits. Hence a request ``i`` for
key k, last requested at ``L``, hits exactly when

    D(L, i) + s_k ≤ capacity,   D(L, i) = bytes of the distinct keys requested in (L, i),

and k is still cached after request ``c − 1`` when D(L, c) + s_k ≤ capacity, L being its
last request before ``c``. D is a sum over the window minus the requests in it whose key
was already requested in it: D(L, i) = S(i) − S(L + 1) − Σ{s_j : j < i, prev(j) > L},
with S the prefix sums of the sizes and prev(j) the last earlier request for j's key. The
last term is a dominance sum over the points (j, prev(j)), computed for all requests at
once by sorting the points within blocks of 2^b requests, for each b (log₂ n passes).

Write-backs follow from the same test. A key's *stay* runs from a miss to the request
before its next miss; a stay with a write is dirty, and is written to DRAM when it is
evicted: before its key's next miss, or, if there is none, when the test fails at the
end (else it is left dirty). Cuts (the marks of :mod:`.periodic`) ask the same test at
their index. The result equals :meth:`.lru.LRUCache.play` request for request
(tests/invariants/test_l2_stack.py); where its conditions do not hold (a key of two sizes,
a key larger than the cache, a cache behind this one) :func:`play` returns None and the
caller plays the LRU.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .lru import CacheStats


@dataclass
class Played:
    """A stream played from a cold cache."""

    stats: CacheStats        # at its end, with the dirty bytes left
    marks: list              # CacheStats where each cut starts (no dirty bytes counted)
    distinct_bytes: int      # bytes of its distinct keys
    #: the dirty keys still cached at the end: D(L, end) + their size, and their size
    #: (each is evicted once that many bytes of other keys come after it)
    tail_need: np.ndarray
    tail_size: np.ndarray
    #: with ``groups``: CacheStats field -> its bytes per group (a write-back and a dirty
    #: byte left belong to the group of the last request of their key's stay)
    by_group: dict | None = None
    #: with ``hits``: per request, whether it hit
    hits: np.ndarray | None = None
    #: two partitions (:mod:`.partitions`): each one's own Played (its tail and distinct bytes)
    parts: list | None = None


def play(keys: np.ndarray, sizes: np.ndarray, writes: np.ndarray, capacity: int, cuts=(),
         groups: np.ndarray | None = None, hits: bool = False) -> Played | None:
    """The stream played from a cold cache (see :class:`Played`); None when a key has two
    sizes or a key is larger than ``capacity``. ``writes``: 0 read, 1 write, 2 reduction
    (its old value fetched on a miss); ``groups``: a group per request (≥ 0), to count by;
    ``hits``: keep whether each request hit."""
    keys, sizes, writes = (np.asarray(a, np.int64) for a in (keys, sizes, writes))
    n = len(keys)
    if n == 0:
        empty = np.zeros(0, np.int64)
        return Played(CacheStats(), [CacheStats() for _ in cuts], 0, empty, empty,
                      None if groups is None else {k: empty for k in FIELDS}, np.zeros(0, bool) if hits else None)
    order = np.argsort(keys, kind="stable")
    same = keys[order[1:]] == keys[order[:-1]]
    if (sizes > capacity).any() or (sizes[order[1:]][same] != sizes[order[:-1]][same]).any():
        return None
    prev, nxt = np.full(n, -1), np.full(n, -1)
    prev[order[1:][same]] = order[:-1][same]
    nxt[order[:-1][same]] = order[1:][same]
    total = np.concatenate([[0], np.cumsum(sizes)])
    again = np.flatnonzero(prev >= 0)
    need = functools.partial(_need, again=again, prev=prev, sizes=sizes, total=total)
    ends = [int(c) for c in cuts] + [n]
    last = [np.flatnonzero((np.arange(n) < c) & ((nxt >= c) | (nxt < 0))) for c in ends]
    q_at = np.concatenate([again] + [np.full(len(j), c) for j, c in zip(last, ends)])
    q_from = np.concatenate([prev[again]] + last)
    fits = total[q_at] - total[q_from + 1] + sizes[q_from] <= capacity     # the window's every byte fits
    fits[~fits] = need(q_at[~fits], q_from[~fits]) <= capacity
    hit = np.zeros(n, bool)
    hit[again] = fits[:len(again)]
    cached = np.split(fits[len(again):], np.cumsum([len(j) for j in last])[:-1])
    dirty = _dirty_so_far(order, hit, writes > 0)
    stats, marks = _stats(sizes, writes, hit, nxt, dirty, ends, last, cached)
    tail = last[-1][dirty[last[-1]] & cached[-1]]
    by_group = None if groups is None else _by_group(np.asarray(groups, np.int64), sizes, writes, hit, nxt, dirty,
                                                     last[-1], cached[-1])
    return Played(stats, marks, int(sizes[prev < 0].sum()), need(np.full(len(tail), n), tail), sizes[tail],
                  by_group, hit if hits else None)


FIELDS = ("read_bytes", "read_hit_bytes", "write_bytes", "dram_read_bytes", "dram_write_bytes", "dirty_bytes_left")


def _by_group(groups, sizes, writes, hit, nxt, dirty, last, cached) -> dict:
    """CacheStats field -> bytes per group, over the whole stream."""
    read, fill = writes == 0, writes == 2
    stay_end = dirty & (nxt >= 0) & ~hit[np.maximum(nxt, 0)]
    at_end = np.zeros(len(sizes), bool)
    at_end[last] = True
    kept = np.zeros(len(sizes), bool)
    kept[last] = cached
    masks = {"read_bytes": read, "read_hit_bytes": read & hit, "write_bytes": ~read,
             "dram_read_bytes": ~hit & (read | fill), "dram_write_bytes": stay_end | (at_end & dirty & ~kept),
             "dirty_bytes_left": at_end & dirty & kept}
    width = int(groups.max()) + 1 if len(groups) else 0
    return {name: np.bincount(groups[m], sizes[m], minlength=width).astype(np.int64) for name, m in masks.items()}


def _need(q_at, q_from, *, again, prev, sizes, total) -> np.ndarray:
    """D(q_from, q_at) + the size of q_from's key, per query; the points that can repeat in
    a window are those between the queries' first start and last end."""
    if not len(q_at):
        return np.zeros(0, np.int64)
    inside = again[(again > q_from.min()) & (again < q_at.max())]
    window = total[q_at] - total[q_from + 1] - _repeated(inside, prev[inside], sizes[inside], q_at, q_from)
    return window + sizes[q_from]


def _repeated(points: np.ndarray, prev: np.ndarray, weight: np.ndarray, q_at: np.ndarray,
              q_from: np.ndarray) -> np.ndarray:
    """Per query: Σ weight[t] over the points with points[t] < q_at and prev[t] > q_from
    (``points`` ascending): bit b of the number of points before ``q_at`` names one block
    of 2^b points, sorted by prev, where a binary search finds those past ``q_from``."""
    m = len(points)
    out = np.zeros(len(q_at), np.int64)
    if m == 0:
        return out
    before = np.searchsorted(points, q_at)
    span = int(prev.max()) + 2
    order = np.arange(m)
    b = 0
    while (1 << b) <= m:
        key = (np.arange(m) >> b) * span + prev
        order = order[np.argsort(key[order], kind="stable")]
        sorted_key = key[order]
        acc = np.concatenate([[0], np.cumsum(weight[order])])
        q = np.flatnonzero((before >> b) & 1)
        block = (before[q] >> b) - 1
        end = np.minimum((block + 1) << b, m)
        first = np.searchsorted(sorted_key, block * span + np.minimum(q_from[q], span - 1), side="right")
        out[q] += acc[end] - acc[first]
        b += 1
    return out


def _dirty_so_far(order: np.ndarray, hit: np.ndarray, written: np.ndarray) -> np.ndarray:
    """Per request: whether its key's stay (since the last miss) has had a write, up to it."""
    n = len(order)
    miss = ~hit[order]
    stay = np.cumsum(miss) - 1
    writes = np.cumsum(written[order])
    before = np.concatenate([[0], writes])[np.flatnonzero(miss)][stay]    # writes before the stay
    out = np.empty(n, bool)
    out[order] = writes - before > 0
    return out


def _stats(sizes, writes, hit, nxt, dirty, ends, last, cached) -> tuple[CacheStats, list]:
    """CacheStats at each end (the last is the stream's end, with the dirty bytes left)."""
    read, fill = writes == 0, writes == 2
    running = {name: np.concatenate([[0], np.cumsum(np.where(mask, sizes, 0))]) for name, mask in (
        ("read_bytes", read), ("read_hit_bytes", read & hit), ("write_bytes", ~read),
        ("dram_read_bytes", ~hit & (read | fill)))}
    n = len(sizes)
    stay_end = dirty & (nxt >= 0) & ~hit[np.maximum(nxt, 0)]      # dirty stays ended by a miss
    ended_by = np.sort(nxt[stay_end])
    ended_bytes = np.concatenate([[0], np.cumsum(sizes[stay_end][np.argsort(nxt[stay_end], kind="stable")])])
    out = []
    for c, j, kept in zip(ends, last, cached):
        evicted = dirty[j] & ~kept
        s = CacheStats(**{name: int(v[c]) for name, v in running.items()})
        s.dram_write_bytes = int(ended_bytes[np.searchsorted(ended_by, c)] + sizes[j][evicted].sum())
        if c == n:
            s.dirty_bytes_left = int(sizes[j][dirty[j] & kept].sum())
        out.append(s)
    return out[-1], out[:-1]
