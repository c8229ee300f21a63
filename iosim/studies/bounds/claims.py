"""What ``iosim bounds`` checks: the algorithms it runs, how their blocks follow from M
and d, and the paper's claims with the expressions counts are compared to.

Nothing here runs a schedule; :mod:`.sweep` runs them and :mod:`.verdicts` judges them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from ...errors import ProblemError, require_choice
from ..schedule_files import ScheduleFile, schedule_name, user_schedule
from ...models.theory import FLASH_EXPRESSION, STANDARD_EXPRESSION, flash_accesses, standard_accesses
from ...workload.problem import BlockSizes, paper_block_sizes

#: Θ claims: the ratio count/expression may vary by at most this factor over the sweep.
BAND_LIMIT = 4
#: Θ claims: fitted exponents of count and expression may differ by at most this much.
EXPONENT_TOLERANCE = 0.15
#: proposition3-lower: count ≥ LOWER_CONSTANT · N²d²/M wherever M ≥ d².
LOWER_CONSTANT = 1


# --------------------------------------------------------------------------------------
# algorithms and block rules
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Algorithm:
    """A loop order as the checker runs it.

    ``schedule``: a name in :data:`iosim.schedules.SCHEDULES`, a schedule function (run in
    this process), or a :class:`~iosim.studies.schedule_files.ScheduleFile` (FILE.py:FUNCTION,
    loaded by each worker process).
    ``outer``: the axis of the outer loop, ``"kv"`` (FA1: K/V blocks stay, Q and O are
    re-read) or ``"q"`` (FA2: Q blocks stay, K and V are re-read); ``None`` for a loop
    order without blocks. ``block_q``: a fixed B_r that overrides the block rule. ``user``:
    a schedule of one's own given by file or function alone (:func:`user_algorithm`): its
    loop order is not known, and it is judged as the FlashAttention family.
    """

    name: str
    schedule: str | Callable
    outer: str | None
    description: str
    block_q: int | None = None
    passes: str = "forward"
    block_mask: str | None = None
    user: bool = False

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


def get_algorithm(name: str | Algorithm | ScheduleFile | Callable) -> Algorithm:
    """A built-in algorithm by name, an :class:`Algorithm` as it is, or a schedule of one's
    own — ``"FILE.py:FUNCTION"``, a :class:`ScheduleFile` or a function — as
    :func:`user_algorithm` makes it."""
    if isinstance(name, Algorithm):
        return name
    if isinstance(name, str) and name in ALGORITHMS:
        return ALGORITHMS[name]
    mine = user_schedule(name)
    if mine is None:
        require_choice("algorithm", name, ALGORITHMS)
    return user_algorithm(mine)


def user_algorithm(schedule: ScheduleFile | Callable) -> Algorithm:
    """A schedule of one's own as the checker runs it: named FILE.py:FUNCTION (or the
    function's name), forward, and judged as the FlashAttention family (as
    :attr:`iosim.Setup.family` treats it); its loop order is not known (``outer=None``)."""
    return Algorithm(schedule_name(schedule), schedule, None, USER_DESCRIPTION, user=True)


#: how the report describes a schedule of one's own
USER_DESCRIPTION = "a schedule of your own, judged as the FlashAttention family (Theorem 2's N²·d²/M)"


def is_user_algorithm(algorithm: Algorithm) -> bool:
    """Whether ``algorithm`` is a schedule of one's own given by file or function alone."""
    return algorithm.user


def rule_blocks(rule: str, algorithm: Algorithm, M: int, d: int) -> tuple[BlockSizes, str | None]:
    """(B_r, B_c) at SRAM size ``M`` (elements) and head dim ``d``, and which block the
    rule capped at d (``"B_r"``, ``"B_c"`` or None)."""
    require_choice("block_rule", rule, BLOCK_RULES)
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
    passes: str | None = "forward"   # the pass the claim is about; None: either (judged on the one run)


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
        lambda N, d, M, s=1: Fraction(4 * N * d), passes=None),
    "theorem5-standard-backward": Claim(
        "theorem5-standard-backward", "Theorem 5: the standard backward pass needs Θ(Nd + N²) HBM accesses",
        STANDARD_EXPRESSION, "theta",
        "as theorem2-standard, on the backward pass's count", _nd_n2, passes="backward"),
    "theorem5-flash-backward": Claim(
        "theorem5-flash-backward", "Theorem 5: the FlashAttention backward pass needs Θ(N²d²/M) HBM accesses",
        FLASH_EXPRESSION, "theta",
        "as theorem2-flash, on the backward pass's count", _n2d2_m, passes="backward"),
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
# which counts judge a claim
# --------------------------------------------------------------------------------------
#: a built-in forward algorithm -> the built-in algorithm that runs its backward pass
BACKWARD_OF = {"standard": "standard-backward", "fa1": "fa1-backward", "fa2": "fa2-backward"}
#: the other way round
FORWARD_OF = {backward: forward for forward, backward in BACKWARD_OF.items()}


def judged_pairs(algos, claims) -> list[tuple[str, Algorithm, Algorithm]]:
    """(claim id, the algorithm asked for, the algorithm whose counts judge it) for every
    claim of ``claims`` (by default each algorithm's own, :func:`default_claims`) and
    algorithm of ``algos``, duplicates dropped. A claim about one pass (Theorem 5: the
    backward; Theorems 2, Propositions 3 and 4: the forward) is judged on that pass's counts:
    a built-in algorithm's other pass (``fa1`` → ``fa1-backward``) where it has one;
    :class:`~iosim.ProblemError` where it has none."""
    pairs: dict = {}
    for a in algos:
        for cid in (claims or default_claims(a)):
            judged = counted_on(CLAIMS[cid], a)
            pairs.setdefault((cid, judged), (cid, a, judged))
    return list(pairs.values())


def counted_on(claim: Claim, algorithm: Algorithm) -> Algorithm:
    """The algorithm whose counts judge ``claim`` when asked of ``algorithm``: itself when it
    runs the pass the claim is about, else its built-in counterpart for that pass."""
    if claim.passes is None or claim.passes == algorithm.passes:
        return algorithm
    pairs = BACKWARD_OF if claim.passes == "backward" else FORWARD_OF
    other = pairs.get(algorithm.name)
    if other is not None and ALGORITHMS.get(algorithm.name) == algorithm:
        return ALGORITHMS[other]
    runs = ", ".join(name for name, a in ALGORITHMS.items() if a.passes == claim.passes)
    runs += f" (or {', '.join(pairs)}, judged on their {claim.passes} passes)"
    if algorithm.user:
        why = f"{algorithm.name} (a schedule of your own) is counted forward only"
    else:
        why = f"{algorithm.name} ({algorithm.description}) is counted on its {algorithm.passes} pass only"
    raise ProblemError(f"{claim.id} is about the {claim.passes} pass, and {why}: ask it of {runs}", field="claim")


def counterpart_note(claim: Claim, asked: Algorithm, judged: Algorithm) -> str | None:
    """What a verdict says when ``claim``, asked of ``asked``, is judged on ``judged``'s counts."""
    if asked == judged:
        return None
    return (f"{claim.id} is about the {claim.passes} pass: judged on the counts of {judged.name} "
            f"({judged.description}), the {claim.passes} pass that goes with {asked.name}")
