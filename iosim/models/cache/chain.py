"""A span of requests played through a chain of LRU caches from given states, counted per tensor.

The windows of :mod:`.windows` play a span of a launch's rounds after the cache's state at
its start. With no cache behind the L2 that is :mod:`.stack`'s vectorised LRU; with one
(MI300X's Infinity Cache, fed by the L2's misses and dirty evictions: :mod:`.lru`'s chain)
the span is played here, request by request, through the same chain: a read miss is read
from the level behind before the chunk is inserted; a write allocates without a fetch (a
reduction, ``write == 2``, fetches its old value on a miss); a dirty chunk evicted is
written to the level behind, or to DRAM past the last. Each counter is kept per tensor of
the chunk it moves (a write-back under the evicted chunk's tensor), so the estimate can
scale each tensor by its own bytes requested.

The states (:func:`states`) follow from each chunk's last request before the span, most
recent last, as :func:`.rounds.warm_up` gives them. The L2 holds the most recent chunks
that fit in it. A level behind holds the most recent chunks that fit in *it*, less those
the L2 holds dirty (written there and not yet written back: a plain write allocates in the
L2 only): an approximation, since a level behind is refreshed by the L2's misses only, not
by its hits. A chunk it holds that is not in the L2 is dirty there when its last request
wrote it (it was written back to it since).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .rounds import recency
from .stream import Stream

#: per level, per tensor: what the level in front (or the SMs) asked, what it served, and what
#: it passed on; ``dram_*`` at the L2 are what reached the level behind it
COUNTERS = ("read_bytes", "read_hit_bytes", "write_bytes", "dram_read_bytes", "dram_write_bytes")


def states(seen: dict, capacities: list[int]) -> list[OrderedDict]:
    """Per level (nearest first), its content: key -> [size, dirty, tensor], least recent
    first, from ``seen`` (each chunk's key, size, last place ``t`` and whether that request
    wrote it)."""
    order, room = recency(seen)
    keys = list(map(tuple, seen["key"][order].tolist()))
    size, written = seen["size"][order].tolist(), seen["written"][order].tolist()
    tensor = (seen["key"][order][:, 1] >> 35).tolist()
    in_l2 = room <= capacities[0]
    out = [OrderedDict((keys[i], [size[i], written[i], tensor[i]]) for i in np.flatnonzero(in_l2).tolist())]
    for capacity in capacities[1:]:
        held = (room <= capacity) & ~(in_l2 & seen["written"][order])
        out.append(OrderedDict((keys[i], [size[i], written[i] and not in_l2[i], tensor[i]])
                               for i in np.flatnonzero(held).tolist()))
    return out


def play(levels: list[OrderedDict], capacities: list[int], span: Stream, width: int) -> list[dict]:
    """Per level, {counter: bytes per tensor} of ``span`` played through the chain from
    ``levels`` (changed in place), and under ``"end_dirty"`` (the nearest level's) the dirty
    bytes per tensor left in the chain at its end, a chunk dirty in two levels once."""
    count = [{c: [0] * width for c in COUNTERS} for _ in levels]
    used = [sum(e[0] for e in level.values()) for level in levels]
    last = len(levels) - 1

    def insert(i: int, key, size: int, dirty: bool, t: int) -> None:
        level, cap = levels[i], capacities[i]
        while used[i] + size > cap and level:
            old, (old_size, old_dirty, old_t) = level.popitem(last=False)
            used[i] -= old_size
            if old_dirty:
                write_back(i, old, old_size, old_t)
        if size > cap:                               # larger than the level: streams through
            if dirty:
                write_back(i, key, size, t)
            return
        level[key] = [size, dirty, t]
        used[i] += size

    def write_back(i: int, key, size: int, t: int) -> None:
        count[i]["dram_write_bytes"][t] += size
        if i < last:
            access(i + 1, key, size, 1, t)

    def access(i: int, key, size: int, kind: int, t: int) -> None:
        c, entry = count[i], levels[i].get(key)
        c["write_bytes" if kind else "read_bytes"][t] += size
        if entry is not None:
            if kind:
                entry[1] = True
            else:
                c["read_hit_bytes"][t] += size
            levels[i].move_to_end(key)
            return
        if kind != 1:                                # a read miss, or a reduction's old value
            c["dram_read_bytes"][t] += size
            if i < last:
                access(i + 1, key, size, 0, t)
        insert(i, key, size, kind > 0, t)

    tensors = (span.key_parts[:, 1] >> 35).tolist()
    for key, size, kind, t in zip(span.keys, span.sizes, span.writes, tensors):
        access(0, key, size, kind, t)
    dirty: dict = {}
    for level in levels:
        dirty.update({k: (e[0], e[2]) for k, e in level.items() if e[1]})
    end = [0] * width
    for size, t in dirty.values():
        end[t] += size
    out = [{c: np.asarray(v, np.int64) for c, v in level.items()} for level in count]
    out[0]["end_dirty"] = np.asarray(end, np.int64)
    return out


__all__ = ["COUNTERS", "states", "play"]
