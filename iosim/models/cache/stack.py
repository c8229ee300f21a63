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

Bands (:func:`_banded`): most windows a test asks about are far longer than the cache, so
their exact D is not needed, only that it is too large. From checkpoints c every
:data:`STRIDE` requests, a band of H requests holds E_c(x) = Σ{s_j : c ≤ j < x, prev(j) < c}.
For a window (L, i) with c ≤ L the last checkpoint, E_c(min(i, c + H)) − E_c(L + 1) counts
only keys first requested in the window, so it is at most D(L, i): past the capacity, the
request misses. Where i ≤ c + H it is D(L, i) less the keys requested in [c, L] and again in
(L, i): those are the r in [c, L] with L < next(r) < i, at most STRIDE of them, added back
exactly; and where the distinct bytes of [c, i) fit, so do those of (L, i). H is where the
distinct bytes after a sample of checkpoints pass the capacity; a window that its band
does not decide goes to a band four times longer, and at last (or where bands would cost
more) to the sums above.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .lru import CacheStats
from .sets import Sets, occurrences
from .watch import advance


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
    #: the capacity each dirty key still cached at the end is tested against (its next
    #: request's: :mod:`.sets`); None: the cache's
    tail_room: np.ndarray | None = None
    #: with ``stays``: every dirty stay (:func:`dirty_stays`)
    stays: dict | None = None
    #: with ``hits``: per request, D(L, i) + its key's size or a bound on the same side of its
    #: capacity (at most it where it hit, more where it missed; 0 where its key was new)
    needs: np.ndarray | None = None


def play(keys: np.ndarray, sizes: np.ndarray, writes: np.ndarray, capacity: int, cuts=(),
         groups: np.ndarray | None = None, hits: bool = False, order: np.ndarray | None = None,
         sets: Sets | None = None, stays: bool = False, settle=None) -> Played | None:
    """The stream played from a cold cache (see :class:`Played`); None when a key has two
    sizes or a key is larger than ``capacity``. ``writes``: 0 read, 1 write, 2 reduction
    (its old value fetched on a miss), 3 a clean copy (allocated, never dirty: a write done
    in another partition, :mod:`.partitions`); ``groups``: a group per request (≥ 0), to count by;
    ``hits``: keep whether each request hit; ``order``: the requests sorted stably by key,
    where the caller has it; ``sets``: the cache is hashed sets (:mod:`.sets`), each
    request tested against a capacity of its own; ``stays``: keep every dirty stay
    (:func:`dirty_stays`); ``settle``: a function of each request's previous request of its
    key (−1: none) and its capacity that gives (whether its hit is known, the hit, a bound as
    ``needs`` keeps), which only the others are tested for (:mod:`.partitions`' turns)."""
    keys, sizes, writes = (np.asarray(a, np.int64) for a in (keys, sizes, writes))
    n = len(keys)
    if n == 0:
        empty = np.zeros(0, np.int64)
        return Played(CacheStats(), [CacheStats() for _ in cuts], 0, empty, empty,
                      None if groups is None else {k: empty for k in FIELDS}, np.zeros(0, bool) if hits else None,
                      stays={k: empty for k in STAY_FIELDS} if stays else None, needs=empty if hits else None)
    order = np.argsort(keys, kind="stable") if order is None else order
    same, prev, nxt = links(keys, order)
    if (sizes > capacity).any() or (sizes[order[1:]][same] != sizes[order[:-1]][same]).any():
        return None
    room, held = capacity, capacity               # each request's capacity, and its next one's
    if sets is not None:
        occurrence = occurrences(order, same)
        room = sets.rooms(capacity, occurrence)
        held, last = room[np.maximum(nxt, 0)], np.flatnonzero(nxt < 0)     # the next request's draw
        held[last] = sets.subset(last).rooms(capacity, occurrence[last] + 1)
    total = np.concatenate([[0], np.cumsum(sizes)])
    again = np.flatnonzero(prev >= 0)
    q_from = prev[again]
    room_q = np.broadcast_to(room, (n,))[again]
    need = total[again] - total[q_from + 1] + sizes[q_from]       # every byte of the window: a bound above
    fits = need <= room_q
    ask = ~fits
    if settle is not None:
        known, value, bound = (a[again] for a in settle(prev, np.broadcast_to(room, (n,))))
        fits[known], need[known] = value[known], bound[known]
        ask &= ~known
    need[ask] = _need(again[ask], q_from[ask], room_q[ask], again=again, prev=prev, nxt=np.where(nxt < 0, n, nxt),
                      sizes=sizes, total=total, band=_band_length(prev, sizes, int(np.max(room_q[ask], initial=0))))
    fits[ask] = need[ask] <= room_q[ask]
    hit, needs = np.zeros(n, bool), np.zeros(n, np.int64)
    hit[again], needs[again] = fits, need
    got = counted(order, prev, nxt, sizes, writes, hit, cuts, held, groups, hits, stays)
    got.needs = needs if hits else None
    return got


