"""Verdicts: each claim of :mod:`.claims` judged over the counted points of :mod:`.sweep`.

Θ claims by the band of count/expression and by log-log exponents fitted over the sweep;
the lower bound pointwise where M ≥ d²; compulsory traffic tensor by tensor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

import numpy as np

from ...errors import ProblemError
from .claims import (ALGORITHMS, BAND_LIMIT, CLAIMS, EXPONENT_TOLERANCE, LOWER_CONSTANT, Claim, counterpart_note,
                     is_user_algorithm)
from .sweep import Point


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
    Values of 0 (a schedule of one's own that moves nothing there) have no logarithm and
    are left out of the fit.
    """
    kept = [(p, v) for p, v in zip(points, values) if v > 0]
    points, values = [p for p, _ in kept], [v for _, v in kept]
    varied = [k for k in range(3) if len(set(p[k] for p in points)) > 1]
    out = {"N": None, "d": None, "M": None}
    if not varied or len(points) <= len(varied):
        return out
    X = np.log(np.asarray(points, dtype=float))
    y = np.log(np.asarray(values, dtype=float))
    A = np.column_stack([np.ones(len(points))] + [X[:, k] for k in varied])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    for k, c in zip(varied, coef[1:]):
        out["NdM"[k]] = round(float(c), 4)
    return out


def judge_all(pairs, asked: bool, points: Sequence[Point]) -> tuple[list, list]:
    """The verdicts of ``pairs`` — (claim id, algorithm asked for, algorithm whose counts
    judge it), as :func:`~.claims.judged_pairs` gives them — over the judging algorithm's
    feasible points, and the default claims (``asked`` False) the sweep cannot judge, with why."""
    verdicts, skipped = [], []
    for cid, a, judged in pairs:
        feasible = [p for p in points if p.algorithm == judged.name and p.feasible]
        try:
            verdicts.append(judge(CLAIMS[cid], judged.name, feasible))
        except ProblemError as exc:
            if asked:           # asked for by name: a sweep that cannot judge it is bad input
                raise
            skipped.append({"id": cid, "algorithm": judged.name, "reason": str(exc)})
            continue
        note = counterpart_note(CLAIMS[cid], a, judged)
        if is_user_algorithm(judged):
            verdicts[-1].notes.insert(0, f"{judged.name} is {judged.description}")
        if note:
            verdicts[-1].notes.insert(0, note)
    if not verdicts:
        raise ProblemError("no claim can be judged on this sweep: " + "; ".join(s["reason"] for s in skipped))
    return verdicts, skipped


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
    if lo == 0:            # a schedule of one's own that moves nothing somewhere: no Θ of a positive expression
        return _judge_zero(claim, algorithm, points, ratios)
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


def _judge_zero(claim, algorithm, points, ratios) -> Verdict:
    """A Θ claim over counts of which some are 0: it fails (the count is not Θ of a positive
    expression); exponents are fitted over the points with a count, if they suffice."""
    zeros = [p for p in points if p.count == 0]
    zero = zeros[0]
    got, want = _fits(claim, [p for p in points if p.count > 0] or points)
    reason = (f"the count is 0 at {len(zeros)} of {len(points)} points (e.g. N = {zero.N:,}, "
              f"d = {zero.d:,}, M = {zero.M:,}): no HBM traffic is not Θ({claim.expression})")
    return Verdict(claim, algorithm, False, 0.0, float(max(ratios)), got, want, len(points), reason,
                   _worst(zero, Fraction(0)))


def rounded(x: float) -> float:
    """An exponent rounded to two decimals, without a -0.0 (so it never prints "-0.00")."""
    return round(x, 2) + 0.0


def _exp(x: float) -> str:
    """An exponent to two decimals, without a "-0.00"."""
    return f"{rounded(x):.2f}"


def _explain_cap(v: Verdict, claim, algorithm, points) -> None:
    """Say whether the block rule's cap at d is what breaks the claim, and judge without it."""
    alg = ALGORITHMS.get(algorithm)
    relevant = "B_r" if alg is None or alg.outer == "q" else "B_c"     # loop order unknown: the paper rule's cap
    capped = [p for p in points if p.capped == relevant]
    if not capped:
        return
    lo_M = min(p.M for p in capped)
    where = (f"{relevant} is capped at d by the block rule at {len(capped)} of {len(points)} points (M > 4d², from "
             f"M = {lo_M:,}): ")
    if alg is None:        # a schedule of one's own: its loop order is not known
        v.notes.append(where + f"if {algorithm} re-reads K and V once per query block (FA2's loop order), its count "
                       "stops falling as M grows there")
    else:
        advice = " — use --block-rule outer for a rule suited to this loop order" if relevant == "B_r" else ""
        v.notes.append(where + f"{algorithm} re-reads {alg.rereads} once per "
                       f"{'query' if relevant == 'B_r' else 'key'} block, so its count stops falling as M grows there"
                       + advice)
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
