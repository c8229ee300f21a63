"""Check the FlashAttention paper's IO claims against counted traffic (``iosim bounds``).

The checker sweeps the sequence length N, the head dim d and the SRAM size M (in
elements, the paper's unit) over Theorem 2's regime d ≤ M ≤ N·d, *runs* each
algorithm's schedule at every point (counts always come from the engine, never from a
formula), and compares each count with a claim's expression:

================================  ===============================  =========================
claim id                          expression (elements per head)   statement
================================  ===============================  =========================
``theorem2-standard``             N·d + N²                         Thm 2, Θ(Nd + N²)
``theorem2-flash``                N²·d²/M                          Thm 2, Θ(N²d²/M)
``proposition3-lower``            N²·d²/M                          Prop 3 (+ Saha & Ye 2024)
``compulsory``                    4·N·d                            Q, K, V read, O written
================================  ===============================  =========================

Verdict rules (:data:`BAND_LIMIT`, :data:`EXPONENT_TOLERANCE`; printed with every report):

* **Θ claims** hold when the ratio count/expression stays within a band
  (max/min ≤ ``BAND_LIMIT``) *and* the log-log exponents of the count in N, d and M,
  fitted by least squares over the sweep, are each within ``EXPONENT_TOLERANCE`` of the
  expression's own exponents fitted over the same points (for N²d²/M these are exactly
  2, 2, −1; for Nd + N² they are whatever that sum does over the sweep).
* **proposition3-lower** holds when count ≥ N²d²/M (constant 1) at every swept point
  with M ≥ d². Prop. 3 as printed only forbids o(N²d²/M) *for all* M ∈ [d, Nd] (its
  proof uses M = Nd, where the bound is the Nd inputs). Saha & Ye (arXiv 2402.07443)
  prove the bound Ω(N²d²/M) pointwise for M ≥ d², and show it is *not* a lower bound
  for M < d² (standard attention itself goes below it there), so points with M < d² are
  reported but not judged. The theorems give no constant; 1 is the stated one.
* **compulsory** holds when every point reads all of Q, K and V at least once and
  writes all of O at least once (exact integer comparison per tensor).

Algorithms: the built-in schedules (``standard``, ``fa1``, ``fa2``) and ``row-by-row``,
a demonstration that the checker fails what it should: FA2's loop order run with
B_r = 1, so K and V are re-read from HBM for every query row (N passes over K and V).

Block rules (how B_r, B_c follow from M and d at each point):

* ``paper`` — FA1 Algorithm 1 line 1: B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d). Made for
  FA1's loop order (K/V outer): its repeated traffic falls with T_c = ⌈N/B_c⌉. FA2
  re-reads K and V once per *query* block, T_r = ⌈N/B_r⌉ times, and B_r is capped at
  d: for M > 4d² FA2's count stops falling with M, and ``theorem2-flash`` fails there.
  The report says so and gives the verdict on the uncapped points separately.
* ``outer`` — the same two sizes, given by loop order: the outer loop's block gets
  ⌈M/4d⌉ and the inner loop's min(⌈M/4d⌉, d). For FA1 this is the paper's rule; for
  FA2 it is its transpose (B_r = ⌈M/4d⌉, B_c = min(⌈M/4d⌉, d)), which keeps the same
  SRAM footprint and makes FA2's count Θ(N²d²/M) over the whole regime.

Feasibility: at each point the schedule's on-chip tiles must fit in M elements
(the engine's residency model, ``kernel`` placement). Points where they do not — e.g.
M < 3d, where Q_i, K_j and V_j of one row each already need 3d — are excluded and listed.

>>> report = check_bounds("fa-paper-a100", ["fa1"], ["theorem2-flash"], seq_lens=[1024, 2048, 4096],
...                       head_dims=[64, 128])
>>> report.verdicts[0].holds
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from ..dtypes import width
from ..errors import ProblemError
from ..hardware import HardwareProfile
from ..workload.problem import BlockSizes, Problem, paper_block_sizes, sram_elements
from .progress import progress_map
from ..run.simulate import resolve_profile, simulate
from ..models.theory import FLASH_EXPRESSION, STANDARD_EXPRESSION, flash_accesses, standard_accesses

#: Θ claims: the ratio count/expression may vary by at most this factor over the sweep.
BAND_LIMIT = 4
#: Θ claims: fitted exponents of count and expression may differ by at most this much.
EXPONENT_TOLERANCE = 0.15
#: proposition3-lower: count ≥ LOWER_CONSTANT · N²d²/M wherever M ≥ d².
LOWER_CONSTANT = 1
#: a capacity no tile set reaches: points are simulated unconstrained, then compared with M
_UNLIMITED_BYTES = 1 << 60
#: block-sparse points whose T_r × T_c mask has more blocks than this are skipped (memory)
MAX_MASK_BLOCKS = 1 << 20


# --------------------------------------------------------------------------------------
# algorithms and block rules
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Algorithm:
    """A loop order as the checker runs it.

    ``schedule``: a name in :data:`iosim.schedules.SCHEDULES` or a schedule function.
    ``outer``: the axis of the outer loop, ``"kv"`` (FA1: K/V blocks stay, Q and O are
    re-read) or ``"q"`` (FA2: Q blocks stay, K and V are re-read); ``None`` for a loop
    order without blocks. ``block_q``: a fixed B_r that overrides the block rule.
    """

    name: str
    schedule: str | Callable
    outer: str | None
    description: str
    block_q: int | None = None
    passes: str = "forward"
    block_mask: str | None = None

    @property
    def rereads(self) -> str:
        """The tensors this loop order re-reads once per outer block."""
        return {"q": "K and V", "kv": "Q and O"}.get(self.outer or "", "nothing")


#: The algorithms ``iosim bounds --algo`` accepts.
ALGORITHMS: dict[str, Algorithm] = {
    "standard": Algorithm("standard", "standard", None, "Algorithm 0: S and P through HBM"),
    "fa1": Algorithm("fa1", "fa1", "kv", "FlashAttention Algorithm 1: K/V outer loop"),
    "fa2": Algorithm("fa2", "fa2", "q", "FlashAttention-2 Algorithm 1: Q outer loop"),
    # The failing-claim demonstration: FA2's loop order with B_r = 1, so K and V are re-read
    # from HBM for every query row, N passes whatever M is.
    "row-by-row": Algorithm("row-by-row", "fa2", "q", "FA2's loop order with B_r = 1: K, V re-read per query row",
                            block_q=1),
    # Theorem 5: the backward passes (Algorithms 3 and 4, FA2's Algorithm 2; both flash
    # backward passes keep K/V blocks in the outer loop).
    "standard-backward": Algorithm("standard-backward", "standard", None, "Algorithm 3: P, dP, dS through HBM",
                                   passes="backward"),
    "fa1-backward": Algorithm("fa1-backward", "fa1", "kv", "FlashAttention Algorithm 4: K/V outer loop",
                              passes="backward"),
    "fa2-backward": Algorithm("fa2-backward", "fa2", "kv", "FlashAttention-2 Algorithm 2: K/V outer loop",
                              passes="backward"),
    # Proposition 4: block-sparse FlashAttention (Algorithm 5) with a random mask of density
    # about 1/4 (plus the diagonal band, so every query block has a key block).
    "fa1-block-sparse": Algorithm("fa1-block-sparse", "fa1", "kv", "Algorithm 5: FA1 over a random:0.25 block mask",
                                  block_mask="random:0.25:0"),
}
#: the same row-by-row algorithm, importable by name
row_by_row = ALGORITHMS["row-by-row"]

BLOCK_RULES = {
    "paper": "B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d) (FA1 Algorithm 1 line 1)",
    "outer": "outer loop's block ⌈M/4d⌉, inner loop's min(⌈M/4d⌉, d) (FA1: the paper's rule; FA2: its transpose)",
}


def get_algorithm(name: str | Algorithm) -> Algorithm:
    if isinstance(name, Algorithm):
        return name
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ProblemError(f"unknown algorithm {name!r}; choose from {', '.join(ALGORITHMS)}") from None


def rule_blocks(rule: str, algorithm: Algorithm, M: int, d: int) -> tuple[BlockSizes, str | None]:
    """(B_r, B_c) at SRAM size ``M`` (elements) and head dim ``d``, and which block the
    rule capped at d (``"B_r"``, ``"B_c"`` or None)."""
    if rule not in BLOCK_RULES:
        raise ProblemError(f"unknown block rule {rule!r}; choose from {', '.join(BLOCK_RULES)}")
    paper = paper_block_sizes(M, d)       # B_c = ⌈M/4d⌉, B_r = min(B_c, d)
    big, small = paper.block_kv, paper.block_q
    if rule == "outer" and algorithm.outer == "q":
        block_q, block_kv, capped = big, small, "B_c" if small < big else None
    else:
        block_q, block_kv, capped = small, big, "B_r" if small < big else None
    if algorithm.block_q is not None:
        block_q, capped = algorithm.block_q, None if capped == "B_r" else capped
    return BlockSizes(block_q, block_kv), capped


# --------------------------------------------------------------------------------------
# claims
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    expression: str
    kind: str            # "theta", "band" (Θ judged by the ratio band alone), "lower" or "compulsory"
    rule: str
    value: Callable[..., Fraction]   # (N, d, M, s): s is the block-mask density (1 without a mask)


def _nd_n2(N, d, M, s=1):
    return Fraction(standard_accesses(N, N, d))


def _n2d2_m(N, d, M, s=1):
    return flash_accesses(N, N, d, M)


def _nd_n2d2s_m(N, d, M, s=1):
    return Fraction(N * d) + Fraction(N * N * d * d, M) * Fraction(s).limit_denominator(10**9)


CLAIMS: dict[str, Claim] = {
    "theorem2-standard": Claim(
        "theorem2-standard", "Theorem 2: standard attention needs Θ(Nd + N²) HBM accesses", STANDARD_EXPRESSION,
        "theta",
        f"holds if max/min of count ÷ (N·d + N²) ≤ {BAND_LIMIT} and the fitted exponents of the count in N, d, M "
        f"are each within {EXPONENT_TOLERANCE} of those of N·d + N² over the same points", _nd_n2),
    "theorem2-flash": Claim(
        "theorem2-flash", "Theorem 2: FlashAttention needs Θ(N²d²/M) HBM accesses", FLASH_EXPRESSION, "theta",
        f"holds if max/min of count ÷ (N²·d²/M) ≤ {BAND_LIMIT} and the fitted exponents of the count are within "
        f"{EXPONENT_TOLERANCE} of N: 2, d: 2, M: −1", _n2d2_m),
    "proposition3-lower": Claim(
        "proposition3-lower", "Proposition 3: no exact algorithm does o(N²d²/M) HBM accesses for all M in [d, Nd]",
        FLASH_EXPRESSION, "lower",
        f"holds if count ≥ {LOWER_CONSTANT}·N²·d²/M at every point with M ≥ d² (the pointwise form Saha & Ye prove; "
        "points with M < d² are not judged, where N²·d²/M is not a lower bound)", _n2d2_m),
    "compulsory": Claim(
        "compulsory", "Every input read once and the output written once", "4·N·d", "compulsory",
        "holds if at every point Q, K and V are each read ≥ N·d elements and O written ≥ N·d elements "
        "(backward: Q, K, V, dO read and dQ, dK, dV written)",
        lambda N, d, M, s=1: Fraction(4 * N * d)),
    "theorem5-standard-backward": Claim(
        "theorem5-standard-backward", "Theorem 5: the standard backward pass needs Θ(Nd + N²) HBM accesses",
        STANDARD_EXPRESSION, "theta",
        "as theorem2-standard, on the backward pass's count", _nd_n2),
    "theorem5-flash-backward": Claim(
        "theorem5-flash-backward", "Theorem 5: the FlashAttention backward pass needs Θ(N²d²/M) HBM accesses",
        FLASH_EXPRESSION, "theta",
        "as theorem2-flash, on the backward pass's count", _n2d2_m),
    "proposition4-block-sparse": Claim(
        "proposition4-block-sparse",
        "Proposition 4: block-sparse FlashAttention needs Θ(Nd + N²d²s/M) HBM accesses (s: nonzero-block fraction)",
        "N·d + N²·d²·s/M", "band",
        f"holds if max/min of count ÷ (N·d + N²·d²·s/M), with each point's own s, ≤ {BAND_LIMIT}. Exponents are "
        "reported but not judged: the count weighs the two terms differently (2·N·d vs about 12·N²·d²·s/M), so "
        "where they are of similar size its local slope differs from the expression's while the ratio stays "
        "bounded, which is what Θ asks", _nd_n2d2s_m),
}
DEFAULT_CLAIMS = {
    "standard": ("theorem2-standard", "proposition3-lower", "compulsory"),
    "standard-backward": ("theorem5-standard-backward", "compulsory"),
    "fa1-backward": ("theorem5-flash-backward", "compulsory"),
    "fa2-backward": ("theorem5-flash-backward", "compulsory"),
    "fa1-block-sparse": ("proposition4-block-sparse", "compulsory"),
}
FLASH_DEFAULT_CLAIMS = ("theorem2-flash", "proposition3-lower", "compulsory")


def default_claims(algorithm: Algorithm) -> tuple[str, ...]:
    return DEFAULT_CLAIMS.get(algorithm.name, FLASH_DEFAULT_CLAIMS)


# --------------------------------------------------------------------------------------
# one simulated point
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Point:
    """One algorithm at one (N, d, M): the exact per-head counts and whether it fits."""

    algorithm: str
    N: int
    d: int
    M: int
    block_q: int
    block_kv: int
    capped: str | None
    count: int                     # HBM elements moved, per head
    reads: dict                    # tensor -> elements read, per head
    writes: dict                   # tensor -> elements written, per head
    sram_peak_bytes: int
    sram_bytes: int                # M in bytes
    density: float = 1.0           # s: the fraction of (i, j) blocks visited (block-sparse only)
    passes: str = "forward"

    @property
    def feasible(self) -> bool:
        return self.sram_peak_bytes <= self.sram_bytes

    def to_dict(self) -> dict:
        return {"algorithm": self.algorithm, "N": self.N, "d": self.d, "M": self.M, "block_q": self.block_q,
                "block_kv": self.block_kv, "capped": self.capped, "count_elements": self.count,
                "sram_peak_bytes": self.sram_peak_bytes, "sram_bytes": self.sram_bytes, "feasible": self.feasible}


_WORKER_PROFILE: HardwareProfile | None = None


def _set_worker_profile(profile: HardwareProfile) -> None:
    global _WORKER_PROFILE
    _WORKER_PROFILE = profile


def count_point(task: tuple) -> Point:
    """Simulate one point; ``task`` = (algorithm, N, d, M, block rule, dtype)."""
    algorithm, N, d, M, rule, dtype = task
    blocks, capped = rule_blocks(rule, algorithm, M, d)
    run = run_blocks((algorithm, N, d, blocks.block_q, blocks.block_kv, dtype))
    return _point(algorithm, N, d, M, blocks, capped, dtype, run)


def run_blocks(key: tuple) -> tuple:
    """Run the schedule once; ``key`` = (algorithm, N, d, B_r, B_c, dtype).

    Returns (elements per head, reads per tensor, writes per tensor, peak shared-memory
    bytes). Shared memory is unlimited here: the peak is compared with each M afterwards,
    so every M that gives the same blocks shares one run. Module-level so that
    :func:`~iosim.studies.progress.progress_map` can run it in worker processes.
    """
    algorithm, N, d, block_q, block_kv, dtype = key
    problem = Problem(seq_len=N, head_dim=d, dtype=dtype)
    r = simulate(_WORKER_PROFILE, algorithm.schedule, problem, block_q=block_q, block_kv=block_kv,
                 sram_bytes=_UNLIMITED_BYTES, passes=algorithm.passes, block_mask=algorithm.block_mask)
    bh = problem.heads_total
    reads = {n: t.read_elements // bh for n, t in r.tensors.items()}
    writes = {n: t.write_elements // bh for n, t in r.tensors.items()}
    density = r.options.get("block_density_active", 1.0)
    return r.hbm.total_elements // bh, reads, writes, r.sram.peak_bytes, density


def _point(algorithm, N, d, M, blocks, capped, dtype, run) -> Point:
    count, reads, writes, peak, density = run
    return Point(algorithm.name, N, d, M, blocks.block_q, blocks.block_kv, capped, count, reads, writes, peak,
                 M * width(dtype), density, algorithm.passes)


# --------------------------------------------------------------------------------------
# verdicts
# --------------------------------------------------------------------------------------
@dataclass
class Verdict:
    """One claim checked for one algorithm over the sweep."""

    claim: Claim
    algorithm: str
    holds: bool
    ratio_min: float | None
    ratio_max: float | None
    exponents: dict              # fitted exponents of the count
    claim_exponents: dict        # fitted exponents of the expression, same points
    points: int                  # points judged
    reason: str                  # why it holds or fails, in one sentence
    worst: dict | None = None    # the point with the most extreme ratio
    notes: list = field(default_factory=list)
    uncapped: "Verdict | None" = None

    def to_dict(self) -> dict:
        d = {
            "id": self.claim.id, "algorithm": self.algorithm, "statement": self.claim.statement,
            "expression": self.claim.expression, "holds": self.holds,
            "ratio_min": self.ratio_min, "ratio_max": self.ratio_max,
            "exponents": self.exponents, "claim_exponents": self.claim_exponents,
            "rule": self.claim.rule, "points": self.points, "reason": self.reason, "worst": self.worst,
            "notes": list(self.notes),
        }
        if self.uncapped is not None:
            d["uncapped"] = self.uncapped.to_dict()
        return d


def fit_exponents(points: Sequence[tuple[int, int, int]], values: Sequence[float]) -> dict:
    """Least-squares exponents of ``values`` ≈ C·N^a·d^b·M^c over ``points``.

    A variable that takes a single value in the sweep gets ``None`` (it cannot be fitted).
    """
    X = np.log(np.asarray(points, dtype=float))
    y = np.log(np.asarray(values, dtype=float))
    varied = [k for k in range(3) if len(set(p[k] for p in points)) > 1]
    out = {"N": None, "d": None, "M": None}
    if not varied or len(points) <= len(varied):
        return out
    A = np.column_stack([np.ones(len(points))] + [X[:, k] for k in varied])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    for k, c in zip(varied, coef[1:]):
        out["NdM"[k]] = round(float(c), 4)
    return out


def judge(claim: Claim, algorithm: str, points: Sequence[Point], *, with_uncapped: bool = True) -> Verdict:
    """The verdict of ``claim`` over ``points`` (all feasible and in the regime)."""
    if not points:
        raise ProblemError(f"{claim.id} for {algorithm}: no point of the sweep can be judged "
                           "(all outside d ≤ M ≤ N·d or the tiles do not fit)")
    if claim.kind == "band":
        return _judge_theta(claim, algorithm, points, check_exponents=False)
    if claim.kind == "theta":
        v = _judge_theta(claim, algorithm, points)
        if with_uncapped and not v.holds:
            _explain_cap(v, claim, algorithm, points)
        return v
    if claim.kind == "lower":
        return _judge_lower(claim, algorithm, points)
    return _judge_compulsory(claim, algorithm, points)


def _ratios(claim, points):
    return [Fraction(p.count) / claim.value(p.N, p.d, p.M, p.density) for p in points]


def _claim_values(claim, points) -> list[float]:
    return [float(claim.value(p.N, p.d, p.M, p.density)) for p in points]


def _fits(claim, points) -> tuple[dict, dict]:
    """The fitted exponents of the count and of the claim's expression over ``points``."""
    coords = [(p.N, p.d, p.M) for p in points]
    return fit_exponents(coords, [p.count for p in points]), fit_exponents(coords, _claim_values(claim, points))


