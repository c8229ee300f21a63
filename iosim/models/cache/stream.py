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

from .lru import CacheStats, LRUCache
from .programs import KV_HEAD, PER_KV_HEAD, HeadPrograms

#: CTAs compared with a candidate class before a CTA gets a class of its own
_CLASS_TRIES = 8


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


def classes(prog: HeadPrograms) -> np.ndarray:
    """A class per CTA: CTAs of one class make the same shared accesses at the same steps
    and their own ones at the same steps (so a cohort may play one's shared accesses)."""
    out = np.empty(len(prog.lengths), np.int64)
    reps: dict[int, list] = {}
    shared = np.where(prog.private, -1, prog.hi), np.where(prog.private, -1, prog.lo)
    fields = (shared[0], shared[1], prog.size, prog.write, prog.kind, prog.private)
    for c, length in enumerate(prog.lengths.tolist()):
        a, b = prog.starts[c], prog.starts[c + 1]
        found = None
        for rep in reps.get(length, [])[:_CLASS_TRIES]:
            ra = prog.starts[rep]
            if all(np.array_equal(f[a:b], f[ra:ra + length]) for f in fields):
                found = out[rep]
                break
        if found is None:
            found = c
            reps.setdefault(length, []).append(c)
        out[c] = found
    return out


def stream(prog: HeadPrograms, cls: np.ndarray, heads: int, slots: int, kv_of_q, leads_group) -> tuple:
    """The requests of ``heads`` heads as the cache sees them: (keys, sizes, writes), in
    order, and the bytes (read, written) of the requests a cohort's later members make
    in the round its first made them (hits, not played)."""
    n = len(prog.lengths)
    lengths = np.tile(prog.lengths, heads)
    start, slot = schedule(lengths, slots)
    cohorts: dict[tuple, list] = {}
    for g in range(len(lengths)):
        h, c = divmod(g, n)
        cohorts.setdefault((int(cls[c]), h, int(start[g])), []).append(g)
    parts, repeats = [], np.zeros(2, np.int64)
    for (c_rep, h, t0), members in cohorts.items():
        a, b = prog.starts[c_rep], prog.starts[c_rep + 1]
        steps = np.flatnonzero(~prog.private[a:b])
        parts.append(_events(prog, a + steps, t0 + steps, int(slot[members[0]]), h, kv_of_q, leads_group))
        if len(members) > 1:
            made = parts[-1][2] >= 0
            by_write = np.bincount(prog.write[a + steps][made], prog.size[a + steps][made], minlength=2)
            repeats += (len(members) - 1) * by_write.astype(np.int64)
        for g in members:
            c = g % n
            a = prog.starts[c]
            steps = np.flatnonzero(prog.private[a:prog.starts[c + 1]])
            parts.append(_events(prog, a + steps, t0 + steps, int(slot[g]), h, kv_of_q, leads_group))
    rounds, slot_of, head_key, idx = (np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, np.int64)
                                      for i in range(4))
    order = np.lexsort((slot_of, rounds))
    head_key, idx = head_key[order], idx[order]
    keep = head_key >= 0
    head_key, idx = head_key[keep], idx[keep]
    keys = zip(head_key.tolist(), prog.hi[idx].tolist(), prog.lo[idx].tolist())
    return keys, prog.size[idx].tolist(), prog.write[idx].tolist(), (int(repeats[0]), int(repeats[1]))


def _events(prog: HeadPrograms, idx: np.ndarray, rounds: np.ndarray, slot: int, head: int, kv_of_q,
            leads_group) -> tuple:
    """(rounds, slots, head keys, event indices) of events ``idx`` of head ``head``; the head
    key is −1 for a group reduction made by another query head of the group."""
    kind = prog.kind[idx]
    kv = kv_of_q(head)
    head_key = np.where(kind == KV_HEAD, kv, head)
    if (kind == PER_KV_HEAD).any():
        head_key = np.where(kind == PER_KV_HEAD, kv if leads_group(head) else -1, head_key)
    return rounds, np.full(len(idx), slot), head_key, idx


def play(cache: LRUCache, keys, sizes: list, writes: list, repeats: tuple = (0, 0)) -> None:
    """Every request through ``cache``, in order; ``repeats``: bytes (read, written) of
    requests that hit without changing what the cache holds."""
    cache.stats.read_bytes += repeats[0]
    cache.stats.read_hit_bytes += repeats[0]
    cache.stats.write_bytes += repeats[1]
    cache.play(keys, sizes, writes)


__all__ = ["schedule", "classes", "stream", "play", "CacheStats"]
