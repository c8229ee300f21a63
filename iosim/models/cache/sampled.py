"""The L2 model past its budget of requests: a sample of the chunks, played exactly.

Spatial sampling (SHARDS: Waldspurger et al., FAST 2015). Keep only the requests of a
fixed subset of the chunks, a fraction R of them, and play that stream through an LRU of
R × the capacity: a kept request's stack distance, in bytes, is then about R × its
distance in the full stream, so it hits where it would have hit, and the kept chunks'
misses, scaled by 1/R, estimate the whole stream's. The subset depends on the key alone,
so a chunk is kept in every round or in none and the result is reproducible.

Which chunks. SHARDS keeps a key when its hash falls below R. Here a chunk (tensor,
head, split, column, rows) is kept when its row window w satisfies (w + o) mod m = 0,
R = 1/m, with o a hash of the rest of its key: every m-th window of each tensor of each
head, from a place of its own. The kernels walk K and V window after window, so the
distinct bytes between two requests of a chunk are runs of consecutive windows, and a
systematic sample of a run holds R × its bytes give or take one chunk, where a hashed one
holds them give or take √(R × its chunks). That matters where the model's reuse distances
sit near the capacity (FA2 at N = 32,768 with 16 heads on the H200: at R = 1/10 hashing
missed 14 % of the DRAM reads, the systematic sample 0.03 %; docs/cache.md).

The estimate. What the plan knows exactly stays exact: the bytes requested (every thread
block's every access) and, per tensor, the bytes of its distinct chunks. Each tensor's
sampled counters are scaled by its distinct bytes over those of its sampled chunks
instead of by 1/R (a ratio estimator): the compulsory misses, most of a kernel's DRAM
reads, come out exact, whichever windows were drawn. The scaled cache must hold many
chunks (:data:`MIN_CHUNKS`), or the few it holds decide what hits, and every tensor must
keep as many in the sample: R is never below that. How far to trust it: the kept chunks of every second window (m' = 2m) are played as
well, and the difference of the two estimates of the DRAM bytes is reported
(``sampled_within``); it is not a bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import partitions
from .lru import CacheStats
from .programs import HEAD, KV_HEAD, PER_KV_HEAD, HeadPrograms
from .stream import cohort_count, stream, stream_size

#: the scaled cache holds at least this many of the kernel's largest chunks, and every tensor
#: keeps at least this many chunks in the sample. FA2 on the H200 (benchmarks/l2_sampled_check.py,
#: docs/cache.md): where reuse distances sit at the capacity (dense, N = 16,384 at d = 256,
#: 32,768 at d = 128) a scaled cache of 32 chunks missed up to 21 % of the DRAM reads, 51
#: chunks 5 %, 101 chunks 0.6 %, 152 chunks 0.33 %; at 256 and more, 0.032 % at most over 79
#: kernels (causal runs, whose distances spread, were exact at 32)
MIN_CHUNKS = 256
#: more thread blocks than this over all heads are not sampled: the sampled stream is made
#: of all heads (no extension of the heads), cohort by cohort in Python
MAX_CTAS = 2_000_000
#: what building one cohort of the stream costs, in requests played (a request about 2 µs,
#: :mod:`iosim.run.setup`; a cohort 120-140 µs on the development machine whatever the rate:
#: FA2 forward, N = 8,192, B = 4 × H = 32, causal, 64 × 32 tiles, 16,384 cohorts in 2.0-2.4 s
#: at m = 1, 8 and 64). Sampling does not make it cheaper, so the plan counts it: a causal run
#: of many heads costs its cohorts even where few requests are kept
COHORT_REQUESTS = 64
_MULTIPLIERS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0xFF51AFD7ED558CCD))


@dataclass(frozen=True)
class Sampled:
    """One kernel's estimate: its counters, the rate 1/m, and how far the estimate from half
    the sample was from it (relative DRAM bytes, read and written back)."""

    stats: CacheStats
    rate: float
    within: float
    #: "sampled" (a sample of the chunks) or "windowed" (:mod:`.windows`: spans of the
    #: stream's rounds), and for windows how far the shortest warm-up reached (its distinct
    #: bytes over the capacity; at least 1: every span exact)
    model: str = "sampled"
    warm: float | None = None
    #: {level name: CacheStats} of the caches behind the L2 (windows only), where there are any
    outer: dict | None = None

    def describe(self) -> dict:
        """The JSON of a kernel's estimate: its model, rate and spread (and the windows' warm-up)."""
        return {"model": self.model, "sample_rate": self.rate, "sampled_within": self.within,
                **({"warm_up_reached": self.warm} if self.warm is not None and self.warm != float("inf") else {})}


def offsets(head: np.ndarray, hi: np.ndarray, modulus: int) -> np.ndarray:
    """A chunk's offset among the windows, from its head and ``hi`` (tensor, split, column):
    a 64-bit multiplicative hash, reduced modulo ``modulus``."""
    a, b, c = _MULTIPLIERS
    with np.errstate(over="ignore"):
        x = np.asarray(head).astype(np.uint64) * a ^ np.asarray(hi).astype(np.uint64) * b
        x ^= x >> np.uint64(31)
        x *= c
        x ^= x >> np.uint64(29)
    return (x % np.uint64(modulus)).astype(np.int64)


def window(lo, chunk_rows: int) -> np.ndarray:
    """A chunk's row window, from its key's ``lo`` (first row × (chunk_rows + 1) + rows:
    :mod:`.programs`)."""
    return (np.asarray(lo) // (chunk_rows + 1)) // chunk_rows


def sampler(m: int, chunk_rows: int):
    """keep(head keys, hi, lo) -> mask: the chunks whose row window w has (w + o) mod m = 0,
    o the chunk's :func:`offsets` modulo 2m (so the sample of 2m is a subset of this one)."""
    def keep(head, hi, lo):
        return (window(lo, chunk_rows) + offsets(head, hi, 2 * m)) % m == 0
    return keep


