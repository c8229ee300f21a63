"""Every head through the L2 at a cost that does not grow with the head count.

The heads of a kernel are identical up to their place in the launch order: the grid is
(blocks of one head, batch, heads), head-major, and a GQA group of ``group`` query heads
shares its K/V. With ``slots`` thread blocks (CTAs) resident and ``n`` CTAs per head, the
launch pattern — which CTAs run together, where the waves of CTAs start relative to the
heads — repeats every P = lcm(lcm(slots, n) / n, group) heads. Once the cold start is
forgotten (the cache has turned over: a few waves and a few times capacity / one head's
footprint), the cache's state repeats with it, so every P further heads add the same
bytes to every counter, and the state the kernel ends in (the dirty bytes left) repeats
too.

:func:`all_heads` plays h₀, h₀ + P and h₀ + 2P heads (h₀ ≡ heads mod P, past the warm-up)
and, when the two steps of P agree in every counter of every level, extends the total to
``heads`` linearly; when they do not, it doubles h₀ and tries again, and plays every head
once those three runs would cost as much (3(h₀ + P) ≥ ``heads``): a run of few heads is
always played head by head. Where the player can report the counters part-way (the
stream of :mod:`.stream`), one run of about h₀ + 3P heads gives both steps: the counters
where heads h₀, h₀ + P and h₀ + 2P start (:func:`_marked`), half the heads of three runs. The agreement of two steps is checked, not proven to last;
tests/invariants/test_l2_heads.py compares the extension with playing every head over
FA1, FA2 (both passes), GQA, causal masks, unequal lengths and split-KV.

:func:`copies` needs no check: when every CTA has the same length, the P heads' CTAs fill
whole waves (P × n is a multiple of ``slots``), so the request stream of k·P + r heads is
k copies of P heads' stream, then r heads' stream, each naming heads of its own; with
the LRU played from stack distances (:mod:`.stack`) that gives every counter exactly.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .lru import CacheStats


def period(slots: int, ctas_per_head: int, group: int) -> int:
    """P: heads after which the launch pattern (waves of CTAs over heads, GQA groups) repeats."""
    n = max(1, ctas_per_head)
    return math.lcm(math.lcm(slots, n) // n, max(1, group))


#: two steps of P heads, counted by head, whose counters differ by at most this fraction of a
#: step's DRAM bytes extend the totals too, and the result says so (:func:`_marked`)
NEAR = 1e-2


def all_heads(play, heads: int, *, slots: int, ctas_per_head: int, group: int, footprint_bytes,
              capacity_bytes: int, play_marked=None) -> tuple[CacheStats, dict, float | None]:
    """``play(heads)``, the stats of the nearest cache and {level: stats} of those behind it,
    for every head (see the module's docstring), and None where that is exact or else how
    far apart the two steps it extended were (:func:`_marked`); ``footprint_bytes()``: one
    head's distinct bytes (asked only when the extension may pay). ``play_marked(h, marks)``,
    where given, plays ``h`` heads once and also returns the stats at the round each head of
    ``marks`` starts: the two steps are then read off one run."""
    p = period(slots, ctas_per_head, group)
    h0 = _warm_up(heads, slots, ctas_per_head, p, footprint_bytes, capacity_bytes)
    if h0 is None:                                                    # too few heads to extend
        return (*play(heads), None)
    if play_marked is not None:
        return _marked(play, play_marked, heads, h0, p)
    while True:
        h0 += (heads - h0) % p                                        # h0 ≡ heads (mod P)
        if 3 * (h0 + p) >= heads:                                     # playing every head is cheaper
            return (*play(heads), None)
        t0, t1, t2 = play(h0), play(h0 + p), play(h0 + 2 * p)
        step = _difference(t1, t0)
        if step == _difference(t2, t1):
            return (*_extend(t0, step, (heads - h0) // p), None)
        h0 *= 2


def _warm_up(heads: int, slots: int, ctas_per_head: int, p: int, footprint_bytes, capacity_bytes: int):
    """h₀, the heads played before the two steps of P are read (None: too few heads to extend)."""
    waves = -(-slots // max(1, ctas_per_head))                       # heads resident together
    if 3 * (2 * (waves + 1) + 1 + p) >= heads:
        return None
    turnover = -(-capacity_bytes // max(1, footprint_bytes()))        # heads that fill the cache
    return 2 * (waves + turnover) + 1


def heads_played(heads: int, *, slots: int, ctas_per_head: int, group: int, footprint_bytes,
                 capacity_bytes: int) -> int:
    """How many heads :func:`all_heads` plays with a ``play_marked`` (one run), when the first
    two steps agree: the cost of the model, asked before it plays."""
    p = period(slots, ctas_per_head, group)
    a = _warm_up(heads, slots, ctas_per_head, p, footprint_bytes, capacity_bytes)
    return heads if a is None else min(_run_length(a, p, heads), heads)


def _run_length(a: int, p: int, heads: int) -> int:
    """The heads of the one run :func:`_marked` plays: past a + 2P, ≡ ``heads`` (mod P)."""
    h = a + 2 * p + 1
    return h + (heads - h) % p


def _marked(play, play_marked, heads: int, a: int, p: int) -> tuple[CacheStats, dict, float | None]:
    """One run of h ≡ ``heads`` (mod P) heads, h > a + 2P, with the stats read where heads
    a, a + P and a + 2P start: the stream from one mark to the next is one period of the
    launch pattern, so when the two steps agree the heads after h add that step every P
    heads, and the run's end (its last heads, the dirty bytes left) stands for the end of
    the full launch. Where thread blocks have unequal lengths (causal masks) the rounds
    at which heads start need not repeat exactly, and a mark cuts a varying number of
    requests into the next step; where the player also counts per query head
    (``per_head``: CacheStats field -> bytes per head), the steps are then taken by head
    instead — heads a … a + P − 1 and a + P … a + 2P − 1, every request each makes and
    every byte it wrote — and when those agree within :data:`NEAR` the second extends and
    the larger difference of the two ways (by rounds, by heads) is returned: the launch
    pattern repeats only that nearly. ``a`` doubles while the steps differ more."""
    while True:
        h = _run_length(a, p, heads)
        if h >= heads:
            return (*play(heads), None)
        end, (m0, m1, m2), per_head = play_marked(h, (a, a + p, a + 2 * p))
        step = _difference(m2, m1)
        if _difference(m1, m0) == step:
            return (*_extend(end, step, (heads - h) // p), None)
        if per_head is not None:
            second = _heads(per_head, a + p, p)
            by_head = _apart(_heads(per_head, a, p), second)
            if by_head <= NEAR:                     # reported: the larger of the two ways' differences
                return (*_extend(end, second, (heads - h) // p), max(by_head, _apart(_difference(m1, m0), step)))
        a *= 2


def _heads(per_head: dict, first: int, p: int) -> tuple:
    """The counters of query heads first … first + P − 1 (every request they make, every
    write-back of what they wrote; what is still dirty at the run's end would be written
    back in a longer launch), as a step: (counters, {})."""
    got = {name: int(per_head[name][first:first + p].sum()) for name in _FIELDS}
    got["dram_write_bytes"] += got["dirty_bytes_left"]
    got["dirty_bytes_left"] = 0
    return tuple(got[name] for name in _FIELDS), {}


def _apart(x: tuple, y: tuple) -> float:
    """The largest difference of two steps' counters, over the DRAM bytes of a step (the
    nearest cache's reads and write-backs, their mean)."""
    names = _FIELDS.index("dram_read_bytes"), _FIELDS.index("dram_write_bytes")
    scale = sum(x[0][k] + y[0][k] for k in names) / 2
    return max(abs(u - v) for u, v in zip(x[0], y[0])) / max(scale, 1)


_FIELDS = [f.name for f in dataclasses.fields(CacheStats)]


def _difference(b: tuple, a: tuple) -> tuple:
    """Every counter of ``b`` minus ``a``: (nearest cache, {level: ...})."""
    def minus(x, y):
        return tuple(getattr(x, f) - getattr(y, f) for f in _FIELDS)
    return minus(b[0], a[0]), {name: minus(b[1][name], a[1][name]) for name in b[1]}


def _extend(base: tuple, step: tuple, times: int) -> tuple[CacheStats, dict]:
    """``base`` plus ``times`` × ``step``, counter by counter."""
    def plus(stats, delta):
        return CacheStats(*(getattr(stats, f) + times * d for f, d in zip(_FIELDS, delta)))
    return plus(base[0], step[0]), {name: plus(base[1][name], step[1][name]) for name in base[1]}


def copies(full, times: int, rest, capacity_bytes: int) -> CacheStats:
    """The stats of ``times`` copies of a stream, each with keys of its own, followed by
    ``rest`` (:class:`~.stack.Played` each, from a cold cache): exact for an LRU. A request
    hits when the distinct bytes since its key's last request fit, and those all lie in its
    copy, so every copy counts what it counts alone, except for the dirty keys it leaves
    cached (``tail_*``): the copies after it bring their distinct bytes, which evict a
    tail key once its need plus those bytes pass the capacity."""
    out = CacheStats(**{f: times * getattr(full.stats, f) + getattr(rest.stats, f) for f in _FIELDS})
    out.dirty_bytes_left = rest.stats.dirty_bytes_left
    if full.parts is None:
        _tails(out, full, times, rest, capacity_bytes)
    else:                                  # two partitions: each an LRU of half the capacity
        for mine, after in zip(full.parts, rest.parts):
            _tails(out, mine, times, after, capacity_bytes // 2)
    return out


def _tails(out: CacheStats, full, times: int, rest, capacity_bytes: int) -> None:
    """The dirty tails of :func:`copies`, written back or left, added to ``out`` (each tail
    key tested against its own capacity where the cache is hashed sets: :mod:`.sets`)."""
    tails = int(full.tail_size.sum())
    room = capacity_bytes if full.tail_room is None else full.tail_room
    for c in range(times - 1, -1, -1):                       # the last copies first
        later = (times - 1 - c) * full.distinct_bytes + rest.distinct_bytes
        if later >= np.max(room, initial=0):                 # this copy's tail and every earlier one's
            out.dram_write_bytes += (c + 1) * tails
            break
        evicted = full.tail_need + later > room
        out.dram_write_bytes += int(full.tail_size[evicted].sum())
        out.dirty_bytes_left += int(full.tail_size[~evicted].sum())