def _worst(p: Point, ratio: Fraction) -> dict:
    return {"N": p.N, "d": p.d, "M": p.M, "block_q": p.block_q, "block_kv": p.block_kv,
            "count_elements": p.count, "ratio": float(ratio)}


def _judge_theta(claim, algorithm, points, check_exponents: bool = True) -> Verdict:
    ratios = _ratios(claim, points)
    lo, hi = min(ratios), max(ratios)
    got, want = _fits(claim, points)
    failures = []
    if hi > BAND_LIMIT * lo:
        failures.append(f"the ratio varies {float(hi / lo):,.1f}× ({float(lo):.3g} to {float(hi):.3g}), "
                        f"more than the {BAND_LIMIT}× band")
    for var in "NdM" if check_exponents else "":
        if got[var] is not None and abs(got[var] - want[var]) > EXPONENT_TOLERANCE:
            failures.append(f"the count goes as {var}^{_exp(got[var])}, the claim as {var}^{_exp(want[var])}")
    holds = not failures
    if holds:
        reason = (f"ratio stays in [{float(lo):.3g}, {float(hi):.3g}] ({float(hi / lo):.2f}× band)"
                  + (f" and the exponents match within {EXPONENT_TOLERANCE}" if check_exponents else ""))
    else:
        reason = "; ".join(failures)
    extreme = max(range(len(points)), key=lambda k: ratios[k] if hi / lo > 1 else 0)
    return Verdict(claim, algorithm, holds, float(lo), float(hi), got, want, len(points), reason,
                   _worst(points[extreme], ratios[extreme]))


