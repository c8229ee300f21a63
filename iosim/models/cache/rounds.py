"""A launch's rounds: where each thread block runs, the requests of any span of rounds, and
what the cache holds when a span starts (for :mod:`.windows`).

The round robin of :mod:`.stream` places every thread block (CTA) from the CTAs' lengths
alone (:func:`.stream.schedule`), which :mod:`.uniform` gives without expanding them; a
request at any step of any CTA is a vectorised lookup (:meth:`.uniform.Uniform.at`). CTAs
take their slots in launch order, so the schedule of the first heads is that of the whole
launch until the last of their CTAs: :func:`launch` schedules only the heads that fill the
resident slots :data:`WAVES` times over, and the heads after them repeat its middle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import partitions
from .programs import HEAD, PER_KV_HEAD, WRITE
from .sampled import MAX_CTAS, multiplicities
from .stream import Stream, schedule
from .uniform import Uniform

#: the heads scheduled: those whose thread blocks fill the resident slots WAVES times over (at
#: least two heads, at most :data:`.sampled.MAX_CTAS` thread blocks)
WAVES = 64
#: up to this many heads, the K/V heads and group leaders are listed head by head
LISTED_HEADS = 1 << 16


@dataclass(frozen=True)
class Launch:
    """One kernel's CTAs over the heads scheduled (:data:`WAVES`): launch order g = head × CTAs + CTA."""

    u: Uniform
    start: np.ndarray              # per CTA of every head: its first round
    slot: np.ndarray
    heads: int
    kv: np.ndarray                 # per head (in launch order): the K/V head it reads
    lead: np.ndarray               # per head: whether it makes its group's once-per-K/V-head accesses
    chunks: int                    # the distinct chunks they request
    #: per CTA of every head: the L2 partition it reads through (None: one partition)
    side: np.ndarray | None = None

    @property
    def rounds(self) -> int:
        return int((self.start + np.tile(self.u.lengths, self.heads)).max(initial=0))


