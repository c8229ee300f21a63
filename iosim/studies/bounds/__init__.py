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
``theorem5-standard-backward``    N·d + N²                         Thm 5, backward
``theorem5-flash-backward``       N²·d²/M                          Thm 5, backward
``proposition4-block-sparse``     N·d + N²·d²·s/M                  Prop 4, block-sparse
================================  ===============================  =========================

Each claim is about one pass (``compulsory`` about either): Theorem 5's are judged on the
backward pass's counts, the others on the forward's. Asked of a built-in algorithm that
runs the other pass, a claim is judged on its counterpart (``fa1`` → ``fa1-backward`` for
Theorem 5, ``fa1-backward`` → ``fa1`` for Theorem 2), which the verdict's note names; an
algorithm with no such counterpart (``row-by-row``, ``fa1-block-sparse``, a schedule of
one's own) is refused with :class:`~iosim.ProblemError`
(:func:`~.claims.judged_pairs`).

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
A schedule of one's own runs too: ``"FILE.py:FUNCTION"`` (named so in the report, loaded
by each worker process) or a function (run in this process), judged as the FlashAttention
family (:func:`~.claims.user_algorithm`).

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

The package, one role a module: :mod:`.claims` (the algorithms, block rules and claims),
:mod:`.sweep` (the grid of points and the engine runs), :mod:`.verdicts` (fitted exponents and
verdicts), :mod:`.check` (:func:`check_bounds`: validate, sweep, judge, assemble the
report); the text report is :mod:`iosim.report.bounds_report`.

>>> report = check_bounds("fa-paper-a100", ["fa1"], ["theorem2-flash"], seq_lens=[1024, 2048, 4096],
...                       head_dims=[64, 128])
>>> report.verdicts[0].holds
True
"""

from __future__ import annotations

from .check import BoundsReport, check_bounds
from .claims import (ALGORITHMS, BAND_LIMIT, BLOCK_RULES, CLAIMS, EXPONENT_TOLERANCE, LOWER_CONSTANT, Algorithm,
                     Claim, row_by_row, rule_blocks, user_algorithm)
from .sweep import _set_worker_profile, count_point, run_blocks
from .verdicts import Verdict, fit_exponents, judge

__all__ = ["check_bounds", "BoundsReport", "Verdict", "Claim", "CLAIMS", "ALGORITHMS",
           "Algorithm", "BLOCK_RULES", "rule_blocks", "fit_exponents", "judge", "count_point", "run_blocks",
           "row_by_row", "user_algorithm",
           "BAND_LIMIT", "EXPONENT_TOLERANCE", "LOWER_CONSTANT"]