def _rounded(x: float) -> float:
    """An exponent rounded to two decimals, without a -0.0 (so it never prints "-0.00")."""
    return round(x, 2) + 0.0


def _exp(x: float) -> str:
    """An exponent to two decimals, without a "-0.00"."""
    return f"{_rounded(x):.2f}"


def _explain_cap(v: Verdict, claim, algorithm, points) -> None:
    """Say whether the block rule's cap at d is what breaks the claim, and judge without it."""
    alg = ALGORITHMS.get(algorithm)
    relevant = "B_r" if alg is not None and alg.outer == "q" else "B_c"
    capped = [p for p in points if p.capped == relevant]
    if not capped:
        return
    lo_M = min(p.M for p in capped)
    v.notes.append(
        f"{relevant} is capped at d by the block rule at {len(capped)} of {len(points)} points (M > 4d², from "
        f"M = {lo_M:,}): {algorithm} re-reads {alg.rereads if alg else 'its inputs'} once per "
        f"{'query' if relevant == 'B_r' else 'key'} block, so its count stops falling as M grows there"
        + (" — use --block-rule outer for a rule suited to this loop order" if relevant == "B_r" else ""))
    rest = [p for p in points if p.capped != relevant]
    if len(rest) > 3:
        v.uncapped = judge(claim, algorithm, rest, with_uncapped=False)


