"""The L2 model at the cost of its distinct work: thread blocks in lockstep share one stream.

Same assumptions as :mod:`.playback` (docs/cache.md): ``slots`` CTAs resident, issued in
launch order (head-major), each issuing one chunk request per round in slot order, a
finished CTA replaced in its slot by the next. :func:`.playback.replay` plays that
round robin CTA by CTA. Here:

1. **Schedule** (:func:`schedule`): each CTA's slot and first round follow from the
   CTAs' lengths alone (a CTA ending in round r frees its slot for round r + 1; slots
   freed together are refilled in slot order): closed form when every CTA has the same
   length, a heap otherwise.
2. **Cohorts**: CTAs of one head that start in the same round and make the same accesses
   apart from their own rows (FA2's query blocks of a head walking K and V) run in
   lockstep: in every round they request the same chunk, one after the other. A cohort's
   shared requests are played once per round, at its first slot (with two L2 partitions,
   once per side: a cohort is split by the side its members read through), and each
   member's own ones (its Q, O, L) at its slot. Requests of other cohorts are untouched, so the
   stream the cache sees is the round robin's, except that a chunk requested by several
   CTAs of a cohort in one round is requested once (the later requests would be hits
   that only refresh its place in the LRU order within that round).
3. **Play** (:func:`play`): that stream, sorted by (round, slot), through the LRU
   (:class:`.lru.LRUCache`) and the caches behind it.

The stream's length is about (cohorts × their shared accesses) + (CTAs × their own), not
(CTAs × accesses): for FA2's forward pass, the number of waves times the heads in a wave
times one CTA's accesses. tests/invariants/test_l2_stream.py compares it with the round
robin replay.
"""

from __future__ import annotations

import functools
import heapq
from dataclasses import dataclass

import numpy as np

from .lru import LRUCache
from .programs import FIELDS, KV_HEAD, PER_KV_HEAD, HeadPrograms