def links(keys: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(whether each request in ``order`` after the first has the key of the one before it,
    each request's previous request of its key (−1: none), its next (−1: none))."""
    n = len(keys)
    same = keys[order[1:]] == keys[order[:-1]]
    prev, nxt = np.full(n, -1), np.full(n, -1)
    prev[order[1:][same]] = order[:-1][same]
    nxt[order[:-1][same]] = order[1:][same]
    return same, prev, nxt


def counted(order, prev, nxt, sizes, writes, hit, cuts, capacity, groups=None, hits=False, stays=False) -> Played:
    """The :class:`Played` of a stream whose hits are known: its counters at each cut and at
    the end, where a key is still cached at a cut when the distinct bytes since its last
    request fit ``capacity`` (a number, or one per request, the last one's counting);
    ``stays``: with its dirty stays (:func:`dirty_stays`)."""
    n = len(sizes)
    ends = [int(c) for c in cuts] + [n]
    last = [np.flatnonzero((np.arange(n) < c) & ((nxt >= c) | (nxt < 0))) for c in ends]
    # at a cut c, D(l, c) for a key last requested at l: the sizes of the keys last requested after l
    needs = [np.cumsum(sizes[j][::-1])[::-1] for j in last]
    room = np.broadcast_to(capacity, (n,))
    cached = [need <= room[j] for need, j in zip(needs, last)]
    token = _last_writes(order, hit, (writes == 1) | (writes == 2))
    dirty = token >= 0                          # the key's stay has had a write, up to the request
    stats, marks = _stats(sizes, writes, hit, nxt, dirty, ends, last, cached)
    tail = dirty[last[-1]] & cached[-1]
    by_group = None if groups is None else _by_group(np.asarray(groups, np.int64), sizes, writes, hit, nxt, dirty,
                                                     last[-1], cached[-1])
    got = Played(stats, marks, int(sizes[prev < 0].sum()), needs[-1][tail], sizes[last[-1][tail]],
                 by_group, hit if hits else None,
                 tail_room=None if np.ndim(capacity) == 0 else room[last[-1][tail]])
    if stays:
        got.stays = dirty_stays(token, nxt, sizes, hit, dirty, ends, last, cached, groups)
    return got


#: the fields of :func:`dirty_stays`
STAY_FIELDS = ("token", "pos", "size", "group")


def dirty_stays(token, nxt, sizes, hit, dirty, ends, last, cached, groups=None) -> dict:
    """Every dirty stay, by the request that ends it (its key's last before a miss or the
    end): ``token``, the stay's last write (:func:`_last_writes`); ``pos``, the request
    before which it is written back (evicted: before the first cut where its key is no longer
    cached, else before its key's next miss; n where it is still cached at the end); its
    ``size`` and ``group`` (its last request's). Counted by a cut c exactly when pos < c, so
    the write-backs at each cut are :func:`_stats`'s."""
    n = len(sizes)
    follow = np.maximum(nxt, 0)
    end = dirty & ((nxt < 0) | ~hit[follow])
    pos = np.where(nxt >= 0, nxt, n)
    for c, j, kept in zip(ends, last, cached):
        gone = j[~kept]
        pos[gone] = np.minimum(pos[gone], c - 1)
    rows = np.flatnonzero(end)
    group = np.zeros(len(rows), np.int64) if groups is None else np.asarray(groups, np.int64)[rows]
    return {"token": token[rows], "pos": pos[rows], "size": sizes[rows], "group": group}


def _last_writes(order: np.ndarray, hit: np.ndarray, written: np.ndarray) -> np.ndarray:
    """Per request: the index of the last write of its key's stay up to it (−1: none yet). A
    stay starts at a miss; in key order each stay's values are offset past the stays before,
    so one running maximum serves them all."""
    n = len(order)
    stay = np.cumsum(~hit[order])
    run = np.maximum.accumulate(stay * (n + 1) + np.where(written[order], order + 1, 0))
    out = np.empty(n, np.int64)
    out[order] = run - stay * (n + 1) - 1
    return out


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


#: requests between two checkpoints of the bands; streams shorter than :data:`MIN_BANDED`
#: requests are summed without them (the sums are as fast there: benchmarks/cache_speed.py)
STRIDE, MIN_BANDED = 1024, 1 << 17
#: a round of bands, or the keys added back, is taken only where it costs at most
#: BAND_BUDGET × what the sums would: (n + queries) × log₂ n, each band entry counted
#: 0.6 and each key added back 0.17 of that unit (their times per entry on the
#: development machine: about 20 ns, 4.7 ns and 30 ns)
BAND_BUDGET, BAND_COST, ADDED_COST = 1.0, 0.6, 0.17


def _affordable(entries: int, weight: float, n: int, queries: int) -> bool:
    """Whether ``entries`` of band work, each ``weight`` of the sums' unit, costs at most
    BAND_BUDGET × the sums' cost for ``queries`` windows of an n-request stream."""
    return weight * entries <= BAND_BUDGET * (n + queries) * max(1, n.bit_length())


def _checkpoints(q_from: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the checkpoints the windows start after, each window's index among them)."""
    t = q_from // STRIDE
    used = np.zeros(int(t.max()) + 1, bool)
    used[t] = True
    return np.flatnonzero(used) * STRIDE, (np.cumsum(used) - 1)[t]


def _band_length(prev: np.ndarray, sizes: np.ndarray, capacity: int) -> int | None:
    """H (the module's text): the most requests after 16 checkpoints, sampled evenly, before
    their distinct bytes pass ``capacity`` (at most 16 × STRIDE), plus STRIDE; None for a
    short stream."""
    n, most = len(sizes), min(16 * STRIDE, len(sizes))
    if n < MIN_BANDED:
        return None
    c = np.linspace(0, n - most, 16).astype(np.int64)[:, None]
    j = c + np.arange(most)
    passed = (np.cumsum(np.where(prev[j] < c, sizes[j], 0), axis=1) <= capacity).sum(axis=1)
    return int(passed.max()) + 1 + STRIDE


def _need(q_at, q_from, capacity, *, again, prev, nxt, sizes, total, band) -> np.ndarray:
    """D(q_from, q_at) + the size of q_from's key, per query, or a bound on the same side of
    ``capacity`` (a number, or one per query; the caller asks only whether the key fits).
    ``nxt``: each request's next of its key, n where none; ``band``: H or None. Bands four
    times longer take the queries a band left, while they fit the budget; the sums take the
    rest (the points that can repeat in a window: those between the first start and last end)."""
    out = np.zeros(len(q_at), np.int64)
    rest = np.arange(len(q_at))
    while band is not None and len(rest):
        checkpoints = _checkpoints(q_from[rest])
        if not _affordable(len(checkpoints[0]) * band, BAND_COST, len(sizes), len(rest)):
            break
        got, known = _banded(q_at[rest], q_from[rest], np.broadcast_to(capacity, q_at.shape)[rest], prev=prev,
                             nxt=nxt, sizes=sizes, band=band, checkpoints=checkpoints)
        out[rest[known]] = got[known]
        rest, band = rest[~known], 4 * band
    if len(rest):
        at, start = q_at[rest], q_from[rest]
        inside = again[(again > start.min()) & (again < at.max())]
        window = total[at] - total[start + 1] - _repeated(inside, prev[inside], sizes[inside], at, start)
        out[rest] = window + sizes[start]
    return out


def _banded(q_at, q_from, capacity, *, prev, nxt, sizes, band, checkpoints=None) -> tuple[np.ndarray, np.ndarray]:
    """(need, known) per query from the band of its checkpoint c (the module's text;
    ``checkpoints``: :func:`_checkpoints` of ``q_from``, where the caller has it). Known: a
    window whose band's new bytes after L already pass ``capacity`` (need: that bound); a
    window ending in its band whose distinct bytes from c on fit (need: that bound); or one
    ending in its band whose keys requested in [c, L] were added back (need: exact)."""
    n, h = len(sizes), band
    checkpoints, row = _checkpoints(q_from) if checkpoints is None else checkpoints
    start = checkpoints[row]
    ends = np.minimum(q_at, start + h) - start
    low, up = np.zeros(len(q_at), np.int64), np.zeros(len(q_at), np.int64)
    rows = max(16, (1 << 18) // h)
    order = np.argsort(row, kind="stable")
    edges = np.searchsorted(row[order], np.arange(0, len(checkpoints) + rows, rows))
    small = np.int32 if h * int(sizes.max()) < 2**31 and n + h < 2**31 else np.int64
    prev_, sizes_ = (np.concatenate([a, np.full(h, fill)]).astype(small) for a, fill in ((prev, n), (sizes, 0)))
    for b, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        sel, at = order[lo:hi], checkpoints[b * rows:(b + 1) * rows, None].astype(small) + np.arange(h, dtype=small)
        sums = np.zeros((len(at), h + 1), small)
        np.cumsum(np.where(prev_[at] < at[:, :1], sizes_[at], 0), axis=1, out=sums[:, 1:])
        r = row[sel] - b * rows
        up[sel] = sums[r, ends[sel]]
        low[sel] = up[sel] - sums[r, q_from[sel] + 1 - start[sel]]
        advance(b + 1, len(edges) - 1, "bands")
    s = sizes[q_from]
    inside = q_at <= start + h
    fitting = inside & (up <= capacity)   # [c, i)'s distinct bytes, the key's own among them (c ≤ L), fit
    need = np.where(fitting, up, low + s)
    known = fitting | (need > capacity)
    fix = np.flatnonzero(inside & ~known)
    if _affordable(len(fix) * STRIDE, ADDED_COST, n, len(fix)):      # else the sums take them
        need[fix] += _added_back(start[fix], q_from[fix], q_at[fix], nxt, sizes)
        known[fix] = True
    return need, known


#: queries whose keys are added back at once: each takes a row of STRIDE requests, so a
#: chunk's temporaries stay about 2 MiB, in the CPU's caches (all at once, 190,000 queries took
#: 4.6 GB and, page-faulting, 12 s; chunks of 4,096, 32 MiB, 11-14 ns a key, and of 512 in 32-bit
#: integers 5-6 ns: docs/performance.md)
ADDED_CHUNK = 512


def _added_back(start, q_from, q_at, nxt, sizes) -> np.ndarray:
    """Per query, the sizes of the keys requested in [start, q_from] whose next request is
    after q_from and before q_at (the window's keys the band missed), in chunks of
    :data:`ADDED_CHUNK` queries."""
    out, n = np.zeros(len(start), np.int64), len(sizes)
    small = np.int32 if n + STRIDE < 2 ** 31 else np.int64
    steps = np.arange(STRIDE, dtype=small)
    # past the stream's end a key "requested" of size 0 (r ≤ L < n counts: the padding never does)
    nxt_ = np.concatenate([nxt, np.full(STRIDE, n)]).astype(small)
    sizes_ = np.concatenate([sizes, np.zeros(STRIDE, np.int64)]).astype(small if STRIDE * int(sizes.max()) < 2 ** 31
                                                                           else np.int64)
    for lo in range(0, len(start), ADDED_CHUNK):
        part = slice(lo, lo + ADDED_CHUNK)
        back = start[part].astype(small)[:, None] + steps
        upto, until = (a[part].astype(small)[:, None] for a in (q_from, q_at))
        after = nxt_[back]
        out[part] = np.where((back <= upto) & (after > upto) & (after < until), sizes_[back], 0).sum(axis=1,
                                                                                                    dtype=np.int64)
        advance(min(lo + ADDED_CHUNK, len(start)), len(start), "keys added back")
    return out


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
        advance(b, m.bit_length(), "sums")
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