def _judge_lower(claim, algorithm, points) -> Verdict:
    judged = [p for p in points if p.M >= p.d * p.d]
    if not judged:
        raise ProblemError(f"{claim.id}: no point of the sweep has M ≥ d², where the bound is judged")
    ratios = _ratios(claim, judged)
    got, want = _fits(claim, points)
    k = min(range(len(judged)), key=ratios.__getitem__)
    lo, hi = ratios[k], max(ratios)
    below = [p for p, r in zip(judged, ratios) if r < LOWER_CONSTANT]
    if below:
        reason = (f"the count falls below {LOWER_CONSTANT}·N²·d²/M at {len(below)} of {len(judged)} points with "
                  f"M ≥ d² (lowest ratio {float(lo):.3g} at N={judged[k].N:,}, d={judged[k].d}, M={judged[k].M:,})")
    else:
        reason = f"count ≥ {float(lo):.3g}·N²·d²/M at all {len(judged)} points with M ≥ d²"
    v = Verdict(claim, algorithm, not below, float(lo), float(hi), got, want, len(judged), reason,
                _worst(judged[k], ratios[k]))
    small = [p for p in points if p.M < p.d * p.d]
    if small:
        all_lo = min(_ratios(claim, small))
        v.notes.append(f"{len(small)} points with M < d² not judged (lowest ratio there {float(all_lo):.3g})")
    return v


