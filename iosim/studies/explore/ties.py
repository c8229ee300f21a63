"""The best candidate, the near-ties around it, and which of those to use.

**Best.** The eligible candidate (fits in shared memory; in the registers too unless
spills are allowed) with the lowest objective; ties go to the other measure (HBM bytes
for time, time for bytes and DRAM), the smaller shared-memory need, the larger tile.
Where the objective needs the L2 model, candidates are replayed in order of their lower
bound until no candidate left un-replayed could beat the best (branch and bound): the
best is then *proven*. A replay budget caps the work; if it runs out first, or a tile that
could be better has too many tile steps to replay, the report says the best is not proven.

**Ties.** Every candidate within ``tolerance`` of the best (objective ≤ best × (1 +
tolerance)) is a near-tie. A candidate whose bounds straddle that line is replayed only
when the practical rule below would prefer it to every proven near-tie (so the
practical choice is settled, usually with one replay); the others are reported as
undecided: they may or may not be near-ties.

**Practical choice** (:data:`PRACTICAL_RULE`): among the near-ties, the real kernel's
tile when it is one; otherwise a tile whose two sides are powers of two, the closest to
square (|log2(B_r/B_c)| smallest), then the best by the objective; otherwise the closest
to square, then the best. It names what to run when the objective cannot tell tiles apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from .candidate import Candidate

PRACTICAL_RULE = ("the real kernel's tile if it is a near-tie; else the near-tie with both sides powers of two, "
                  "closest to square, then best; else the closest to square, then best")
DEFAULT_TIE = 0.01
DEFAULT_REPLAYS = 8


@dataclass(frozen=True)
class Ranking:
    """The outcome of ranking one exploration's candidates."""

    best: Candidate
    best_proven: bool               # no candidate left un-replayed could beat it
    tolerance: float
    members: tuple                  # the near-ties, best first (the best included)
    undecided: tuple                # could be near-ties; not replayed (budget)
    practical: Candidate
    practical_reason: str           # which clause of PRACTICAL_RULE chose it
    replays: int                    # L2 replays the ranking took
    budget: int

    def is_member(self, c: Candidate) -> bool:
        return any(m.block_q == c.block_q and m.block_kv == c.block_kv for m in self.members)


def _pow2(n: int) -> bool:
    return n & (n - 1) == 0


def practical_key(c: Candidate, objective: str, kernel_key: tuple | None) -> tuple:
    """Sort key of :data:`PRACTICAL_RULE` (smallest first)."""
    return ((c.block_q, c.block_kv) != kernel_key, not (_pow2(c.block_q) and _pow2(c.block_kv)), c.squareness(),
            c.rank_key(objective))


def practical_reason(c: Candidate, kernel_key: tuple | None) -> str:
    if (c.block_q, c.block_kv) == kernel_key:
        return "the real kernel's tile"
    if _pow2(c.block_q) and _pow2(c.block_kv):
        return "powers of two, closest to square"
    return "closest to square; no power-of-two tile ties"


def rank(cands: dict, objective: str, allow_spill: bool, tolerance: float, budget: int,
         resolve: Callable[[Candidate], Candidate], kernel_key: tuple | None, max_steps: int | None = None) -> Ranking:
    """Rank ``cands`` ((B_r, B_c) -> Candidate, updated in place by ``resolve``, which
    replays one candidate through the L2 model; only candidates of at most ``max_steps``
    tile steps per head are replayed)."""
    used = 0

    def replayable(c: Candidate) -> bool:
        return max_steps is None or c.steps_per_head <= max_steps

    def eligible() -> list:
        return sorted((c for c in cands.values() if c.eligible(allow_spill)), key=lambda c: c.rank_key(objective))

    def replay(c: Candidate) -> None:
        nonlocal used
        cands[(c.block_q, c.block_kv)] = resolve(c)
        used += 1

    while True:  # the best, by branch and bound on the lower bounds
        el = eligible()
        s = min((c.value(objective)[0] for c in el if c.exact(objective)), default=math.inf)
        pending = [c for c in el if not c.exact(objective) and c.value(objective)[0] < s]
        todo = [c for c in pending if replayable(c)]
        if not todo or used >= budget:
            break
        replay(todo[0])
    exact = [c for c in el if c.exact(objective)]
    best = exact[0] if exact else el[0]
    proven = bool(exact) and not pending
    line = best.value(objective)[1] * (1 + tolerance)
    key = lambda c: practical_key(c, objective, kernel_key)  # noqa: E731
    while True:  # settle the practical choice: replay straddling tiles that would come before it
        el = eligible()
        members = tuple(c for c in el if c.value(objective)[1] <= line)
        practical = min(members, key=key)
        straddle = sorted((c for c in el if c.value(objective)[0] <= line < c.value(objective)[1]), key=key)
        todo = [c for c in straddle if replayable(c)]
        if not todo or used >= budget or key(todo[0]) > key(practical):
            break
        replay(todo[0])
    return Ranking(cands[(best.block_q, best.block_kv)], proven, tolerance, members, tuple(straddle), practical,
                   practical_reason(practical, kernel_key), used, budget)


__all__ = ["Ranking", "rank", "practical_key", "practical_reason", "PRACTICAL_RULE", "DEFAULT_TIE",
           "DEFAULT_REPLAYS"]
