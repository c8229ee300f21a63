"""The L2 model at any length: spans of the stream's rounds, each played exactly after a warm-up.

Past every other budget (a causal run of N = 131,072 and more: its thread blocks are out of
lockstep, so the stream holds every block's every tile step, and a sample of the chunks
cannot shrink it below the scaled cache's :data:`.sampled.MIN_CHUNKS`), the model plays the
stream in part *in time*. The round robin of :mod:`.stream` places the thread blocks (CTAs)
of the first heads (:mod:`.rounds`: those whose blocks fill the slots
:data:`.rounds.WAVES` times over; the heads after them repeat the launch's middle); spans
of rounds are played, each after a *warm-up*, and only the spans are counted
(:func:`window`). With a cache behind the L2, or chunks of two sizes in one LRU, a span is
played by :mod:`.chain`, from a state for each level (two partitions play any chunks).

Why a span is exact. An LRU request hits when the distinct bytes since its chunk's last
request fit in the cache. When the warm-up brings at least the capacity's distinct bytes, a
request in the span whose chunk was last requested before the warm-up has more than the
capacity between the two and misses in the full stream as it misses in the window; any
other request sees exactly the requests the full stream has between the two. The warm-up
is played as the cache's state (:func:`.rounds.warm_up`: each chunk's last request, those
the capacity holds), whose one approximation is which chunks are dirty (behind the L2, also
what the level behind holds: :mod:`.chain`). A span's write-backs are
the evictions of dirty chunks within it. ``warm`` reports how far the shortest warm-up
reached: its distinct bytes over the capacity (at least 1: every span exact).

Which spans (:func:`strata`): the first and the last of the launch, and one after every
round where a wave of CTAs starts together, are played whole; between them :data:`WINDOWS`
spans spread over the rounds are played, until the requests made pass :data:`MADE` × the
budget (and at least :data:`MIN_SPANS`). The estimate (:func:`_scaled`): the whole spans'
counters as they are, the others' scaled per tensor by its bytes requested between the whole
spans (exact over every head, from :mod:`.uniform`) over its bytes requested in them; a
tensor not written whole is never estimated below its distinct bytes (its first touches,
exact), nor the bytes written back below the distinct bytes written less what is left dirty, nor
above the bytes written less what is left dirty. Every second sampled span gives
a second estimate; ``sampled_within`` is how far the two are apart, as in :mod:`.sampled`.
tests/invariants/test_l2_windows.py checks spans against the whole stream, windows that cover
every round against the round-robin reference, and the estimate against the exact model.
"""

from __future__ import annotations

import numpy as np

from . import chain, partitions, sets
from .lru import CacheStats
from .rounds import Launch, exact, head_counts, held, launch, requests, warm_up
from .sampled import Sampled
from .stream import Stream

#: spans measured per kernel, evenly over its rounds
WINDOWS = 32
#: the spans between are played until the requests made (their warm-ups' too, played or
#: not: making a request costs about a tenth of playing it) pass MADE × the budget, and at
#: least MIN_SPANS of them
MADE = 24
MIN_SPANS = 12
_COUNTERS = ("read_bytes", "read_hit_bytes", "write_bytes", "dram_read_bytes", "dram_write_bytes", "dirty_bytes_left")


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