def _judge_compulsory(claim, algorithm, points) -> Verdict:
    missing = []
    for p in points:
        if p.passes == "backward":
            need = {**{(t, "read"): p.N * p.d for t in ("Q", "K", "V", "dO")},
                    **{(t, "write"): p.N * p.d for t in ("dQ", "dK", "dV")}}
        else:
            need = {("Q", "read"): p.N * p.d, ("K", "read"): p.N * p.d, ("V", "read"): p.N * p.d,
                    ("O", "write"): p.N * p.d}
        for (tensor, way), n in need.items():
            got = (p.reads if way == "read" else p.writes).get(tensor, 0)
            if got < n:
                missing.append((p, f"{tensor} {way} {got:,} < N·d = {n:,} elements"))
    ratios = _ratios(claim, points)
    got_exp, want = _fits(claim, points)
    k = min(range(len(points)), key=ratios.__getitem__)
    if missing:
        p, what = missing[0]
        reason = f"{len(missing)} shortfalls; first at N={p.N:,}, d={p.d}, M={p.M:,}: {what}"
    else:
        reason = (f"{'Q, K, V, dO each read and dQ, dK, dV' if points[0].passes == 'backward' else 'Q, K, V each read and O'} "
                  f"written in full at all {len(points)} points")
    return Verdict(claim, algorithm, not missing, float(min(ratios)), float(max(ratios)), got_exp, want,
                   len(points), reason, _worst(points[k], ratios[k]))


