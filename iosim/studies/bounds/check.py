"""``check_bounds``: the whole of ``iosim bounds`` without the printing — validate the
request, sweep (:mod:`.sweep`), judge (:mod:`.verdicts`), and assemble a :class:`BoundsReport`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ...dtypes import width
from ...errors import ProblemError, require_choice, require_positive_int
from ...hardware import HardwareProfile
from ...run import resolve_profile
from ..executors import Executor
from ...workload.problem import sram_elements
from .claims import (BAND_LIMIT, BLOCK_RULES, CLAIMS, EXPONENT_TOLERANCE, LOWER_CONSTANT, Algorithm, _n2d2_m,
                     _nd_n2, get_algorithm, is_user_algorithm, judged_pairs)
from .sweep import sweep_points
from .verdicts import judge_all

#: the most values of M `sram_steps` may space over [d, N·d] at each (N, d)
MAX_SRAM_STEPS = 1_000


# --------------------------------------------------------------------------------------
# the report
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
            "schema_version": 1,       # this JSON's contract: bumped when a field changes meaning or goes
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


# --------------------------------------------------------------------------------------
# validate → sweep → judge → assemble
# --------------------------------------------------------------------------------------
def check_bounds(
    hw: str | os.PathLike | HardwareProfile,
    algorithms: Sequence[str | Algorithm | Callable],
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
    executor: Executor | None = None,
) -> BoundsReport:
    """Sweep, simulate and judge: the whole of ``iosim bounds`` without the printing.

    ``sram``: the M values (elements) to sweep; by default M = d·2^k up to N·d for each
    (N, d), plus the profile's own M; ``sram_steps`` instead spaces that many values
    evenly in log M over [d, N·d] at each (N, d). ``claims``: claim ids, applied to every algorithm;
    by default each algorithm gets its family's Theorem 2 claim, proposition3-lower and
    compulsory. ``executor``: where the runs go (:mod:`iosim.studies.executors`; default
    ``jobs`` local processes).

    ``algorithms``: built-in names (:data:`ALGORITHMS`), :class:`Algorithm` objects, or
    schedules of one's own — ``"FILE.py:FUNCTION"`` (named so in the report; each worker
    process loads it) or a function (run in this process: a function may not pickle) —
    judged as the FlashAttention family (Theorem 2's N²·d²/M claim by default).
    """
    profile = resolve_profile(hw)
    pairs = _validate(algorithms, claims, seq_lens, head_dims, sram, block_rule, dtype)
    algos = list(dict.fromkeys(judged for _, _, judged in pairs))
    if sram_steps is not None and require_positive_int("sram_steps", sram_steps) > MAX_SRAM_STEPS:
        raise ProblemError(f"sram_steps must be at most {MAX_SRAM_STEPS:,}, got {sram_steps:,}", field="sram_steps")
    profile_M = sram_elements(profile.scratchpad.per_block_bytes, dtype)
    points, excluded, runs = sweep_points(profile, algos, seq_lens=seq_lens, head_dims=head_dims, sram=sram,
                                          sram_steps=sram_steps, block_rule=block_rule, dtype=dtype,
                                          profile_M=profile_M, jobs=jobs, progress=progress, executor=executor)
    verdicts, skipped = judge_all(pairs, bool(claims), points)
    return BoundsReport(profile.name, profile_M, dtype, block_rule, sorted(set(seq_lens)), sorted(set(head_dims)),
                        None if sram is None else sorted(set(sram)), sram_steps, points, verdicts, excluded,
                        [a.name for a in algos], runs, skipped)


def _validate(algorithms, claims, seq_lens, head_dims, sram, block_rule: str, dtype: str) -> list:
    """(claim id, algorithm asked for, algorithm whose counts judge it) of every verdict
    (:func:`~.claims.judged_pairs`), once every argument of :func:`check_bounds` is checked."""
    algos = list(dict.fromkeys(get_algorithm(a) for a in algorithms))
    if not algos:
        raise ProblemError("give at least one algorithm")
    for c in claims or ():
        require_choice("claim", c, CLAIMS)
    pairs = judged_pairs(algos, claims)
    names = [a.name for a in dict.fromkeys([*algos, *(judged for _, _, judged in pairs)])]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ProblemError(f"two algorithms are named {', '.join(map(repr, twice))}: give a schedule of your own as "
                           "'FILE.py:FUNCTION', or an Algorithm with a name of its own", field="algorithm")
    require_choice("block_rule", block_rule, BLOCK_RULES)
    unknown_order = [a.name for a in algos if block_rule == "outer" and is_user_algorithm(a)]
    if unknown_order:
        raise ProblemError(f"block_rule='outer' gives the larger block to the outer loop, and the loop order of "
                           f"{', '.join(unknown_order)} (a schedule of your own) is not known: use block_rule='paper', "
                           "or, in Python, Algorithm(name, schedule, outer='q' or 'kv', description)",
                           field="block_rule")
    _check_positive("seq_len", seq_lens)
    _check_positive("head_dim", head_dims)
    if sram is not None:
        _check_positive("sram", sram)
    width(dtype)
    return pairs


def _check_positive(name: str, values: Sequence[int]) -> None:
    """A non-empty list of positive integers, each named ``name`` in the message."""
    if not values:
        raise ProblemError(f"{name}: give at least one value", field=name)
    for v in values:
        require_positive_int(name, v)
