"""The L2 model at any length: spans of the stream's rounds, each played exactly after a warm-up.

Past every other budget (a causal run of N = 131,072 and more: its thread blocks are out of
lockstep, so the stream holds every block's every tile step, and a sample of the chunks
cannot shrink it below the scaled cache's :data:`.sampled.MIN_CHUNKS`), the model plays the
stream in part *in time*. The round robin of :mod:`.stream` places every thread block (CTA)
of every head (:func:`.stream.schedule`, from the CTAs' lengths alone, which :mod:`.uniform`
gives without expanding them); spans of rounds are played, each after a *warm-up*, and
only the spans are counted (:func:`window`).

Why a span is exact. An LRU request hits when the distinct bytes since its chunk's last
request fit in the cache. When the warm-up brings at least the capacity's distinct bytes, a
request in the span whose chunk was last requested before the warm-up has more than the
capacity between the two and misses in the full stream as it misses in the window; any
other request sees exactly the requests the full stream has between the two. The warm-up
is played as the cache's state (:func:`warm_up`: each chunk's last request, those the
capacity holds), whose one approximation is which chunks are dirty. A span's write-backs are
the evictions of dirty chunks within it. ``warm`` reports how far the shortest warm-up
reached: its distinct bytes over the capacity (at least 1: every span exact).

Which spans (:func:`strata`): the first and the last of the launch, and one after every
round where a wave of CTAs starts together, are played whole; between them :data:`WINDOWS`
spans spread over the rounds are played, until the requests made pass :data:`MADE` × the
budget (and at least :data:`MIN_SPANS`). The estimate (:func:`_scaled`): the whole spans'
counters as they are, the others' scaled per tensor by its bytes requested between the whole
spans (exact, from :mod:`.uniform`) over its bytes requested in them; a tensor not written
whole is never estimated below its distinct bytes (its first touches, exact), nor the bytes
written back below what was written less what is left dirty. Every second sampled span gives
a second estimate; ``sampled_within`` is how far the two are apart, as in :mod:`.sampled`.
tests/invariants/test_l2_windows.py checks spans against the whole stream, windows that cover
every round against the round-robin reference, and the estimate against the exact model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import stack
from .lru import CacheStats
from .programs import HEAD, PER_KV_HEAD, WRITE
from .sampled import MAX_CTAS, Sampled, multiplicities
from .stream import Stream, schedule
from .uniform import Uniform

#: spans measured per kernel, evenly over its rounds
WINDOWS = 32
#: the spans between are played until the requests made (their warm-ups' too, played or
#: not: making a request costs about a tenth of playing it) pass MADE × the budget, and at
#: least MIN_SPANS of them
MADE = 24
MIN_SPANS = 12
_COUNTERS = ("read_bytes", "read_hit_bytes", "write_bytes", "dram_read_bytes", "dram_write_bytes", "dirty_bytes_left")


@dataclass(frozen=True)
class Launch:
    """One kernel's CTAs over every head: launch order g = head × CTAs + CTA."""

    u: Uniform
    start: np.ndarray              # per CTA of every head: its first round
    slot: np.ndarray
    heads: int
    kv: np.ndarray                 # per head (in launch order): the K/V head it reads
    lead: np.ndarray               # per head: whether it makes its group's once-per-K/V-head accesses

    @property
    def rounds(self) -> int:
        return int((self.start + np.tile(self.u.lengths, self.heads)).max(initial=0))


def launch(u: Uniform, heads: int, slots: int, kv_of_q, leads_group) -> Launch | None:
    """The schedule of every head's CTAs (None: more than :data:`.sampled.MAX_CTAS`)."""
    if heads * u.ctas > MAX_CTAS:
        return None
    start, slot = schedule(np.tile(u.lengths, heads), slots)
    return Launch(u, start, slot, heads, np.array([kv_of_q(h) for h in range(heads)], np.int64),
                  np.array([leads_group(h) for h in range(heads)], bool))


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
    s = Stream(parts, f["size"][mask][order], f["write"][mask][order], np.zeros(len(parts), np.int64), [])
    return s, rounds[order] if ordered else rounds * (int(L.slot.max(initial=0)) + 1) + slots