# --------------------------------------------------------------------------------------
# the sweep
# --------------------------------------------------------------------------------------
@dataclass
class BoundsReport:
    profile: str
    profile_M: int
    dtype: str
    block_rule: str
    seq_lens: list
    head_dims: list
    sram: list | None               # the M values asked for (None: the default grid)
    sram_steps: int | None
    points: list                    # every simulated Point (feasible or not)
    verdicts: list                  # Verdict, in (algorithm, claim) order
    excluded: list                  # {"N", "d", "M", "algorithm", "reason"}
    algorithms: list
    runs: int = 0                   # distinct simulations (points with the same blocks share one)
    skipped: list = field(default_factory=list)   # default claims the sweep cannot judge, with why

    @property
    def holds(self) -> bool:
        return all(v.holds for v in self.verdicts)

    def feasible(self, algorithm: str) -> list:
        return [p for p in self.points if p.algorithm == algorithm and p.feasible]

    def reference_N(self) -> int:
        """The N the report's profile-point table uses: 8,192 (the paper's example) if swept."""
        return 8192 if 8192 in self.seq_lens else max(self.seq_lens)

    def profile_rows(self) -> list[dict]:
        """Every algorithm at the profile's own M: counts and the Theorem 2 ratios."""
        rows = []
        for p in self.points:
            if p.M != self.profile_M or not p.feasible:
                continue
            flash = _n2d2_m(p.N, p.d, p.M)
            rows.append({
                "algorithm": p.algorithm, "N": p.N, "d": p.d, "M": p.M, "block_q": p.block_q,
                "block_kv": p.block_kv, "count_elements": p.count,
                "ratio_flash": float(p.count / flash), "ratio_standard": float(p.count / _nd_n2(p.N, p.d, p.M)),
                "theorem2_expression_ratio": float(_nd_n2(p.N, p.d, p.M) / flash),
            })
        return rows

    def sram_rule(self) -> str:
        if self.sram is not None:
            return "the listed values, where d ≤ M ≤ N·d"
        if self.sram_steps is not None:
            return f"{self.sram_steps} values evenly spaced in log M over [d, N·d] at each (N, d), and the profile's M"
        return "d·2^k in [d, N·d] at each (N, d), and the profile's M"

    def to_dict(self) -> dict:
        return {
            "claims": [v.to_dict() for v in self.verdicts],
            "holds": self.holds,
            "profile": self.profile, "profile_M_elements": self.profile_M, "dtype": self.dtype,
            "block_rule": self.block_rule, "block_rule_text": BLOCK_RULES[self.block_rule],
            "algorithms": self.algorithms, "simulations": self.runs,
            "sweep": {"N": self.seq_lens, "d": self.head_dims, "M": self.sram, "M_rule": self.sram_rule()},
            "verdict_rules": {"band_limit": BAND_LIMIT, "exponent_tolerance": EXPONENT_TOLERANCE,
                              "lower_constant": LOWER_CONSTANT},
            "excluded": self.excluded, "skipped_claims": self.skipped,
            "profile_point": self.profile_rows(),
            "points": [p.to_dict() for p in self.points],
        }


def default_sram_grid(N: int, d: int, steps: int | None = None) -> list[int]:
    """The M values swept at (N, d): d, 2d, 4d, … up to N·d (and N·d itself), or with
    ``steps``, that many values spaced evenly in log M from d to N·d (duplicates dropped)."""
    if steps is not None:
        if steps < 2:
            raise ProblemError(f"--sram-steps must be at least 2, got {steps}")
        return sorted({int(round(M)) for M in np.geomspace(d, N * d, steps)} | {d, N * d})
    grid, M = [], d
    while M <= N * d:
        grid.append(M)
        M *= 2
    if grid[-1] != N * d:
        grid.append(N * d)
    return grid