def schedule(lengths: np.ndarray, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """(first round, slot) of each CTA, in launch order, given its length in rounds."""
    n = len(lengths)
    if n == 0 or np.all(lengths == lengths[0]):
        g = np.arange(n)
        return (g // slots) * (int(lengths[0]) if n else 0), g % slots
    start, slot = np.empty(n, np.int64), np.empty(n, np.int64)
    free = [(0, s) for s in range(min(slots, n))]
    for g, length in enumerate(lengths.tolist()):
        t, s = heapq.heappop(free)
        start[g], slot[g] = t, s
        heapq.heappush(free, (t + length, s))
    return start, slot


@dataclass
class Stream:
    """The requests the cache sees, in order, and where given heads' first CTAs start."""

    key_parts: np.ndarray   # (head, hi, lo) per request: a request's chunk, as 3 columns
    size: np.ndarray
    write: np.ndarray
    #: per request: how many later members of its cohort make it in the same round (hits,
    #: not played; 0 for a CTA's own requests)
    repeats: np.ndarray
    #: per head asked for (``marks``): the index of the first request at or after the round
    #: its first CTA starts
    cuts: list
    #: per request: the query head whose thread block makes it
    issuer: np.ndarray | None = None
    #: per request: the L2 partition its thread block reads through (None: one partition)
    side: np.ndarray | None = None
    #: where written chunks were split into the lines they share (:func:`.lines.apply`)
    lines: object = None

    @functools.cached_property
    def keys(self) -> list:
        """(head, hi, lo) per request, as the LRU of :mod:`.lru` takes them."""
        return list(map(tuple, self.key_parts.tolist()))

    @functools.cached_property
    def sizes(self) -> list:
        return self.size.tolist()

    @functools.cached_property
    def writes(self) -> list:
        return self.write.tolist()

    def key_ids(self) -> np.ndarray:
        """Per request, an integer naming its chunk (equal for equal chunks)."""
        if not len(self.size):
            return np.zeros(0, np.int64)
        head, hi, lo = self.key_parts.T
        return mixed_radix([c - c.min() for c in (head, hi >> 26, hi & ((1 << 26) - 1), lo)])  # hi: (tensor, split) << 26 | column


def _scheduled(prog: HeadPrograms, heads: int, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`schedule` of ``heads`` heads of ``prog``, made once."""
    key = (heads, slots)
    if key not in prog.schedules:
        prog.schedules[key] = schedule(np.tile(prog.lengths, heads), slots)
    return prog.schedules[key]


def stream(prog: HeadPrograms, heads: int, slots: int, kv_of_q, leads_group, marks=(), keep=None,
           sides=None) -> Stream:
    """The requests of ``heads`` heads as the cache sees them (see the module's docstring);
    with ``keep(head keys, hi, lo) -> mask``, only the requests it keeps, chosen cohort by
    cohort before any is spread over rounds (the sampled model of :mod:`.sampled`); with
    ``sides(slots) -> partitions``, the partition of each request (a cohort's shared requests
    once for each partition its members read through)."""
    n = len(prog.cta_class)
    start, slot = _scheduled(prog, heads, slots)
    side = np.zeros(len(slot), np.int64) if sides is None else sides(slot)
    cls, row, head = np.tile(prog.cta_class, heads), np.tile(prog.cta_row, heads), np.repeat(np.arange(heads), n)
    key = _cohort_keys(cls, head, start, side)
    order = np.argsort(key, kind="stable")        # each cohort's members together, in launch order
    bounds = np.flatnonzero(np.concatenate([[True], key[order][1:] != key[order][:-1], [True]])) if len(key) else [0]
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        members = order[lo:hi]
        g = members[0]
        parts += [(*cols, np.full(len(cols[0]), side[g])) for cols in
                  _cohort(prog.classes[cls[g]], int(head[g]), int(start[g]), slot[members], row[members], kv_of_q,
                          leads_group, keep)]
    rounds, slot_of, head_key, hi, lo, size, write, rep, issuer, part = (
        np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, np.int64) for i in range(10))
    order = np.lexsort((slot_of, rounds))
    order = order[head_key[order] >= 0]
    cuts = np.searchsorted(rounds[order], [int(start[m * n]) for m in marks]).tolist()
    return Stream(np.stack([head_key[order], hi[order], lo[order]], axis=1), size[order], write[order],
                  rep[order], cuts, issuer[order], None if sides is None else part[order])


def _cohort(cls, h: int, t0: int, slots_of: np.ndarray, rows: np.ndarray, kv_of_q, leads_group, keep) -> list:
    """The requests of one cohort (class ``cls``, head ``h``, first round ``t0``; its
    members' slots and rows, in launch order), as columns (round, slot, head key, hi, lo,
    size, write, repeats, issuer): its shared ones once, at its first slot, and each
    member's own ones."""
    heads_of = _head_keys(cls.shared["kind"], h, kv_of_q, leads_group)
    pick = slice(None) if keep is None else keep(heads_of, cls.shared["hi"], cls.shared["lo"])
    heads_of = heads_of[pick]
    out = [(t0 + cls.shared_steps[pick], np.full(len(heads_of), slots_of[0]), heads_of,
            *(cls.shared[f][pick] for f in FIELDS[:4]), np.full(len(heads_of), len(rows) - 1),
            np.full(len(heads_of), h))]
    if len(cls.private_steps):
        own_heads = _head_keys(cls.private["kind"][0], h, kv_of_q, leads_group)
        steps = len(cls.private_steps)
        cols = [np.tile(t0 + cls.private_steps, len(rows)), np.repeat(slots_of, steps), np.tile(own_heads, len(rows)),
                *(cls.private[f][rows].ravel() for f in FIELDS[:4])]
        if keep is not None:
            mask = keep(cols[2], cols[3], cols[4])
            cols = [c[mask] for c in cols]
        out.append((*cols, np.zeros(len(cols[0]), np.int64), np.full(len(cols[0]), h)))
    return out


def stream_size(prog: HeadPrograms, heads: int, slots: int, sides=None) -> int:
    """How many requests :func:`stream` makes for ``heads`` heads (at most: group reductions
    another query head makes are counted too), without making them: the cost of playing it."""
    n = len(prog.cta_class)
    if n == 0 or heads == 0:
        return 0
    cls, cohorts = _cohorts(prog, heads, slots, sides)
    shared = np.array([len(k.shared_steps) for k in prog.classes], np.int64)
    own = np.array([len(k.private_steps) for k in prog.classes], np.int64)
    return int(shared[cohorts[:, 0]].sum() + own[cls].sum())


def cohort_count(prog: HeadPrograms, heads: int, slots: int, sides=None) -> int:
    """How many cohorts :func:`stream` builds for ``heads`` heads, one at a time in Python
    (about 120-140 µs each on the development machine, sampled or not: a causal run's every
    thread block is one)."""
    return 0 if len(prog.cta_class) == 0 or heads == 0 else len(_cohorts(prog, heads, slots, sides)[1])


def _cohorts(prog: HeadPrograms, heads: int, slots: int, sides=None) -> tuple[np.ndarray, np.ndarray]:
    """(each thread block's class over ``heads`` heads, the distinct (class, head, first round,
    partition))."""
    n = len(prog.cta_class)
    start, slot = _scheduled(prog, heads, slots)
    cls = np.tile(prog.cta_class, heads)
    side = np.zeros(len(slot), np.int64) if sides is None else sides(slot)
    first = np.unique(_cohort_keys(cls, np.repeat(np.arange(heads), n), start, side), return_index=True)[1]
    return cls, np.stack([cls[first], first // n, start[first], side[first]], axis=1)


def _cohort_keys(cls: np.ndarray, head: np.ndarray, start: np.ndarray, side: np.ndarray) -> np.ndarray:
    """One integer per thread block naming its cohort (class, head, first round, partition)."""
    return mixed_radix([np.asarray(c, np.int64) for c in (cls, head, start, side)])


def mixed_radix(cols: list) -> np.ndarray:
    """One integer per row of the non-negative columns ``cols``, ordered as the rows are
    (each column's values named densely where the product of their ranges would pass 2^62)."""
    if np.prod([float(c.max()) + 1 for c in cols if len(c)]) >= 2.0 ** 62:
        cols = [np.unique(c, return_inverse=True)[1].reshape(-1) for c in cols]
    key = np.zeros(len(cols[0]), np.int64)
    for c in cols:
        key = key * (int(c.max()) + 1 if len(c) else 1) + c
    return key


def _head_keys(kind: np.ndarray, head: int, kv_of_q, leads_group) -> np.ndarray:
    """The head each access's key names (−1: a group reduction made by another query head
    of the group)."""
    kv = kv_of_q(head)
    keys = np.where(kind == KV_HEAD, kv, head)
    if (kind == PER_KV_HEAD).any():
        keys = np.where(kind == PER_KV_HEAD, kv if leads_group(head) else -1, keys)
    return keys


def play(cache: LRUCache, s: Stream, start: int = 0, stop: int | None = None) -> None:
    """Requests ``start``..``stop`` of ``s`` through ``cache``; the repeats among them count
    as hits that do not change what the cache holds."""
    stop = len(s.size) if stop is None else stop
    add_repeats(cache.stats, s, start, stop)
    cache.play(s.keys[start:stop], s.sizes[start:stop], s.writes[start:stop])


def add_repeats(stats, s: Stream, start: int = 0, stop: int | None = None) -> None:
    """Count the repeats of requests ``start``..``stop`` of ``s`` into ``stats``: hits (or
    writes) that do not change what the cache holds."""
    rep = s.repeats[start:stop]
    if rep.any():
        extra, writes = rep * s.size[start:stop], s.write[start:stop] > 0
        stats.read_bytes += int(extra[~writes].sum())
        stats.read_hit_bytes += int(extra[~writes].sum())
        stats.write_bytes += int(extra[writes].sum())


__all__ = ["Stream", "mixed_radix", "schedule", "stream", "stream_size", "play", "add_repeats"]
