"""An L2 of two partitions, each caching the lines its own half of the SMs reads.

What the H200's counters show (docs/cache.md, "Two partitions"): an SM reads through the L2
partition of its half of the chip; a line that partition does not hold is looked up over
the fabric in the line's *home* partition (a hash of its address picks one of the two),
and read from DRAM when the home does not hold it either. Either way the line is then held
near the SMs that read it, so a line read from both halves is held twice.

The model, at chunk granularity (:mod:`.lru`'s conventions: write-back, write-allocate, a
reduction fetches its old value): every request carries its side (0 or 1, the half of the
chip its thread block runs on) and every chunk a home (:func:`home`). A request *touches*
its side's partition (an LRU of half the capacity); on a miss, when the chunk's home is
the other partition, it touches the home too (a hit there is served over the fabric; a
miss is read from DRAM and filled into both). A write is done at the chunk's home (the
partition in front of its DRAM channel), whichever half wrote it, and held near its writer
too: clean under the shipped rule ``"home"`` (the home's dirty copy is written to DRAM when
it is evicted), dirty under the ablations ``"first"`` and ``"each"`` (:mod:`.writebacks`,
which counts the write-backs of both partitions' dirty stays).

:class:`PartitionedLRU` plays a stream request by request (the reference); :func:`play`
plays it at once from :mod:`.stack`'s stack distances: each partition is an LRU fed by its
own side's requests and by the other side's misses homed on it, so the two are played in
turn, each with the other's latest misses, until a partition's misses repeat (then the
other's input is what it was played with). A fixed point
is the stream's only consistent outcome (each miss follows from the requests before it),
so where the turns settle :func:`play` equals the reference request for request
(tests/invariants/test_l2_partitions.py).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import sets, stack, watch, writebacks
from .lru import CacheStats, LRUCache

#: the turns (each a play of both partitions) :func:`play` takes before it plays the
#: reference instead; they settle in 1-7 turns on the FlashAttention streams tried (4-5 on a
#: causal forward of 49,152 to 65,536 tokens, 7 on a long causal GQA one: docs/performance.md)
MAX_TURNS = 12
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def home(keys: np.ndarray) -> np.ndarray:
    """The home partition (0 or 1) of each chunk id: the top bit of a multiplicative hash, so
    that the chunks of any tensor split about evenly between the two."""
    return ((np.asarray(keys, np.int64).astype(np.uint64) * _GOLDEN) >> np.uint64(63)).astype(np.int64)


def places(key_parts: np.ndarray) -> np.ndarray:
    """Each chunk (head, hi, lo)'s place in its head's tensor, (hi, lo), as one integer."""
    hi, lo = (np.asarray(key_parts)[:, i].astype(np.int64) for i in (1, 2))
    return hi * 1_000_003 + lo


def homes(key_parts: np.ndarray) -> np.ndarray:
    """:func:`home` of each chunk (head, hi, lo) from its place in its head's tensor (hi, lo)
    alone: every head's chunks are homed alike, so copies of the launch pattern (heads with
    keys of their own) are played alike (:func:`.periodic.copies`)."""
    return home(places(key_parts))


def done_in(sides: np.ndarray, writes: np.ndarray, homes_: np.ndarray) -> np.ndarray:
    """The partition each request is done in: its side's for a read, the chunk's home for a
    write (:meth:`PartitionedLRU.request`'s rule, for arrays)."""
    return np.where(np.asarray(writes) > 0, homes_, sides)


def sides(slots: np.ndarray, sm_count: int) -> np.ndarray:
    """The partition each resident slot reads through: slot s runs on SM s mod ``sm_count``
    (a launch puts a block on every SM before a second on any), and SMs 0 … S/2 − 1 read
    through partition 0, the others through 1. (The H200's measured halves are runs of 2-8
    SMs, not the index halves, and blocks land in runs of 8-26 on one side: docs/cache.md.)"""
    return ((np.asarray(slots, np.int64) % sm_count) >= sm_count // 2).astype(np.int64)


class _Part(LRUCache):
    """A partition: an LRU that reports each dirty stay it evicts (its token: its last write;
    the group of its chunk's last request)."""

    def __init__(self, capacity_bytes: int, owner: "PartitionedLRU"):
        super().__init__(capacity_bytes)
        self.owner, self.group_of, self.token_of = owner, {}, {}

    def _pass_write(self, key, size: int) -> None:
        self.owner.evicted(self, self.token_of[key], size, self.group_of.get(key, 0))

    def touch(self, key, size: int, write: int, salt: int, group: int, token: int = 0) -> bool:
        """A request done here: whether it hit (a miss fills the chunk, dirty if written)."""
        self.group_of[key] = group
        if write:
            self.token_of[key] = token
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
            entry[1] = entry[1] or bool(write)
            return True
        self._insert(key, size, dirty=bool(write))
        return False

    def dirty_now(self) -> list:
        """(size, group, still held, token) of each dirty chunk."""
        return [(size, self.group_of.get(key, 0), True, self.token_of[key]) for key, size in self.dirty_keys().items()]


class _SetsPart(sets.Part):
    """A partition of hashed sets (:class:`.sets.Part`) that reports its dirty stays evicted."""

    def __init__(self, capacity_bytes: int, ways: int, requests: int, owner: "PartitionedLRU"):
        super().__init__(capacity_bytes, ways, requests)
        self.owner, self.token_of = owner, {}

    def touch(self, key, size: int, write: int, salt: int, group: int, token: int = 0) -> bool:
        old = self.last.get(key)
        hit, back = self.request(key, size, salt, bool(write), group)
        if back:
            self.owner.evicted(self, self.token_of[key], back, old[5])
        if write:
            self.token_of[key] = token
        return hit

    def dirty_now(self) -> list:
        """(size, group, still held, token) of each chunk whose stay was written."""
        return [(e[1], e[5], self._fits(*e[:4]), self.token_of[key]) for key, e in self.last.items() if e[4]]


class PartitionedLRU:
    """Two LRU partitions of ``capacity_bytes / 2`` each (the reference: request by request),
    every counter also per group of the request (a write-back and a dirty byte left under the
    group of the last request of its chunk's stay: :mod:`.writebacks`); with ``ways``, two
    partitions of hashed sets (:class:`.sets.Part`, for at most ``requests`` requests).
    ``rule``: how the dirty stays are written back (:data:`.writebacks.RULES`); the DRAM
    writes are counted by :meth:`finish`."""

    def __init__(self, capacity_bytes: int, ways: int | None = None, requests: int = 0, rule: str = "home"):
        half = capacity_bytes // 2
        self.parts = [_Part(half, self) if ways is None else _SetsPart(half, ways, requests, self) for _ in (0, 1)]
        self.stats = CacheStats()
        self.by_group: dict = {}
        self.rule, self.t, self.homes = rule, 0, []
        self.stays: list = [[], []]        # per partition: (token, pos, size, group) of each dirty stay

    def evicted(self, part, token: int, size: int, group: int, pos: int | None = None) -> None:
        """A dirty stay of ``part`` written back before request ``pos`` (the current one by default)."""
        self.stays[self.parts.index(part)].append((token, self.t if pos is None else pos, size, group))

    def play(self, keys, sizes, writes, sides, homes, groups=None, salts=None) -> None:
        groups = [0] * len(keys) if groups is None else groups
        salts = [0] * len(keys) if salts is None else salts
        for key, size, write, side, h, g, salt in zip(keys, sizes, writes, sides, homes, groups, salts):
            self.request(key, int(size), int(write), int(side), int(h), int(g), int(salt))

    def request(self, key, size: int, write: int, side: int, h: int, group: int = 0, salt: int = 0) -> None:
        """A request from ``side`` for a chunk homed on ``h`` (a write is done at the home,
        and held near its writer: dirty, clean under the rule ``"home"``)."""
        token = self.t
        if write and side != h:
            self.parts[side].touch(key, size, 0 if self.rule == "home" else 1, salt, group, token)
        side = h if write else side
        s = self.stats
        field = "write_bytes" if write else "read_bytes"
        setattr(s, field, getattr(s, field) + size)
        self._add(field, group, size)
        if self.parts[side].touch(key, size, write, salt, group, token):
            self._hit(write, group, size)
        elif h != side and self.parts[h].touch(key, size, 0, salt, group):     # over the fabric
            self._hit(write, group, size)
        elif write != 1:
            s.dram_read_bytes += size
            self._add("dram_read_bytes", group, size)
        self.homes.append(h)
        self.t += 1

    def _hit(self, write: int, group: int, size: int) -> None:
        if not write:
            self.stats.read_hit_bytes += size
            self._add("read_hit_bytes", group, size)

    def _add(self, name: str, group: int, size: int) -> None:
        row = self.by_group.setdefault(name, {})
        row[group] = row.get(group, 0) + size

    def mark(self) -> None:
        """At a cut: the dirty stays no longer held are written back before it (hashed sets
        find a stay evicted only at its chunk's next request)."""
        for part in self.parts:
            for size, group, held, token in part.dirty_now():
                if not held:
                    self.evicted(part, token, size, group, self.t - 1)

    def finish(self, cuts=()) -> CacheStats:
        """The stats with the write-backs and the dirty bytes left (:func:`.writebacks.joined`
        of every dirty stay: those still held are left, unless another copy of their line was
        written back); ``self.cut_writes``: the bytes written back before each of ``cuts``."""
        self.mark()
        for p, part in enumerate(self.parts):
            self.stays[p] += [(token, self.t, size, group) for size, group, held, token in part.dirty_now() if held]
        stays = [{k: np.array([r[i] for r in rows], np.int64) for i, k in enumerate(stack.STAY_FIELDS)}
                 for rows in self.stays]
        width = 1 + max([g for rows in self.stays for *_, g in rows], default=-1)
        ends = [int(c) for c in cuts] + [self.t]
        written, left, by_group = writebacks.joined(stays, np.array(self.homes, np.int64), self.t, ends, width,
                                                    self.rule)
        self.cut_writes = written[:-1]
        self.stats.dram_write_bytes, self.stats.dirty_bytes_left = written[-1], left
        for name, row in by_group.items():
            for group in np.flatnonzero(row):
                self._add(name, int(group), int(row[group]))
        return self.stats


def play(keys: np.ndarray, sizes: np.ndarray, writes: np.ndarray, sides: np.ndarray, capacity: int,
         cuts=(), groups: np.ndarray | None = None, homes: np.ndarray | None = None, ways: int | None = None,
         salts: np.ndarray | None = None, rule: str = "home") -> stack.Played:
    """The stream played from cold partitions, as :class:`PartitionedLRU` plays it: a
    :class:`.stack.Played` (its ``tail_*`` left empty; ``hits``: on chip, near or over the
    fabric), from stack distances, or, where a partition cannot be played so (a chunk of two
    sizes) or the turns do not settle in :data:`MAX_TURNS`, from :func:`reference`. With
    ``ways``, each partition is hashed sets (:mod:`.sets`; ``salts``: each request's, the
    keys where None). ``rule``: how the dirty copies are written back
    (:data:`.writebacks.RULES`; the shipped ``"home"``, and the ablations ``"first"`` and
    ``"each"``: docs/validation/2026-12-04-write-backs.md)."""
    keys, sizes, writes, sides = (np.asarray(a, np.int64) for a in (keys, sizes, writes, sides))
    salts = None if ways is None else sets.Sets(ways, keys if salts is None else np.asarray(salts, np.int64))
    n, half = len(keys), capacity // 2
    homes = home(keys) if homes is None else np.asarray(homes, np.int64)
    issued, sides = sides, done_in(sides, writes, homes)
    copies = np.where((writes > 0) & (issued != homes), issued, -1)   # a write's copy near its writer
    copy_code = 3 if rule == "home" else 1
    # requests whose near miss looks up the far home: first the first request of each chunk
    # from each side (a miss wherever the chunk is homed); the turns add the others
    looked = np.zeros(n, bool)
    if n:
        looked[_firsts(keys * 2 + sides)] = True
        looked &= homes != sides
    turn, order = [None, None], np.argsort(keys, kind="stable")
    for i in range(2 * MAX_TURNS):
        p = i % 2
        watch.stage(f"partition {p + 1} of 2, turn {i // 2 + 1}")
        turn[p] = _partition(p, keys, sizes, writes, sides, homes, looked, half, cuts, groups, order, salts, copies,
                             copy_code, turn[p])
        if turn[p] is None:
            break
        mine = sides == p
        again = mine & ~turn[p][1] & (homes != sides)
        if turn[1 - p] is not None and np.array_equal(again, looked & mine):
            near_hit = np.where(sides == 0, turn[0][1], turn[1][1])
            return _played(turn, near_hit, looked, keys, sizes, writes, sides, homes, cuts, groups, order, rule)
        looked = (looked & ~mine) | again
    watch.stage("request by request")
    return reference(keys, sizes, writes, issued, capacity, cuts, groups, homes, ways, None if salts is None else
                     salts.salts, rule)


def played(key_parts: np.ndarray, ids: np.ndarray, sizes, writes, sides, capacity: int, cuts=(),
           groups=None, ways: int | None = None) -> stack.Played | None:
    """The stream played at once: :func:`.stack.play` through one LRU, or, with ``sides``,
    :func:`play` through two partitions (the chunks homed by :func:`homes` of ``key_parts``;
    with ``ways``, of hashed sets, salted by :func:`places`)."""
    if sides is None:
        watch.stage("one LRU")
        return stack.play(ids, sizes, writes, capacity, cuts, groups)
    return play(ids, sizes, writes, sides, capacity, cuts, groups, homes(key_parts), ways,
                None if ways is None else places(key_parts))


def reference(keys, sizes, writes, sides, capacity: int, cuts=(), groups=None, homes=None, ways=None,
              salts=None, rule: str = "home") -> stack.Played:
    """What :func:`play` returns, from :class:`PartitionedLRU` request by request."""
    keys, sizes, writes, sides = (np.asarray(a, np.int64) for a in (keys, sizes, writes, sides))
    cache, marks, done = PartitionedLRU(capacity, ways, len(keys), rule), [], 0
    homes = home(keys) if homes is None else np.asarray(homes, np.int64)
    g = np.zeros(len(keys), np.int64) if groups is None else np.asarray(groups, np.int64)
    salts = keys if salts is None else np.asarray(salts, np.int64)
    for cut in [int(c) for c in cuts] + [len(keys)]:
        cache.play(*(a[done:cut].tolist() for a in (keys, sizes, writes, sides, homes, g, salts)))
        cache.mark()
        marks.append(dataclasses.replace(cache.stats))
        done = cut
    stats = cache.finish(cuts)
    for mark, written in zip(marks, cache.cut_writes):
        mark.dram_write_bytes = written
    by_group = None
    if groups is not None:
        width = int(g.max()) + 1 if len(g) else 0
        by_group = {name: np.zeros(width, np.int64) for name in stack.FIELDS}
        for name, row in cache.by_group.items():
            for group, size in row.items():
                by_group[name][group] += size
    distinct = int(sizes[np.unique(keys, return_index=True)[1]].sum()) if len(keys) else 0
    empty = np.zeros(0, np.int64)
    return stack.Played(stats, marks[:-1], distinct, empty, empty, by_group)


def _partition(p: int, keys, sizes, writes, sides, homes, looked, half: int, cuts, groups, order, salts=None,
               copies=None, copy_code: int = 3, before=None):
    """Partition ``p`` played on its side's requests, the lookups homed on it and the copies
    of the writes its side made of chunks homed on the other (``copies``: per request, the
    partition that holds its copy, −1 none): (its Played, its dirty stays' tokens and
    positions indices of the whole stream; per request of the whole
    stream: hit in ``p`` (False where ``p`` did not see it or held a copy); the requests it
    saw). ``order``: the whole stream's requests sorted stably by key; ``salts``: the
    stream's :class:`.sets.Sets`, for hashed sets; ``copy_code``: a copy's write code in
    :func:`.stack.play` (3 clean, 1 dirty); ``before``: what this returned on the partition's
    turn before, whose hits :func:`_kept` carries over where they cannot have changed."""
    copy = np.zeros(len(keys), bool) if copies is None else copies == p
    mask = (sides == p) | (looked & (homes == p)) | copy
    seen = np.flatnonzero(mask)
    own = sides[seen] == p
    got = stack.play(keys[seen], sizes[seen], np.where(own, writes[seen], np.where(copy[seen], copy_code, 0)), half,
                     np.searchsorted(seen, list(cuts)), None if groups is None else np.asarray(groups)[seen],
                     hits=True, order=(np.cumsum(mask) - 1)[order[mask[order]]],
                     sets=None if salts is None else salts.subset(seen), stays=True,
                     settle=None if before is None else _kept(before, mask, seen, keys, sizes))
    if got is None:
        return None
    whole = np.append(seen, len(keys))         # a local index, or the local end (never), as the stream's
    got.stays = {**got.stays, "token": seen[got.stays["token"]], "pos": whole[got.stays["pos"]]}
    hit = np.zeros(len(keys), bool)
    hit[seen] = got.hits
    hit[copy] = False
    return got, hit, seen


def _kept(before, mask: np.ndarray, seen: np.ndarray, keys: np.ndarray, sizes: np.ndarray):
    """:func:`.stack.play`'s ``settle`` for a partition's stream (``mask``, ``seen``: the requests it
    sees) against its turn before (``before``: what :func:`_partition` returned then). Where no
    request of a request's key came or went, its window (from its key's previous request) is
    the one it had, but for the requests that came into it (D grew by at most their bytes)
    or went (D shrank by at most theirs), and its capacity is its key's draw, as before: a hit
    whose bound grown so still fits, or a miss whose bound shrunk so still does not, is settled."""
    got, _, was = before
    old, hit, need = np.zeros(len(mask), bool), np.zeros(len(mask), bool), np.zeros(len(mask), np.int64)
    old[was], hit[was], need[was] = True, got.hits, got.needs
    came, went = mask & ~old, old & ~mask
    grown, shrunk = (np.concatenate([[0], np.cumsum(np.where(a, sizes, 0))]) for a in (came, went))
    moved = np.isin(keys[seen], np.unique(keys[came | went]))
    h = hit[seen]

    def settle(prev: np.ndarray, room: np.ndarray):
        after = seen[np.maximum(prev, 0)] + 1          # the stream's index after the previous request
        bound = np.where(h, need[seen] + grown[seen] - grown[after], need[seen] - shrunk[seen] + shrunk[after])
        return (prev >= 0) & ~moved & (h == (bound <= room)), h, bound
    return settle


def _firsts(values: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """The index of each distinct value's first occurrence (``order``: the indices sorted
    stably by value, where the caller has them)."""
    order = np.argsort(values, kind="stable") if order is None else order
    v = values[order]
    return order[np.concatenate([[True], v[1:] != v[:-1]])] if len(v) else order


def far_hits(turn, homes: np.ndarray, looked: np.ndarray) -> np.ndarray:
    """Per request: looked up at its chunk's home over the fabric and held there (``turn``:
    each partition's play, as :func:`_partition` returns it)."""
    return np.where(homes == 0, turn[0][1], turn[1][1]) & looked


def _played(turn, near_hit, looked, keys, sizes, writes, sides, homes, cuts, groups, order,
            rule: str = "home") -> stack.Played:
    """The partitions' counters joined: on chip when near or over the fabric, DRAM read
    otherwise; write-backs and dirty bytes left from both partitions' dirty stays under
    ``rule`` (:func:`.writebacks.joined`). ``order``: the requests sorted stably by key."""
    far_hit = far_hits(turn, homes, looked)
    read, fill = writes == 0, writes == 2
    on_chip = near_hit | far_hit
    masks = {"read_bytes": read, "read_hit_bytes": read & on_chip, "write_bytes": ~read,
             "dram_read_bytes": ~on_chip & (read | fill)}
    running = {k: np.concatenate([[0], np.cumsum(np.where(m, sizes, 0))]) for k, m in masks.items()}
    ends = [int(c) for c in cuts] + [len(keys)]
    width = None if groups is None else (int(np.max(groups)) + 1 if len(groups) else 0)
    written, left, by_written = writebacks.joined([got.stays for got, _, _ in turn], homes, len(keys), ends, width,
                                                  rule)
    out = [CacheStats(**{k: int(v[c]) for k, v in running.items()}, dram_write_bytes=w) for c, w in zip(ends, written)]
    out[-1].dirty_bytes_left = left
    by_group = None
    if groups is not None:
        groups = np.asarray(groups, np.int64)
        by_group = {k: np.bincount(groups[m], sizes[m], minlength=width).astype(np.int64) for k, m in masks.items()}
        by_group.update(by_written)
    distinct = int(sizes[_firsts(keys, order)].sum())
    empty = np.zeros(0, np.int64)
    return stack.Played(out[-1], out[:-1], distinct, empty, empty, by_group, hits=on_chip,
                        parts=[got for got, _, _ in turn])


__all__ = ["PartitionedLRU", "done_in", "far_hits", "home", "homes", "places", "play", "played", "reference", "sides", "MAX_TURNS"]