def check_bounds(
    hw: str | os.PathLike | HardwareProfile,
    algorithms: Sequence[str | Algorithm],
    claims: Sequence[str] | None = None,
    *,
    seq_lens: Sequence[int] = (512, 1024, 2048, 4096, 8192, 16384),
    head_dims: Sequence[int] = (64, 128),
    sram: Sequence[int] | None = None,
    sram_steps: int | None = None,
    block_rule: str = "paper",
    dtype: str = "fp16",
    jobs: int | None = None,
    progress: bool | None = None,
) -> BoundsReport:
    """Sweep, simulate and judge: the whole of ``iosim bounds`` without the printing.

    ``sram``: the M values (elements) to sweep; by default M = d·2^k up to N·d for each
    (N, d), plus the profile's own M; ``sram_steps`` instead spaces that many values
    evenly in log M over [d, N·d] at each (N, d). ``claims``: claim ids, applied to every algorithm;
    by default each algorithm gets its family's Theorem 2 claim, proposition3-lower and
    compulsory.
    """
    profile = resolve_profile(hw)
    algos = [get_algorithm(a) for a in algorithms]
    if not algos:
        raise ProblemError("give at least one algorithm")
    for c in claims or ():
        if c not in CLAIMS:
            raise ProblemError(f"unknown claim {c!r}; choose from {', '.join(CLAIMS)}")
    if block_rule not in BLOCK_RULES:
        raise ProblemError(f"unknown block rule {block_rule!r}; choose from {', '.join(BLOCK_RULES)}")
    _check_positive("seq-len", seq_lens)
    _check_positive("head-dim", head_dims)
    if sram is not None:
        _check_positive("sram", sram)
    width(dtype)
    profile_M = sram_elements(profile.scratchpad.per_block_bytes, dtype)

    coords, excluded = [], []
    for N in sorted(set(seq_lens)):
        for d in sorted(set(head_dims)):
            grid = sorted(set(sram)) if sram is not None else sorted(set(default_sram_grid(N, d, sram_steps)) | {profile_M})
            for M in grid:
                if d <= M <= N * d:
                    coords.append((N, d, M))
                elif sram is not None or M == profile_M:
                    excluded.append({"N": N, "d": d, "M": M, "algorithm": None,
                                     "reason": f"outside Theorem 2's regime d ≤ M ≤ N·d ({d:,} ≤ M ≤ {N * d:,})"})
    if not coords:
        raise ProblemError("no point of the sweep lies in Theorem 2's regime d ≤ M ≤ N·d; "
                           "widen --sram or --seq-len")

    planned = [(a, N, d, M, *rule_blocks(block_rule, a, M, d)) for a in algos for (N, d, M) in coords]
    # A block mask is a T_r × T_c matrix; at the smallest M it would have billions of
    # entries, so those points are reported and skipped rather than exhausting memory.
    kept = []
    for a, N, d, M, b, capped in planned:
        square = Problem(seq_len=N, head_dim=d, dtype=dtype)
        t_r, t_c = b.num_q_blocks(square), b.num_kv_blocks(square)
        if a.block_mask and t_r * t_c > MAX_MASK_BLOCKS:
            excluded.append({"N": N, "d": d, "M": M, "algorithm": a.name,
                             "reason": f"block mask of {t_r:,} × {t_c:,} blocks is over the "
                                       f"{MAX_MASK_BLOCKS:,}-block limit"})
        else:
            kept.append((a, N, d, M, b, capped))
    planned = kept
    keys = list(dict.fromkeys((a, N, d, b.block_q, b.block_kv, dtype) for a, N, d, M, b, _ in planned))
    parallel_ok = all(a.name in ALGORITHMS and ALGORITHMS[a.name] == a for a in algos)
    runs = progress_map(run_blocks, keys, label="iosim bounds", jobs=jobs if parallel_ok else 1,
                        initializer=_set_worker_profile, initargs=(profile,), progress=progress)
    _set_worker_profile(None)
    by_key = dict(zip(keys, runs))
    points = [_point(a, N, d, M, b, capped, dtype, by_key[a, N, d, b.block_q, b.block_kv, dtype])
              for a, N, d, M, b, capped in planned]
    for p in points:
        if not p.feasible:
            excluded.append({"N": p.N, "d": p.d, "M": p.M, "algorithm": p.algorithm,
                             "reason": f"tiles need {p.sram_peak_bytes:,} B of SRAM > M = {p.M:,} elements "
                                       f"({p.sram_bytes:,} B) with B_r={p.block_q}, B_c={p.block_kv}"})

    verdicts, skipped = [], []
    for a in algos:
        feasible = [p for p in points if p.algorithm == a.name and p.feasible]
        for cid in (claims or default_claims(a)):
            try:
                verdicts.append(judge(CLAIMS[cid], a.name, feasible))
            except ProblemError as exc:
                if claims:          # asked for by name: a sweep that cannot judge it is bad input
                    raise
                skipped.append({"id": cid, "algorithm": a.name, "reason": str(exc)})
    if not verdicts:
        raise ProblemError("no claim can be judged on this sweep: " + "; ".join(s["reason"] for s in skipped))
    return BoundsReport(profile.name, profile_M, dtype, block_rule, sorted(set(seq_lens)), sorted(set(head_dims)),
                        None if sram is None else sorted(set(sram)), sram_steps, points, verdicts, excluded,
                        [a.name for a in algos], len(keys), skipped)


def _check_positive(name: str, values: Sequence[int]) -> None:
    if not values:
        raise ProblemError(f"--{name}: give at least one value")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ProblemError(f"--{name}: values must be positive integers, got {v!r}")


# --------------------------------------------------------------------------------------
# text report
# --------------------------------------------------------------------------------------
def _fmt_exp(got, want) -> str:
    if got is None:
        return "—"
    return f"{_rounded(got):+.2f} ({_rounded(want):+.2f})"


def _exp_cells(v: Verdict) -> list[str]:
    """The N, d and M exponents of a verdict, each as "count (claim)"."""
    return [_fmt_exp(v.exponents[k], v.claim_exponents[k]) for k in "NdM"]


