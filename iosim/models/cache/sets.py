"""A cache partition of hashed sets, played from stack distances.

Measured on the H200 (docs/validation/2026-12-03-l2-scatter.md): a partition of its L2 is
W-way sets (W = 16) of 128-byte lines, the set of a line picked by a hash of its address.
A line whose window since its last request brought D other distinct bytes is still held
when fewer than W of those bytes' lines fell in its set. Hashed, they fall in its set
about as Poisson(W·D/P) (P: the partition's bytes, P / (128 W) sets), so the line hits with
probability

    F_W(x) = P(Poisson(W x) < W),   x = D / P.

A fully associative LRU (:mod:`.stack`) is the limit W → ∞: a hit exactly when x ≤ 1.

The model plays a chunk of the stream as the stack does, with a capacity of its own per
request: request i hits when D + s ≤ P · F_W⁻¹(u_i), for u_i uniform in [0, 1) drawn from
a hash of the chunk's place in its head's tensor (``salt``: (hi, lo), not the head) and of
how many times the partition saw the chunk before. Over many requests a window of x·P
bytes hits at the rate F_W(x); the draw is the same in every run and in every head, so the
copies of a launch pattern (:func:`.periodic.copies`) play alike. Whether a chunk is still
held at a cut or at the end takes the draw of its next request.

:class:`Part` plays a partition request by request (the reference, from a Fenwick tree of
each chunk's last request); :func:`.partitions.play` equals it counter for counter
(tests/invariants/test_l2_sets.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

#: the table F_W is inverted on: x in [0, X_MAX] (F_16(4) ≈ 10⁻¹⁵); F_W⁻¹ is then read at
#: u = k / _STEPS and interpolated between (a lookup, where a search of the x table costs
#: a binary search per request: benchmarks/cache_speed.py)
X_MAX, _POINTS, _STEPS = 4.0, 16001, 1 << 16


def hit_probability(x: np.ndarray, ways: int) -> np.ndarray:
    """F_W(x) = P(Poisson(W x) < W), elementwise."""
    x = np.asarray(x, np.float64)
    term = np.exp(-ways * x)
    total = term.copy()
    for k in range(1, ways):
        term = term * ways * x / k
        total = total + term
    return total


@lru_cache(maxsize=8)
def _table(ways: int) -> tuple[np.ndarray, np.ndarray]:
    """(F_W on the grid, descending; the grid, descending): for np.interp of F_W⁻¹."""
    x = np.linspace(0.0, X_MAX, _POINTS)
    return hit_probability(x, ways)[::-1].copy(), x[::-1].copy()


def reach(ways: int | None, rate: float = 1e-3) -> float:
    """The window, over the capacity, past which a request hits at a rate under ``rate``
    (1 for an LRU): how far back a state must look to hold what may still hit."""
    if ways is None:
        return 1.0
    f, x = _table(ways)
    return float(np.interp(rate, f, x))


@lru_cache(maxsize=8)
def _inverse(ways: int) -> np.ndarray:
    """F_W⁻¹ at u = k / _STEPS, k = 0 … _STEPS."""
    f, x = _table(ways)
    return np.interp(np.arange(_STEPS + 1) / _STEPS, f, x)


def inverse(u: np.ndarray, ways: int) -> np.ndarray:
    """F_W⁻¹(u) for u in [0, 1), linear between the steps of :func:`_inverse`."""
    t = np.asarray(u, np.float64) * _STEPS
    k = t.astype(np.int64)
    table = _inverse(ways)
    low = table[k]
    return low + (table[k + 1] - low) * (t - k)


def draws(salts: np.ndarray, occurrence: np.ndarray) -> np.ndarray:
    """A uniform number in [0, 1) per request, from its salt and its occurrence (splitmix64)."""
    h = np.ascontiguousarray(salts, np.int64).view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    h ^= np.ascontiguousarray(occurrence, np.int64).view(np.uint64) * np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(31)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(29)
    h >>= np.uint64(11)
    return h.astype(np.float64) / float(1 << 53)


@dataclass(frozen=True)
class Sets:
    """A partition's ``ways`` and its requests' ``salts`` (one per request of the stream it plays)."""

    ways: int
    salts: np.ndarray

    def rooms(self, capacity: int, occurrence: np.ndarray) -> np.ndarray:
        """Each request's capacity, P · F_W⁻¹(u), for its key's ``occurrence`` (earlier requests)."""
        return (capacity * inverse(draws(self.salts, occurrence), self.ways)).astype(np.int64)   # ≥ 0: the floor

    def subset(self, index: np.ndarray) -> "Sets":
        return Sets(self.ways, np.asarray(self.salts)[index])


def occurrences(order: np.ndarray, same: np.ndarray) -> np.ndarray:
    """Per request: how many requests of its key came before it (``order``: the requests sorted
    stably by key; ``same``: whether each in ``order`` after the first has the key before it)."""
    n = len(order)
    starts = np.concatenate([[True], ~same])
    first = np.flatnonzero(starts)[np.cumsum(starts) - 1]
    out = np.empty(n, np.int64)
    out[order] = np.arange(n) - first
    return out


class _Fenwick:
    """Prefix sums over request times, one added value at a time."""

    def __init__(self, n: int):
        self.tree = [0] * (n + 1)

    def add(self, i: int, value: int) -> None:
        i += 1
        while i < len(self.tree):
            self.tree[i] += value
            i += i & -i

    def before(self, i: int) -> int:
        """The sum over times < i."""
        total = 0
        while i > 0:
            total += self.tree[i]
            i -= i & -i
        return total


class Part:
    """A partition of ``capacity`` bytes in ``ways``-way sets, request by request, for at most
    ``requests`` requests (the reference): each chunk's last request, size, salt, requests so
    far, whether its stay (since its last miss) was written, and the group of its last
    request; D(L, t) is the sum of the sizes of the chunks last requested in (L, t)."""

    def __init__(self, capacity: int, ways: int, requests: int):
        self.capacity, self.ways = capacity, ways
        self.times = _Fenwick(requests)
        self.last: dict = {}            # key -> [time, size, salt, requests so far, dirty, group]
        self.t = 0

    def _fits(self, time: int, size: int, salt: int, occurrence: int) -> bool:
        room = Sets(self.ways, np.array([salt])).rooms(self.capacity, np.array([occurrence]))[0]
        return self.times.before(self.t) - self.times.before(time + 1) + size <= int(room)

    def request(self, key, size: int, salt: int, write: bool, group: int = 0) -> tuple[bool, int]:
        """(whether the request hits, the bytes of a dirty stay its miss ended: written back)."""
        entry = self.last.get(key)
        hit = entry is not None and self._fits(entry[0], size, salt, entry[3])
        back = 0
        if entry is not None:
            self.times.add(entry[0], -entry[1])
            back = entry[1] if entry[4] and not hit else 0
        self.times.add(self.t, size)
        self.last[key] = [self.t, size, salt, 1 if entry is None else entry[3] + 1,
                          bool(write) or (hit and entry[4]), group]
        self.t += 1
        return hit, back

    def dirty_now(self) -> list:
        """(size, group, still held: its next request would hit) of each chunk whose stay was written."""
        return [(e[1], e[5], self._fits(*e[:4])) for e in self.last.values() if e[4]]


__all__ = ["Part", "Sets", "X_MAX", "draws", "hit_probability", "inverse", "occurrences", "reach"]