def window(L: Launch, r0: int, r1: int, capacities: list[int], width: int, spent: list,
           made: int | None = None, ways: int | None = None) -> tuple[dict, float]:
    """{counter: per tensor} of the requests of rounds r0 … r1 − 1 played after the caches'
    state at r0 (:func:`.rounds.warm_up`, from half the rounds the last warm-up took,
    ``spent[0]``, which this one's replace, to the largest of ``capacities``, nearest first,
    past the nearest's no further than ``made`` requests), and how far that reached: at once
    (one LRU or two partitions), or, with caches behind the L2 (their counters under
    ``"outer"``) or chunks of two sizes in one LRU, request by request (:mod:`.chain`). ``spent[1]`` counts the requests
    made (played or not). With ``ways`` (two partitions of hashed sets), the state reaches
    back to what may still hit (:func:`.sets.reach` × the capacity)."""
    far = [int(capacities[0] * sets.reach(ways))] + list(capacities[1:])
    seen, reached, spent[0] = warm_up(L, r0, max(r1 - r0, spent[0] // 2), far, spent, made)
    span, _ = requests(L, r0, r1)
    spent[1] += len(span.size)
    if not len(span.size):
        zero = np.zeros(width, np.int64)
        counters = {c: zero for c in _COUNTERS + ("requested", "end_dirty")}
        return {**counters, "written_back": 0, "outer": [counters] * (len(capacities) - 1)}, reached
    got = None if len(capacities) > 1 else _stacked(held(seen, far[0]), span, capacities[0], ways)
    if got is None:                  # caches behind the L2, or chunks of two sizes in one LRU
        levels = chain.play(chain.states(seen, capacities), capacities, span, width)
        out = {**levels[0], "outer": levels[1:], "written_back": int(levels[-1]["dram_write_bytes"].sum())}
        out["requested"] = out["read_bytes"] + out["write_bytes"]
        return out, reached
    by = {c: np.pad(v, (0, 2 * width))[:2 * width] for c, v in got.by_group.items()}
    out = {c: by[c][1::2] for c in _COUNTERS}
    out["requested"] = out["read_bytes"] + out["write_bytes"]
    out["written_back"] = got.stats.dram_write_bytes - got.marks[0].dram_write_bytes
    out["end_dirty"] = by["dirty_bytes_left"][0::2] + by["dirty_bytes_left"][1::2]
    out["outer"] = []
    return out, reached


def _stacked(state: Stream, span: Stream, capacity_bytes: int, ways: int | None = None):
    """The span played after the state at once (:func:`.partitions.played`), its every
    counter per (tensor, whether the span made it); None where one LRU cannot play it
    exactly (chunks of two sizes; two partitions always can)."""
    s = Stream(np.concatenate([state.key_parts, span.key_parts]), np.concatenate([state.size, span.size]),
               np.concatenate([state.write, span.write]), np.zeros(len(state.size) + len(span.size), np.int64), [])
    counted = np.arange(len(s.size)) >= len(state.size)
    groups = (s.key_parts[:, 1] >> 35) * 2 + counted
    sides = None if span.side is None else np.concatenate([state.side, span.side])   # each side's state
    return partitions.played(s.key_parts, s.key_ids(), s.size, s.write, sides, capacity_bytes, [len(state.size)],
                             groups, ways)


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
    at, starts = np.unique(L.start, return_counts=True)
    waves = at[starts >= max(2, slots // 8)]
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


def estimate(L: Launch, ex: dict, capacities: list[int], budget: int, names: tuple = (),
             ways: int | None = None) -> Sampled:
    """Every head of one kernel from the spans of :func:`strata`, of about ``budget`` requests
    in all (see the module's docstring), through caches of ``capacities`` (nearest first;
    ``names``: those behind the nearest; ``ways``: as :func:`window` takes it)."""
    width = len(ex["requested"])
    slots = int(L.slot.max(initial=0)) + 1
    state = int(capacities[0] * sets.reach(ways)) * int(ex["requests"]) // max(1, int(ex["requested"].sum()))   # chunks a state holds
    span = max(1, max(budget // (WINDOWS + 2) - state, budget // (2 * WINDOWS + 4)) // slots)
    whole, middle = strata(L, span, slots)
    spent, made = [0, 0], MADE * budget // 4                # a warm-up past the L2's capacity
    played = [window(L, r0, r1, capacities, width, spent, None if k == len(whole) - 1 else made, ways)
              for k, (r0, r1) in enumerate(whole)]                  # the end's whole: what is left dirty
    for k in _spread(len(middle)):                    # until the requests made pass MADE × budget
        if len(played) - len(whole) >= MIN_SPANS and spent[1] > MADE * budget:
            break
        played.append(window(L, *middle[k], capacities, width, spent, made, ways))
    ends = [p for p, _ in played[:len(whole)]]
    dirty_end = float(ends[-1]["end_dirty"].sum())
    middle = [p for p, _ in played[len(whole):]]
    (full, outer), (half, _) = (_scaled(ends, middle[::k], ex, dirty_end) for k in (1, 2))
    dram = full.dram_read_bytes + full.dram_write_bytes
    apart = abs(dram - half.dram_read_bytes - half.dram_write_bytes) / max(dram, 1)
    counted = sum(int(p["requested"].sum()) for p in ends + middle)
    return Sampled(full, counted / max(1, int(ex["requested"].sum())), apart if len(middle) > 1 else 0.0,
                   model="windowed", warm=min(w for _, w in played), outer=dict(zip(names, outer)) or None)


def _scaled(ends: list, middle: list, ex: dict, dirty_end: float) -> tuple[CacheStats, list[CacheStats]]:
    """Every head's counters, of the nearest cache (its ``dram_*`` what reached DRAM past
    every level) and of each level behind it: the first and last spans' (per tensor) as they
    are, the middle spans' scaled by the bytes requested between them; never below what every
    chunk costs at least: a tensor not written whole (plain writes allocate without a fetch)
    reads its distinct bytes from DRAM, and a written chunk is written back or left dirty at
    the end; and never above what was written: a chunk is written back only after a write since it was
    last clean, so the bytes written back and left dirty are at most the bytes written (the spans' warm-up
    states, whose dirty chunks are approximate, wrote back 6 % more than that on a long causal forward)."""
    def total(parts, name, level):
        return sum(((p["outer"][level - 1] if level else p)[name] for p in parts), np.zeros(len(ex["requested"])))
    rest = ex["requested"] - total(ends, "requested", 0)
    scale = np.where(total(middle, "requested", 0) > 0, rest / np.maximum(total(middle, "requested", 0), 1), 0)

    def counter(name, level=0):
        return total(ends, name, level) + total(middle, name, level) * scale
    behind = len(ends[0]["outer"])
    fetched = np.where(ex["allocated"], 0, ex["distinct"])
    dram_read = np.maximum(counter("dram_read_bytes", behind), fetched)
    read_missed = np.maximum(counter("read_bytes") - counter("read_hit_bytes"), np.where(ex["written"], 0, fetched))
    back = sum(p["written_back"] for p in ends) + sum(p["written_back"] for p in middle) * rest.sum() / max(
        total(middle, "requested", 0).sum(), 1)
    read, requested = int(ex["read"].sum()), int(ex["requested"].sum())
    least = float(ex["distinct"][ex["written"]].sum()) - dirty_end
    written_back = min(max(float(back), least), max(least, requested - read - dirty_end))
    outer = []
    for level in range(1, behind + 1):                 # each reads every chunk it passes on at least once
        asked, missed = (np.maximum(counter(c, level), fetched) for c in ("read_bytes", "dram_read_bytes"))
        if level == behind:                            # the last level's DRAM bytes as the nearest's
            missed = dram_read
        outer.append(CacheStats(read_bytes=round(asked.sum()), read_hit_bytes=round(asked.sum() - missed.sum()),
                                write_bytes=round(counter("write_bytes", level).sum()),
                                dram_read_bytes=round(missed.sum()), dram_write_bytes=round(
                                    written_back if level == behind else counter("dram_write_bytes", level).sum())))
    return CacheStats(read_bytes=read, read_hit_bytes=round(read - read_missed.sum()), write_bytes=requested - read,
                      dram_read_bytes=round(dram_read.sum()), dram_write_bytes=round(written_back),
                      dirty_bytes_left=round(dirty_end)), outer


def plan(uniform: dict, concurrency: dict, budget: int, *, heads: int, capacity_bytes: int, kv_of_q,
         leads_group, group: int = 1, outer_levels: tuple = (), sides=None, ways=None) -> tuple[int, callable]:
    """(requests, play) for every head of every kernel of ``uniform`` (kernel ->
    :class:`~.uniform.Uniform`) in windows of about ``budget`` requests in all, through the L2
    and ``outer_levels`` ((name, capacity) nearest first) behind it; ``play()`` gives kernel ->
    :class:`~.sampled.Sampled`; ``group``: the launch-ordered heads after which the sharing of
    K/V heads repeats (:func:`head_counts`); ``sides``: as :func:`~.playback.replay_programs`
    takes it (two partitions, with no cache behind them), and ``ways``."""
    launches = {k: launch(u, heads, concurrency.get(k, 1), kv_of_q, leads_group, sides) for k, u in uniform.items()}
    share = {k: max(1, budget * int(u.lengths.sum()) // max(1, sum(int(v.lengths.sum()) for v in uniform.values())))
             for k, u in uniform.items()}
    capacities = [capacity_bytes] + [c for _, c in outer_levels]

    def play_all() -> dict:
        made, named = head_counts(heads, kv_of_q, leads_group, group)
        return {k: estimate(L, exact(L.u, made, named), capacities, share[k], tuple(n for n, _ in outer_levels), ways)
                for k, L in launches.items()}
    return sum(share.values()), play_all