def render_bounds(report: BoundsReport) -> str:
    """The human-readable report: verdict table, rules, reasons, the profile's point."""
    from ..report.tables import render_table

    lines = [
        f"iosim bounds: {', '.join(report.algorithms)} on {report.profile} "
        f"(its M = {report.profile_M:,} {report.dtype} elements per block); block rule {report.block_rule}: "
        f"{BLOCK_RULES[report.block_rule]}",
        _sweep_line(report),
        "",
    ]
    rows = []
    for v in report.verdicts:
        rows.append([v.claim.id, v.algorithm, v.claim.expression, "HOLDS" if v.holds else "FAILS",
                     f"{v.ratio_min:.3g}", f"{v.ratio_max:.3g}", *_exp_cells(v), str(v.points)])
    lines.append(render_table(rows, ["claim", "algorithm", "expression", "verdict", "ratio min", "ratio max",
                                     "exp N (claim)", "exp d (claim)", "exp M (claim)", "points"], "lllllrrrrr"))
    lines.append("")
    lines.append("ratio = counted HBM elements per head ÷ expression; exp = log-log least-squares exponent of the "
                 "count (of the expression) over the judged points")
    lines.append("")
    for v in report.verdicts:
        lines.append(f"{v.claim.id} / {v.algorithm}: {'holds' if v.holds else 'FAILS'}: {v.reason}.")
        for note in v.notes:
            lines.append(f"    note: {note}")
        if v.uncapped is not None:
            u = v.uncapped
            exp_n, exp_d, exp_m = _exp_cells(u)
            lines.append(f"    without the capped points ({u.points} points): {'holds' if u.holds else 'fails'}; "
                         f"{u.reason}; exponents N {exp_n}, d {exp_d}, M {exp_m}")
    for sk in report.skipped:
        lines.append(f"{sk['id']} / {sk['algorithm']}: not judged: {sk['reason']}")
    lines.append("")
    lines.append("verdict rules:")
    for cid in dict.fromkeys(v.claim.id for v in report.verdicts):
        lines.append(f"  {cid}: {CLAIMS[cid].rule}")
    prof = _profile_table(report)
    if prof:
        lines += ["", prof]
    if report.excluded:
        lines += ["", _excluded_summary(report)]
    return "\n".join(lines)


def _sweep_line(report: BoundsReport) -> str:
    def vals(xs):
        return ", ".join(f"{x:,}" for x in xs) if len(xs) <= 6 else f"{xs[0]:,} … {xs[-1]:,} ({len(xs)} values)"

    M = vals(report.sram) if report.sram else report.sram_rule()
    judged = len({(p.N, p.d, p.M) for p in report.points})
    return (f"sweep: N = {vals(report.seq_lens)}; d = {vals(report.head_dims)}; M = {M}: {judged:,} (N, d, M) "
            f"points, {report.runs:,} distinct simulations")


def _profile_table(report: BoundsReport) -> str:
    ref = report.reference_N()
    rows = [r for r in report.profile_rows() if r["N"] == ref]
    if not rows:
        return ""
    table = []
    for r in rows:
        table.append([r["algorithm"], f"{r['d']}", f"{r['block_q']}×{r['block_kv']}", f"{r['count_elements']:,}",
                      f"{r['ratio_flash']:.2f}", f"{r['ratio_standard']:.2f}"])
    from ..report.tables import render_table

    out = [f"at the profile's M = {report.profile_M:,} elements, N = {ref:,}:",
           render_table(table, ["algorithm", "d", "B_r×B_c", "count (elements/head)",
                                            "÷ N²d²/M", "÷ (Nd + N²)"], "lrrrrr")]
    for d in sorted({r["d"] for r in rows}):
        r = next(x for x in rows if x["d"] == d)
        out.append(f"Theorem 2's expressions alone: (N·d + N²) ÷ (N²·d²/M) = {r['theorem2_expression_ratio']:.2f} "
                   f"at d = {d} (constants ignored)")
    counted = {(r["algorithm"], r["d"]): r["count_elements"] for r in rows}
    for d in sorted({r["d"] for r in rows}):
        for flash in ("fa1", "fa2"):
            if ("standard", d) in counted and (flash, d) in counted:
                out.append(f"counted: standard ÷ {flash} = {counted['standard', d] / counted[flash, d]:.2f} at d = {d}")
    return "\n".join(out)


def _excluded_summary(report: BoundsReport) -> str:
    outside = [e for e in report.excluded if e["algorithm"] is None]
    tight = [e for e in report.excluded if e["algorithm"] is not None]
    out = ["excluded points (listed in --format json):"]
    if outside:
        ex = outside[0]
        out.append(f"  {len(outside)} outside d ≤ M ≤ N·d, e.g. N={ex['N']:,}, d={ex['d']}, M={ex['M']:,}")
    if tight:
        by_algo: dict = {}
        for e in tight:
            by_algo.setdefault(e["algorithm"], []).append(e)
        for algo, es in by_algo.items():
            small = max(e["M"] / e["d"] for e in es)
            out.append(f"  {algo}: {len(es)} where the tiles do not fit in M (all with M ≤ {small:g}·d), "
                       f"e.g. N={es[0]['N']:,}, d={es[0]['d']}, M={es[0]['M']:,}: {es[0]['reason']}")
    return "\n".join(out)


__all__ = ["check_bounds", "render_bounds", "BoundsReport", "Verdict", "Claim", "CLAIMS", "ALGORITHMS",
           "Algorithm", "BLOCK_RULES", "rule_blocks", "fit_exponents", "judge", "count_point", "run_blocks",
           "row_by_row",
           "BAND_LIMIT", "EXPONENT_TOLERANCE", "LOWER_CONSTANT"]