def launch(u: Uniform, heads: int, slots: int, kv_of_q, leads_group, sides=None) -> Launch:
    """The schedule of the first heads' CTAs in launch order (:data:`WAVES`): the same as in
    the whole launch, whose CTAs take their slots in launch order, until the last of them;
    ``sides(slots)``: each slot's L2 partition, where there are two."""
    heads = min(heads, max(2, -(-WAVES * slots // u.ctas)), max(1, MAX_CTAS // u.ctas))
    start, slot = schedule(np.tile(u.lengths, heads), slots)
    kv, lead = [kv_of_q(h) for h in range(heads)], [leads_group(h) for h in range(heads)]
    chunks = int(multiplicities(heads, kv, lead)[1][_distinct(u)[2]].sum())
    return Launch(u, start, slot, heads, np.array(kv, np.int64), np.array(lead, bool), chunks,
                  None if sides is None else sides(slot))


def requests(L: Launch, r0: int, r1: int, keep=None, ordered: bool = True) -> tuple[Stream, np.ndarray]:
    """The stream of rounds r0 … r1 − 1 (the chunks ``keep(head keys, hi, lo)`` keeps, where
    given), in (round, slot) order, and each request's round; not ``ordered``: in no order,
    with each request's place in it (round × slots + slot) instead of its round."""
    lengths = np.tile(L.u.lengths, L.heads)
    active = np.flatnonzero((L.start < r1) & (L.start + lengths > r0))
    a = np.maximum(0, r0 - L.start[active])
    b = np.minimum(lengths[active], r1 - L.start[active])
    n = b - a
    g = np.repeat(active, n)
    step = np.repeat(a, n) + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    head, cta = np.divmod(g, L.u.ctas)
    f = L.u.at(cta, step)
    key = np.where(f["kind"] == HEAD, head, L.kv[head])
    key = np.where((f["kind"] == PER_KV_HEAD) & ~L.lead[head], -1, key)
    mask = key >= 0 if keep is None else (key >= 0) & keep(key, f["hi"], f["lo"])
    rounds, slots = L.start[g][mask] + step[mask], L.slot[g][mask]
    order = np.lexsort((slots, rounds)) if ordered else slice(None)
    parts = np.stack([key[mask], f["hi"][mask], f["lo"][mask]], axis=1)[order]
    side = None if L.side is None else L.side[g][mask][order]
    s = Stream(parts, f["size"][mask][order], f["write"][mask][order], np.zeros(len(parts), np.int64), [], side=side)
    return s, rounds[order] if ordered else rounds * (int(L.slot.max(initial=0)) + 1) + slots


def head_counts(heads: int, kv_of_q, leads_group, period: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`.sampled.multiplicities` over ``heads`` heads in launch order: listed up to
    :data:`LISTED_HEADS`; past them, from the first ``period`` heads, whose sharing of K/V
    heads repeats on K/V heads of their own every ``period`` heads (the launch orders of
    ``iosim.run.launches._head_order``), and the remainder."""
    def counted(n, first=0):
        return multiplicities(n, [kv_of_q(h) for h in range(first, first + n)],
                              [leads_group(h) for h in range(first, first + n)])
    if heads <= LISTED_HEADS:
        return counted(heads)
    times, rest = divmod(heads, period)
    (made, named), (made_rest, named_rest) = counted(period), counted(rest, times * period)
    return times * made + made_rest, times * named + named_rest


def exact(u: Uniform, made: np.ndarray, named: np.ndarray) -> dict:
    """What every head requests, exactly: per tensor its bytes requested (``requested``) and
    read (``read``), whether it is written (``written``; ``allocated``: by plain writes), and
    its distinct chunks' bytes and number, as :func:`.sampled.exact_counts` counts them;
    ``made``, ``named``: :func:`head_counts`."""
    nb = np.diff(u.ptr)[u.piece]                                             # elements per interval
    elem = np.repeat(np.arange(len(u.piece)), nb)                            # each element's interval
    e = np.repeat(u.ptr[u.piece] - np.cumsum(nb) + nb, nb) + np.arange(int(nb.sum()))
    times = u.count[elem] * made[u.base["kind"][e]]
    tensor = u.base["hi"][e] >> 35
    width = int(tensor.max(initial=0)) + 1
    nbytes = times * u.base["size"][e]
    hi, _, kind, size = _distinct(u)
    copies = named[kind]
    return {"requested": np.bincount(tensor, nbytes, minlength=width).astype(np.int64), "requests": int(times.sum()),
            "read": np.bincount(tensor, nbytes * (u.base["write"][e] == 0), minlength=width).astype(np.int64),
            "written": np.bincount(tensor, u.base["write"][e] > 0, minlength=width) > 0,
            "allocated": np.bincount(tensor, u.base["write"][e] == WRITE, minlength=width) > 0,
            "distinct": np.bincount(hi >> 35, size * copies, minlength=width).astype(np.int64),
            "chunks": np.bincount(hi >> 35, copies, minlength=width).astype(np.int64)}


def _distinct(u: Uniform) -> tuple:
    """(hi, lo, kind, size) of one head's distinct chunks: each piece at the union of the
    members its intervals walk (the intervals' ranges merged piece by piece)."""
    lo = np.minimum(u.first, u.first + u.sign * (u.count - 1))
    order = np.lexsort((lo, u.piece))
    piece, lo, hi = u.piece[order], lo[order], (lo + u.count - 1)[order]
    span = int(hi.max(initial=0)) + 2                          # ranges of one piece never reach the next's
    reach = np.maximum.accumulate(piece * span + hi)           # the furthest member covered so far
    new = np.r_[True, (piece[1:] != piece[:-1]) | (piece[1:] * span + lo[1:] > reach[:-1] + 1)]
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(piece)] - 1
    first, last, which = lo[starts], reach[ends] - piece[starts] * span, piece[starts]
    n = last - first + 1                                       # members of each merged range
    member = np.repeat(first - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
    p = np.repeat(which, n)
    nb = u.ptr[p + 1] - u.ptr[p]
    e = np.repeat(u.ptr[p] - np.cumsum(nb) + nb, nb) + np.arange(int(nb.sum()))
    m = np.repeat(member, nb)
    hi_, lo_ = u.base["hi"][e] + m * u.hi_shift[e], u.base["lo"][e] + m * u.lo_shift[e]
    kind, size = u.base["kind"][e], u.base["size"][e]
    key = np.lexsort((lo_, hi_, kind))
    keep = key[np.r_[True, (np.diff(kind[key]) != 0) | (np.diff(hi_[key]) != 0) | (np.diff(lo_[key]) != 0)]]
    return hi_[keep], lo_[keep], kind[keep], size[keep]


def warm_up(L: Launch, r0: int, guess: int, capacities: list[int], spent: list,
            made: int | None = None) -> tuple[dict, float, int]:
    """What the caches hold at round ``r0``: the rounds before ``r0`` back to where their
    distinct chunks bring the largest of ``capacities`` (``guess`` rounds, doubled until
    they do, or back to the launch's start, or to where every chunk of the launch is seen:
    further back, none is last requested; past the nearest cache's capacity, no further than
    ``made`` requests), each chunk's key, size, last place ``t`` and whether that request
    wrote it (an LRU's content and order follow from when each key was last requested:
    :func:`held`). Also how far it reached (its distinct bytes over the largest capacity; inf
    where it holds every chunk requested before ``r0``) and the rounds it took; ``spent[1]``
    counts the requests it made."""
    seen, hi, warm, count = None, r0, max(1, guess), 0
    while True:
        lo = max(0, r0 - warm)
        s, t = requests(L, lo, hi, ordered=False)
        spent[1], count = spent[1] + len(t), count + len(t)
        part = _last(s, t)
        seen = part if seen is None else _merge(seen, part)
        reached = _reached(seen, max(capacities))
        whole = lo == 0 or _chunks(seen) >= L.chunks
        if whole or reached >= 1 or (made is not None and count > made and seen["size"].sum() >= capacities[0]):
            break
        hi, warm = lo, 2 * warm
    return seen, float("inf") if whole else reached, r0 - lo


def _reached(seen: dict, capacity: int) -> float:
    """The warm-up's distinct bytes over the capacity; with two partitions, the lesser of
    each partition's over half the capacity."""
    if "side" not in seen:
        return float(seen["size"].sum()) / max(1, capacity)
    return min(float(seen["size"][seen["side"] == p].sum()) for p in (0, 1)) / max(1, capacity // 2)


def held(seen: dict, capacity_bytes: int) -> Stream:
    """The LRU's state from :func:`warm_up`'s chunks, as requests: each chunk's last request,
    in that order, those the capacity holds, a write where that request wrote (the chunk is
    then dirty; a chunk last read after a write is taken as clean, though a read that hit
    leaves it dirty: the read-modify-write of an accumulator in flight at the span's start).
    With two partitions (``seen["side"]``: where the request was done, its side for a read,
    the chunk's home for a write), each holds the most recent chunks done there that fit in
    half the capacity (a chunk a miss also filled at its home is not counted there: played,
    the state's reads fill it again)."""
    if "side" not in seen:
        order, room = recency(seen)
        kept = order[room <= capacity_bytes]
    else:
        parts = []
        for p in (0, 1):
            mine = np.flatnonzero(seen["side"] == p)
            order, room = recency({f: v[mine] for f, v in seen.items()})
            parts.append(mine[order[room <= capacity_bytes // 2]])
        kept = np.concatenate(parts)
        kept = kept[np.argsort(seen["t"][kept], kind="stable")]
    side = seen["side"][kept] if "side" in seen else None
    return Stream(seen["key"][kept], seen["size"][kept], seen["written"][kept].astype(np.int64),
                  np.zeros(len(kept), np.int64), [], side=side)


def recency(seen: dict) -> tuple[np.ndarray, np.ndarray]:
    """:func:`warm_up`'s chunks least recent first (their order in ``seen``), and for each the
    bytes from it to the most recent: an LRU of capacity C holds those with at most C."""
    order = np.argsort(seen["t"], kind="stable")
    return order, np.cumsum(seen["size"][order][::-1])[::-1]


def _last(s: Stream, t: np.ndarray) -> dict:
    """Per distinct chunk of ``s`` (and partition, where ``s`` has two): its key (head, hi,
    lo), size, last place ``t``, and whether it was written (and ``side``: the partition the
    request was done in, the chunk's home for a write)."""
    if not len(t):
        out = {"key": s.key_parts.reshape(0, 3), "size": s.size, "t": t, "written": np.zeros(0, bool)}
        return out if s.side is None else {**out, "side": s.side}
    side = None if s.side is None else partitions.done_in(s.side, s.write, partitions.homes(s.key_parts))
    ids = s.key_ids() if side is None else s.key_ids() * 2 + side
    span = int(t.max()) + 1
    if int(ids.max()) < (1 << 62) // span:          # one key, (chunk, place): a single sort
        order = np.argsort(ids * span + t, kind="stable")
    else:
        order = np.lexsort((t, ids))
    last = order[np.flatnonzero(np.r_[ids[order][1:] != ids[order][:-1], True])]
    out = {"key": s.key_parts[last], "size": s.size[last], "t": t[last], "written": s.write[last] > 0}
    return out if side is None else {**out, "side": side[last]}


def _merge(newer: dict, older: dict) -> dict:
    """The chunks of both; a chunk in both (of one partition) is as the newer has it."""
    both = {f: np.concatenate([newer[f], older[f]]) for f in newer}
    rows = both["key"] if "side" not in both else np.column_stack([both["key"], both["side"]])
    first = np.unique(rows, axis=0, return_index=True)[1]
    return {f: v[first] for f, v in both.items()}


def _chunks(seen: dict) -> int:
    """The distinct chunks :func:`warm_up` has seen (of either partition)."""
    return len(seen["size"]) if "side" not in seen else len(np.unique(seen["key"], axis=0))


__all__ = ["Launch", "launch", "requests", "head_counts", "exact", "warm_up", "held", "recency", "WAVES"]