def exact(u: Uniform, heads: int, kv: np.ndarray, lead: np.ndarray) -> dict:
    """What every head requests, exactly: per tensor its bytes requested (``requested``) and
    read (``read``), whether it is written (``written``; ``allocated``: by plain writes), and
    its distinct chunks' bytes and number, as :func:`.sampled.exact_counts` counts them."""
    made, named = multiplicities(heads, kv.tolist(), lead.tolist())
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


def spans(lo: int, hi: int, span: int) -> list[tuple[int, int]]:
    """:data:`WINDOWS` spans of ``span`` rounds in rounds lo … hi − 1, one in each W-th of
    them, at a place in it that moves by the golden ratio from one to the next (a launch
    repeats every head: spans at one place in every W-th would see the same place in every
    head); one span of all of them where they would cover them."""
    if hi <= lo:
        return []
    if WINDOWS * span >= hi - lo:
        return [(lo, hi)]
    part = (hi - lo) / WINDOWS
    starts = [lo + int(k * part + (part - span) * ((0.5 + k * _GOLDEN) % 1.0)) for k in range(WINDOWS)]
    return [(r, r + span) for r in starts]


_GOLDEN = (5 ** 0.5 - 1) / 2


def warm_up(L: Launch, r0: int, guess: int, capacity_bytes: int, spent: list) -> tuple[Stream, float, int]:
    """The cache's state at round ``r0``, as requests: the rounds before ``r0`` back to where
    their distinct chunks bring ``capacity_bytes`` (``guess`` rounds, doubled until they do,
    or back to the launch's start), each chunk's last request only, in that order (an LRU's
    content and order follow from when each key was last requested), those the capacity
    holds, a write where that request wrote: the chunk is then dirty (a chunk last read
    after a write is taken as clean, though a read that hit leaves it dirty: the
    read-modify-write of an accumulator in flight at ``r0``). Also how far it reached (its distinct
    bytes over the capacity; inf where it starts at the launch) and the rounds it took;
    ``spent[1]`` counts the requests it made."""
    seen, hi, warm = None, r0, max(1, guess)
    while True:
        lo = max(0, r0 - warm)
        s, t = requests(L, lo, hi, ordered=False)
        spent[1] += len(t)
        part = _last(s, t)
        seen = part if seen is None else _merge(seen, part)
        reached = float(seen["size"].sum()) / max(1, capacity_bytes)
        if lo == 0 or reached >= 1:
            break
        hi, warm = lo, 2 * warm
    order = np.argsort(seen["t"], kind="stable")
    held = order[np.cumsum(seen["size"][order][::-1])[::-1] <= capacity_bytes]   # what the LRU holds at r0
    state = Stream(seen["key"][held], seen["size"][held], seen["written"][held].astype(np.int64),
                   np.zeros(len(held), np.int64), [])
    return state, float("inf") if lo == 0 else reached, r0 - lo


def _last(s: Stream, t: np.ndarray) -> dict:
    """Per distinct chunk of ``s``: its key (head, hi, lo), size, last place ``t``, and whether
    it was written."""
    if not len(t):
        return {"key": s.key_parts.reshape(0, 3), "size": s.size, "t": t, "written": np.zeros(0, bool)}
    ids = s.key_ids()
    order = np.lexsort((t, ids))
    last = order[np.flatnonzero(np.r_[ids[order][1:] != ids[order][:-1], True])]
    return {"key": s.key_parts[last], "size": s.size[last], "t": t[last], "written": s.write[last] > 0}


def _merge(newer: dict, older: dict) -> dict:
    """The chunks of both; a chunk in both is as the newer has it."""
    both = {f: np.concatenate([newer[f], older[f]]) for f in newer}
    first = np.unique(both["key"], axis=0, return_index=True)[1]
    return {f: v[first] for f, v in both.items()}