def modulus(requests: int, budget: int, prog: HeadPrograms, capacity_bytes: int, exact: tuple) -> int:
    """m: about ``requests`` / ``budget``, at most what leaves :data:`MIN_CHUNKS` of the
    largest chunks in the scaled cache and as many chunks of each tensor in the sample
    (``exact``: :func:`exact_counts`)."""
    largest = max(int(a.max()) for k in prog.classes for a in (k.shared["size"], k.private["size"]) if a.size)
    fewest = int(exact[3][exact[3] > 0].min(initial=1 << 62))
    cap = min(capacity_bytes // (MIN_CHUNKS * largest), fewest // MIN_CHUNKS)
    return max(1, min(-(-requests // max(1, budget)), cap))


def cost(prog: HeadPrograms, heads: int, slots: int, sides=None) -> int | None:
    """Requests of every head's full stream (None: too many thread blocks to sample)."""
    if heads * len(prog.cta_class) > MAX_CTAS:
        return None
    return stream_size(prog, heads, slots, sides)


def plan(programs: dict, concurrency: dict, budget: int, chunk_rows: int, *, heads: int, capacity_bytes: int,
         kv_of_q, leads_group, sides=None, ways=None) -> tuple[int, Callable] | None:
    """(requests, play) for every head of every kernel of ``programs``, about ``budget``
    requests sampled in all (the requests count the half sample too); ``play()`` gives
    kernel -> :class:`Sampled`, or None where one LRU cannot play a kernel from stack
    distances. None where a kernel has too many thread blocks (:func:`cost`). ``sides``,
    ``ways``: as :func:`~.playback.replay_programs` takes them."""
    costs = {k: cost(prog, heads, concurrency.get(k, 1), sides) for k, prog in programs.items()}
    if None in costs.values():
        return None
    total = sum(costs.values())
    exact = {k: exact_counts(prog, heads, kv_of_q, leads_group) for k, prog in programs.items()}
    room = capacity_bytes if sides is None else capacity_bytes // 2      # what one partition holds
    m = {k: modulus(total, budget, prog, room, exact[k]) for k, prog in programs.items()}

    def play_all() -> dict | None:
        got = {k: play(prog, heads, concurrency.get(k, 1), m[k], kv_of_q=kv_of_q, leads_group=leads_group,
                       capacity_bytes=capacity_bytes, chunk_rows=chunk_rows, exact=exact[k], sides=sides,
                       ways=ways)
               for k, prog in programs.items()}
        return None if None in got.values() else got
    cohorts = sum(cohort_count(prog, heads, concurrency.get(k, 1), sides) for k, prog in programs.items())
    return sum(costs[k] // m[k] + costs[k] // (2 * m[k]) for k in costs) + COHORT_REQUESTS * cohorts, play_all


def play(prog: HeadPrograms, heads: int, slots: int, m: int, *, kv_of_q, leads_group, capacity_bytes: int,
         chunk_rows: int, exact: tuple | None = None, sides=None, ways=None) -> Sampled | None:
    """Every head's stream, sampled 1 in ``m`` windows (see the module's docstring); None
    where one LRU cannot play it at once (:func:`.partitions.played`; two partitions always
    can). ``exact``: :func:`exact_counts`, if made."""
    s = stream(prog, heads, slots, kv_of_q, leads_group, keep=sampler(m, chunk_rows), sides=sides)
    exact = exact or exact_counts(prog, heads, kv_of_q, leads_group)
    full = _estimate(s, np.ones(len(s.size), bool), capacity_bytes // m, exact, ways)
    head, hi, lo = s.key_parts.T
    half = _estimate(s, (window(lo, chunk_rows) + offsets(head, hi, 2 * m)) % (2 * m) == 0, capacity_bytes // (2 * m),
                     exact, ways)
    if full is None or half is None:
        return None
    dram = full.dram_read_bytes + full.dram_write_bytes
    apart = abs(dram - half.dram_read_bytes - half.dram_write_bytes) / max(dram, 1)
    return Sampled(full, 1 / m, 0.0 if m == 1 else apart)


def _estimate(s, kept: np.ndarray, capacity: int, exact: tuple, ways=None) -> CacheStats | None:
    """The counters of the stream's ``kept`` requests, played through ``capacity`` bytes
    (of ``ways``-way hashed sets, where given), scaled tensor by tensor (``exact``:
    :func:`exact_counts`)."""
    read, write, distinct, _ = exact
    if not kept.any():
        return CacheStats(read_bytes=read, read_hit_bytes=read, write_bytes=write)
    tensor = s.key_parts[kept, 1] >> 35
    ids, size = s.key_ids()[kept], s.size[kept]
    got = partitions.played(s.key_parts[kept], ids, size, s.write[kept], None if s.side is None else s.side[kept],
                            max(capacity, 1), groups=tensor, ways=ways)
    if got is None:
        return None
    first = np.unique(ids, return_index=True)[1]
    width = max(len(distinct), int(tensor.max(initial=-1)) + 1)
    seen = np.bincount(tensor[first], size[first], minlength=width)
    scale = np.pad(distinct, (0, width - len(distinct))) / np.maximum(seen, 1)

    def total(name: str) -> float:
        counted = got.by_group[name]
        return float((counted * scale[:len(counted)]).sum())

    read_missed = total("read_bytes") - total("read_hit_bytes")
    return CacheStats(read_bytes=read, read_hit_bytes=round(read - read_missed), write_bytes=write,
                      dram_read_bytes=round(total("dram_read_bytes")), dram_write_bytes=round(total("dram_write_bytes")),
                      dirty_bytes_left=round(total("dirty_bytes_left")))


def multiplicities(heads: int, kv, lead) -> tuple[np.ndarray, np.ndarray]:
    """By access kind (HEAD, KV_HEAD, PER_KV_HEAD): how many times one head's access is made
    over ``heads`` heads (a group reduction once per group), and how many distinct chunks one
    head's chunk names (a K/V head's once per K/V head); ``kv``, ``lead``: per head, its K/V
    head and whether it leads its group."""
    made, named = np.zeros(3, np.int64), np.zeros(3, np.int64)
    made[[HEAD, KV_HEAD, PER_KV_HEAD]] = heads, heads, sum(map(bool, lead))
    named[[HEAD, KV_HEAD, PER_KV_HEAD]] = heads, len(set(kv)), len({k for k, first in zip(kv, lead) if first})
    return made, named


def exact_counts(prog: HeadPrograms, heads: int, kv_of_q, leads_group) -> tuple[int, int, np.ndarray, np.ndarray]:
    """(bytes read, bytes written, bytes and number of the distinct chunks per tensor) of every thread
    block's every access over ``heads`` heads: from one head's programs, each access made
    once per query head (a group reduction once per group), each chunk named once per
    head its key names (a K/V head's once per K/V head)."""
    made, named = multiplicities(heads, [kv_of_q(h) for h in range(heads)], [leads_group(h) for h in range(heads)])
    per_class = np.bincount(prog.cta_class, minlength=len(prog.classes))
    cols = {f: [] for f in ("hi", "lo", "size", "write", "kind", "times")}
    for k, n in zip(prog.classes, per_class):
        for part, times in ((k.shared, n), (k.private, 1)):
            for f in ("hi", "lo", "size", "write", "kind"):
                cols[f].append(np.asarray(part[f]).ravel())
            cols["times"].append(np.full(np.asarray(part["size"]).size, times))
    hi, lo, size, write, kind, times = (np.concatenate(cols[f]) for f in cols)
    each = times * size * made[kind]
    order = np.lexsort((lo, hi, kind))                     # a chunk's size follows from its key
    first = np.ones(len(order), bool)
    first[1:] = np.diff(kind[order]).astype(bool) | np.diff(hi[order]).astype(bool) | np.diff(lo[order]).astype(bool)
    chunk = order[first]
    tensor, copies = hi[chunk] >> 35, named[kind[chunk]]
    distinct = np.bincount(tensor, size[chunk] * copies, minlength=1).astype(np.int64)
    return (int(each[write == 0].sum()), int(each[write > 0].sum()), distinct,
            np.bincount(tensor, copies, minlength=1).astype(np.int64))
