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
   shared requests are played once per round, at its first slot, and each member's own
   ones (its Q, O, L) at its slot. Requests of other cohorts are untouched, so the
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

import heapq

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


def stream(prog: HeadPrograms, heads: int, slots: int, kv_of_q, leads_group) -> tuple:
    """The requests of ``heads`` heads as the cache sees them: (keys, sizes, writes), in
    order, and the bytes (read, written) of the requests a cohort's later members make
    in the round its first made them (hits, not played)."""
    n = len(prog.cta_class)
    start, slot = schedule(np.tile(prog.lengths, heads), slots)
    cohorts: dict[tuple, list] = {}
    for g, (t0, s) in enumerate(zip(start.tolist(), slot.tolist())):
        h, c = divmod(g, n)
        cohorts.setdefault((int(prog.cta_class[c]), h, t0), []).append((s, int(prog.cta_row[c])))
    parts, repeats = [], np.zeros(2, np.int64)
    for (k, h, t0), members in cohorts.items():
        cls = prog.classes[k]
        slots_of, rows = (np.array(x, np.int64) for x in zip(*members))
        heads_of = _head_keys(cls.shared["kind"], h, kv_of_q, leads_group)
        parts.append((t0 + cls.shared_steps, np.full(len(heads_of), slots_of[0]), heads_of,
                      *(cls.shared[f] for f in FIELDS[:4])))
        if len(members) > 1:
            made = heads_of >= 0
            by_write = np.bincount(cls.shared["write"][made], cls.shared["size"][made], minlength=2)
            repeats += (len(members) - 1) * by_write.astype(np.int64)
        if len(cls.private_steps):
            own_heads = _head_keys(cls.private["kind"][0], h, kv_of_q, leads_group)
            parts.append((np.tile(t0 + cls.private_steps, len(rows)), np.repeat(slots_of, len(cls.private_steps)),
                          np.tile(own_heads, len(rows)), *(cls.private[f][rows].ravel() for f in FIELDS[:4])))
    rounds, slot_of, head_key, hi, lo, size, write = (
        np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, np.int64) for i in range(7))
    order = np.lexsort((slot_of, rounds))
    order = order[head_key[order] >= 0]
    keys = zip(head_key[order].tolist(), hi[order].tolist(), lo[order].tolist())
    return keys, size[order].tolist(), write[order].tolist(), (int(repeats[0]), int(repeats[1]))


def _head_keys(kind: np.ndarray, head: int, kv_of_q, leads_group) -> np.ndarray:
    """The head each access's key names (−1: a group reduction made by another query head
    of the group)."""
    kv = kv_of_q(head)
    keys = np.where(kind == KV_HEAD, kv, head)
    if (kind == PER_KV_HEAD).any():
        keys = np.where(kind == PER_KV_HEAD, kv if leads_group(head) else -1, keys)
    return keys


def play(cache: LRUCache, keys, sizes: list, writes: list, repeats: tuple = (0, 0)) -> None:
    """Every request through ``cache``, in order; ``repeats``: bytes (read, written) of
    requests that hit without changing what the cache holds."""
    cache.stats.read_bytes += repeats[0]
    cache.stats.read_hit_bytes += repeats[0]
    cache.stats.write_bytes += repeats[1]
    cache.play(keys, sizes, writes)


__all__ = ["schedule", "stream", "play"]