def window(L: Launch, r0: int, r1: int, capacity_bytes: int, width: int, spent: list) -> tuple[dict, float] | None:
    """{counter: per tensor} of the requests of rounds r0 … r1 − 1 played after the cache's
    state at r0 (:func:`warm_up`, from half the rounds the last warm-up took, ``spent[0]``,
    which this one's replace), and how far that reached; None where :func:`.stack.play`
    cannot play it. ``spent[1]`` counts the requests made (played or not)."""
    state, reached, spent[0] = warm_up(L, r0, max(r1 - r0, spent[0] // 2), capacity_bytes, spent)
    span, _ = requests(L, r0, r1)
    spent[1] += len(span.size)
    s = Stream(np.concatenate([state.key_parts, span.key_parts]), np.concatenate([state.size, span.size]),
               np.concatenate([state.write, span.write]), np.zeros(len(state.size) + len(span.size), np.int64), [])
    if not len(span.size):
        zero = np.zeros(width, np.int64)
        return {**{c: zero for c in _COUNTERS + ("requested", "end_dirty")}, "written_back": 0}, reached
    counted = np.arange(len(s.size)) >= len(state.size)
    tensor = s.key_parts[:, 1] >> 35
    got = stack.play(s.key_ids(), s.size, s.write, capacity_bytes, cuts=[len(state.size)],
                     groups=tensor * 2 + counted)
    if got is None:
        return None
    by = {c: np.pad(v, (0, 2 * width))[:2 * width] for c, v in got.by_group.items()}
    out = {c: by[c][1::2] for c in _COUNTERS}
    out["requested"] = out["read_bytes"] + out["write_bytes"]
    out["written_back"] = got.stats.dram_write_bytes - got.marks[0].dram_write_bytes
    out["end_dirty"] = by["dirty_bytes_left"][0::2] + by["dirty_bytes_left"][1::2]
    return out, reached


def _spread(n: int) -> list[int]:
    """0 … n − 1 in an order whose every prefix is spread over them (bit reversal)."""
    bits = max(1, (n - 1).bit_length())
    return [k for k in sorted(range(1 << bits), key=lambda k: int(f"{k:0{bits}b}"[::-1], 2)) if k < n]


def strata(L: Launch, span: int, slots: int) -> tuple[list, list]:
    """(the spans played whole, the spans sampled between them): the first and the last
    ``span`` rounds, and the ``span`` rounds after every round where an eighth of the slots
    or more start a CTA (a wave of CTAs that started together and end together starts the
    next, whose first requests miss together) unless there are more than :data:`WINDOWS` of
    those; and :func:`spans` over the rounds between, less any that meet them (or, where
    those rounds are fewer than the spans would cover, all of them)."""
    rounds = L.rounds
    starts = np.bincount(L.start, minlength=rounds + 1)
    waves = np.flatnonzero(starts >= max(2, slots // 8))
    waves = waves if len(waves) <= WINDOWS + 1 else waves[:1]
    whole = []
    for r in [0, *waves.tolist(), max(0, rounds - span)]:
        lo, hi = (max(r, whole[-1][1]) if whole else r), min(r + span, rounds)
        if hi > lo:
            whole.append((lo, hi))
    if not whole or whole[-1][1] < rounds:
        whole.append((max(0, rounds - span), rounds))
    gaps = [(a[1], b[0]) for a, b in zip(whole, whole[1:]) if b[0] > a[1]]
    if sum(b - a for a, b in gaps) <= WINDOWS * span:                 # few rounds left: every one
        return whole, gaps
    middle = [(a, b) for a, b in spans(whole[0][1], whole[-1][0], span) if not any(a < y and x < b for x, y in whole)]
    return whole, middle


def estimate(L: Launch, ex: dict, capacity_bytes: int, budget: int) -> Sampled | None:
    """Every head of one kernel from the spans of :func:`strata`, of about ``budget`` requests
    in all (see the module's docstring); None where a window cannot be played from stack
    distances."""
    width = len(ex["requested"])
    slots = int(L.slot.max(initial=0)) + 1
    state = capacity_bytes * int(ex["requests"]) // max(1, int(ex["requested"].sum()))   # chunks a state holds
    span = max(1, max(budget // (WINDOWS + 2) - state, budget // (2 * WINDOWS + 4)) // slots)
    whole, middle = strata(L, span, slots)
    spent = [0, 0]
    played = [window(L, r0, r1, capacity_bytes, width, spent) for r0, r1 in whole]
    for k in _spread(len(middle)):                    # until the requests made pass MADE × budget
        if len(played) - len(whole) >= MIN_SPANS and spent[1] > MADE * budget:
            break
        played.append(window(L, *middle[k], capacity_bytes, width, spent))
    if None in played:
        return None
    ends = [p for p, _ in played[:len(whole)]]
    dirty_end = float(ends[-1]["end_dirty"].sum())
    middle = [p for p, _ in played[len(whole):]]
    full, half = (_scaled(ends, middle[::k], ex, dirty_end) for k in (1, 2))
    dram = full.dram_read_bytes + full.dram_write_bytes
    apart = abs(dram - half.dram_read_bytes - half.dram_write_bytes) / max(dram, 1)
    counted = sum(int(p["requested"].sum()) for p in ends + middle)
    return Sampled(full, counted / max(1, int(ex["requested"].sum())), apart if len(middle) > 1 else 0.0,
                   model="windowed", warm=min(w for _, w in played))


def _scaled(ends: list, middle: list, ex: dict, dirty_end: float) -> CacheStats:
    """Every head's counters: the first and last spans' (per tensor) as they are, the middle
    spans' scaled by the bytes requested between them; never below what every chunk costs
    at least: a tensor not written whole (plain writes allocate without a fetch) reads its
    distinct bytes from DRAM, and a written chunk is written back or left dirty at the end."""
    def total(parts, name):
        return sum((p[name] for p in parts), np.zeros(len(ex["requested"])))
    rest = ex["requested"] - total(ends, "requested")
    scale = np.where(total(middle, "requested") > 0, rest / np.maximum(total(middle, "requested"), 1), 0)

    def counter(name):
        return total(ends, name) + total(middle, name) * scale
    fetched = np.where(ex["allocated"], 0, ex["distinct"])
    dram_read = np.maximum(counter("dram_read_bytes"), fetched)
    read_missed = np.maximum(counter("read_bytes") - counter("read_hit_bytes"), np.where(ex["written"], 0, fetched))
    back = sum(p["written_back"] for p in ends) + sum(p["written_back"] for p in middle) * rest.sum() / max(
        total(middle, "requested").sum(), 1)
    written_back = max(float(back), float(ex["distinct"][ex["written"]].sum()) - dirty_end)
    read, requested = int(ex["read"].sum()), int(ex["requested"].sum())
    return CacheStats(read_bytes=read, read_hit_bytes=round(read - read_missed.sum()), write_bytes=requested - read,
                      dram_read_bytes=round(dram_read.sum()), dram_write_bytes=round(written_back),
                      dirty_bytes_left=round(dirty_end))


def plan(uniform: dict, concurrency: dict, budget: int, *, heads: int, capacity_bytes: int, kv_of_q,
         leads_group) -> tuple[int, callable] | None:
    """(requests, play) for every head of every kernel of ``uniform`` (kernel ->
    :class:`~.uniform.Uniform`) in windows of about ``budget`` requests in all; ``play()``
    gives kernel -> :class:`~.sampled.Sampled`, or None where a kernel cannot be played from
    stack distances. None where a kernel has more CTAs than :data:`.sampled.MAX_CTAS`."""
    launches = {k: launch(u, heads, concurrency.get(k, 1), kv_of_q, leads_group) for k, u in uniform.items()}
    if None in launches.values():
        return None
    share = {k: max(1, budget * int(u.lengths.sum()) // max(1, sum(int(v.lengths.sum()) for v in uniform.values())))
             for k, u in uniform.items()}

    def play_all() -> dict | None:
        got = {}
        for k, L in launches.items():
            ex = exact(L.u, heads, L.kv, L.lead)
            got[k] = estimate(L, ex, capacity_bytes, share[k])
        return None if None in got.values() else got
    return sum(share.values()), play_all
