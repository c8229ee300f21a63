"""The assignments ``iosim grade`` knows: what a submission defines and what it is checked on.

Each assignment lives in ``examples/assignments/<folder>/`` (README and starter); the
instructor material is in ``examples/assignments/instructor/``.

* ``fa1`` — ``fa1_forward(ctx)``: FlashAttention's forward pass, Algorithm 1. Checked on
  the inputs of :func:`_cases` on the teaching GPU ``toy`` with the paper's blocks
  (B_r = B_c = 32 at d = 32): five random ones and six built to break the shortcuts of the
  online softmax (:data:`SCORE_RANGE`); exact output and statistics ℓ, m; tiles within
  shared memory and registers; HBM traffic equal to the built-in ``fa1`` schedule's,
  tensor by tensor.
* ``fa2`` — ``fa2_forward(ctx)``: FlashAttention-2's forward pass, Algorithm 1; the same
  checks against ``fa2`` (output O and logsumexp L), plus a two-sentence answer.
* ``blocks`` — ``choose_blocks(hw, problem) -> (block_q, block_kv)`` for FA2 on three
  GPUs and shapes: the tiles fit (shared memory, no register spill) and the HBM traffic
  is within :data:`BLOCKS_BAND` of the best block sizes ``iosim explore`` finds.

Also what the grader learns before anything runs: a file's assignment, graded function and
written answer, from its syntax tree (:func:`resolve`); each input (:func:`build_inputs`)
and its float64 reference (:func:`reference_outputs`).
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import re
from dataclasses import dataclass

import numpy as np

from ..errors import IosimError, require_choice
from ..workload.inputs import random_inputs
from ..workload.problem import Problem
from ..workload.reference import reference_attention, reference_statistics

#: allowed excess over the best HBM traffic when the student chooses the blocks
BLOCKS_BAND = 0.10
#: |student − reference| ≤ ATOL + RTOL·|reference|, element-wise, in float64
ATOL = RTOL = 1e-9
#: |S| the adversarial inputs reach. e^S overflows float64 above S ≈ 709 and underflows below
#: ≈ −745, so 10⁴ is far outside what any shift but the true running maximum survives; yet
#: S − m, e^{S−m} and the reference stay exact to ~1e-12 in float64 (the engine's and the
#: reference's arithmetic), well inside :data:`ATOL` + :data:`RTOL`·|reference|.
SCORE_RANGE = 1e4
#: the largest file the grader reads
MAX_SOURCE_BYTES = 1 << 20


class GradingInputError(IosimError):
    """The grader cannot grade this: no such file, or not a submission for the assignment."""


@dataclass(frozen=True)
class Case:
    """One input a schedule runs on; :func:`build_inputs` makes its Q, K, V from a seed.

    ``kind`` says how: ``random`` (standard normal; ``score_scale`` multiplies Q and K, the
    scores by its square) or one of the adversarial patterns of :data:`PATTERNS`.
    ``purpose`` is what the input is there to catch (one line, shown in the report's JSON).
    """

    name: str
    problem: Problem
    score_scale: float = 1.0
    kind: str = "random"
    purpose: str = ""

    @property
    def adversarial(self) -> bool:
        return self.kind != "random"


@dataclass(frozen=True)
class ScheduleAssignment:
    """Write a schedule; graded on exactness, capacity and HBM traffic against a built-in one."""

    name: str
    function: str
    title: str
    folder: str
    algorithm: str              # the built-in schedule whose counts the traffic must equal
    algorithm_title: str
    hw: str
    outputs: tuple              # HBM tensors compared with the float64 reference
    cases: tuple
    io_hint: str
    answer: str | None = None   # module-level string holding a written answer
    answer_prompt: str = ""


@dataclass(frozen=True)
class BlocksAssignment:
    """Choose (B_r, B_c); graded on fitting on chip and on HBM traffic within a band of the best."""

    name: str
    function: str
    title: str
    folder: str
    algorithm: str
    cases: tuple                # (profile name, Problem)
    band: float
    answer: str
    answer_prompt: str


def _cases() -> tuple:
    """The inputs of both schedule assignments, in the order the report lists them (the grader
    runs them in an order drawn from the secret seed). Every adversarial input has the shape
    of a random one, so a schedule cannot tell from ``ctx.problem`` which kind it is on."""
    d = 32
    square = Problem(seq_len=128, head_dim=d, heads=2)
    ragged = Problem(seq_len=100, head_dim=d)
    causal = Problem(seq_len=128, head_dim=d, causal=True)
    causal_ragged = Problem(seq_len_q=70, seq_len_kv=100, head_dim=d, causal=True)
    return (
        Case("square N=128, 2 heads", square,
             purpose="the plain case: random scores of a few units"),
        Case("ragged N=100", ragged,
             purpose="N not a multiple of the blocks: the last block has 4 rows"),
        Case("causal N=128", causal,
             purpose="the causal mask; blocks above the diagonal are skipped"),
        Case("causal ragged N_q=70, N_kv=100", causal_ragged,
             purpose="the causal mask aligned bottom-right, N_q ≠ N_kv, ragged key blocks"),
        Case("large scores N=96 (|S| up to ~1000)", Problem(seq_len=96, head_dim=d), score_scale=20.0,
             purpose="random scores beyond e^S's range: exponentiating without the running maximum overflows"),
        Case("max in the last key block (|S| ≈ 1e4)", square, kind="max_last",
             purpose="rows peak in the last key block, 6e3-2e4 above the first block's maximum (head 0; head 1 "
                     "either way): a shift frozen at the first block's max (+500) overflows"),
        Case("max in a middle key block (|S| ≈ 1e4)", square, kind="max_middle",
             purpose="rows peak in key block 1 (head 0) or 2 (head 1), 6e3-2e4 above the other blocks: a shift "
                     "corrected only at the last block has already overflowed"),
        Case("rising scores, ragged N=100 (|S| ≈ 1e4)", ragged, kind="ramp",
             purpose="the maximum grows at every key block (by ~2000-6500 between full blocks) and ends in the "
                     "ragged 4-key block (or sits at key 0): every block must rescale"),
        Case("ties and constant rows (|S| ≈ 1e4)", square, kind="ties",
             purpose="exactly equal maxima in the second and the last key block, far above the first (head 0); "
                     "rows constant at 0, +1e4 or −1e4 (head 1)"),
        Case("causal, one visible key in the first row (|S| ≈ 1e4)", causal, kind="ramp",
             purpose="row 0 sees only key 0 (a score of ±3e3 to ±1e4); each row's maximum at its last visible key, on the "
                     "diagonal block, or at key 0"),
        Case("causal ragged N_q=70, N_kv=100 (|S| ≈ 1e4)", causal_ragged, kind="ramp",
             purpose="bottom-right causal mask with the maximum at each row's last visible key, the ragged block "
                     "included, far above the first block's"),
    )


# -- the inputs ---------------------------------------------------------------------------------
def build_inputs(case: Case, block_kv: int, seed: int) -> dict:
    """Q, K, V for ``case``: float64 arrays shaped (B, H, N, d), made in the grader from
    ``seed`` (the same seed gives the same arrays). ``block_kv`` (B_c) places the adversarial
    maxima in key blocks."""
    p = case.problem
    if case.kind == "random":
        inputs = random_inputs(p, seed=seed)
        for name in ("Q", "K"):
            inputs[name] = inputs[name] * case.score_scale
        return inputs
    rng = np.random.default_rng(seed)
    return PATTERNS[case.kind](p, block_kv, rng)


def _controlled(p: Problem, rng, a: np.ndarray, b: np.ndarray) -> dict:
    """Q, K, V with S_ij = SCORE_RANGE · a_i · b_j plus standard-normal noise: dimension 0 of Q
    and K carries the designed part (a: (B, H, N_q), b: (B, H_k, N_kv), each in [−1, 1]), the
    other dimensions are random as in a plain input; V is standard normal."""
    bsz, h, hk, d = p.batch, p.heads, p.kv_heads, p.head_dim
    c = np.sqrt(SCORE_RANGE * np.sqrt(d))   # c²/√d = SCORE_RANGE
    Q = rng.standard_normal((bsz, h, p.seq_len_q, d))
    K = rng.standard_normal((bsz, hk, p.seq_len_kv, d))
    Q[..., 0] = c * a
    K[..., 0] = c * b
    return {"Q": Q, "K": K, "V": rng.standard_normal((bsz, hk, p.seq_len_kv, d))}


def _strength(rng, shape, signed: bool) -> np.ndarray:
    """Per-row factors |a| ∈ [0.3, 1], so every jump below is ≥ 0.3 · its size; a random sign per
    row with ``signed`` (a negative row has its maximum where the others have their minimum)."""
    a = rng.uniform(0.3, 1.0, shape)
    return a * rng.choice([-1.0, 1.0], shape) if signed else a


def _max_last(p: Problem, block_kv: int, rng) -> dict:
    """Keys of the last key block score +1, the others −1 (× SCORE_RANGE × |a_i|): head 0's rows
    peak in the last block ~2e4·|a| above the first block's maximum; in the other heads a row
    of either sign (a negative one peaks in the first blocks, the last far below)."""
    b = -np.ones((p.batch, p.kv_heads, p.seq_len_kv))
    b[..., (p.seq_len_kv - 1) // block_kv * block_kv:] = 1.0
    a = _strength(rng, (p.batch, p.heads, p.seq_len_q), signed=True)
    a[:, 0] = np.abs(a[:, 0])
    return _controlled(p, rng, a, b)


def _max_middle(p: Problem, block_kv: int, rng) -> dict:
    """Keys of one middle key block score +1, the others −1: block 1 in K/V head 0, block 2 in
    head 1 (the blocks between the first and the last, cycling, for other shapes)."""
    blocks = -(-p.seq_len_kv // block_kv)
    middle = list(range(1, blocks - 1)) or [0]
    b = -np.ones((p.batch, p.kv_heads, p.seq_len_kv))
    for h in range(p.kv_heads):
        j = middle[h % len(middle)]
        b[:, h, j * block_kv:(j + 1) * block_kv] = 1.0
    return _controlled(p, rng, _strength(rng, (p.batch, p.heads, p.seq_len_q), signed=False), b)


def _ramp(p: Problem, block_kv: int, rng) -> dict:
    """Scores rising linearly from −|a_i| to +|a_i| (× SCORE_RANGE) along the keys: a row with
    a > 0 peaks at its last visible key (the last key, in the ragged block; under the causal mask
    its diagonal key) and its maximum grows at every key block; a row with a < 0 peaks at key 0."""
    b = np.broadcast_to(np.linspace(-1.0, 1.0, p.seq_len_kv), (p.batch, p.kv_heads, p.seq_len_kv))
    return _controlled(p, rng, _strength(rng, (p.batch, p.heads, p.seq_len_q), signed=True), b)


def _ties(p: Problem, block_kv: int, rng) -> dict:
    """Integer Q and K, so that every score is an exact multiple of 1/√d and equal scores are
    equal to the last bit. Head 0: pairs of neighbouring keys in the second and in the last
    key block with identical K rows and a large positive dimension 0, so each row's maximum is
    tied exactly among the four, ~1e4-2e4 above the other keys (the first block's included,
    so a shift frozen there overflows). Other heads:
    dimension 0 of K is the same for every key and some rows of Q are zero outside it, so
    those rows are constant at 0, about +1e4 or about −1e4."""
    bsz, h, hk, d, n_q, n_kv = p.batch, p.heads, p.kv_heads, p.head_dim, p.seq_len_q, p.seq_len_kv
    big = int(np.ceil(np.sqrt(SCORE_RANGE * np.sqrt(d))))          # big²/√d ≥ SCORE_RANGE
    Q = rng.integers(-2, 3, (bsz, h, n_q, d)).astype(float)
    K = rng.integers(-2, 3, (bsz, hk, n_kv, d)).astype(float)
    Q[..., 0] = rng.integers(big // 2, big + 1, (bsz, h, n_q))
    last = n_kv - 1
    tied = sorted({min(block_kv + 3, last - 1), min(block_kv + 4, last), last - 1, last})
    K[:, 0, :, 0] = -big
    K[:, 0, tied, :] = K[:, 0, tied[:1], :]                        # identical rows ...
    K[:, 0, tied, 0] = big                                          # ... scoring +big·Q[i, 0]
    if hk > 1:
        K[:, 1:, :, 0] = big
        constant = rng.random((bsz, h, n_q)) < 0.5
        constant[:, 0] = False
        level = rng.choice([0.0, big, -big], (bsz, h, n_q))
        Q[..., 1:] = np.where(constant[..., None], 0.0, Q[..., 1:])
        Q[..., 0] = np.where(constant, level, Q[..., 0])
    return {"Q": Q, "K": K, "V": rng.standard_normal((bsz, hk, n_kv, d))}


#: how each adversarial ``Case.kind`` is built: (problem, B_c, numpy Generator) -> Q, K, V
PATTERNS = {"max_last": _max_last, "max_middle": _max_middle, "ramp": _ramp, "ties": _ties}


ASSIGNMENTS: dict = {
    "fa1": ScheduleAssignment(
        name="fa1", function="fa1_forward", folder="fa1-forward",
        title="FlashAttention forward pass (Dao et al. 2022, Algorithm 1)",
        algorithm="fa1", algorithm_title="FlashAttention Algorithm 1", hw="toy", outputs=("O", "l", "m"),
        cases=_cases(),
        io_hint=("Algorithm 1 loads K_j, V_j once per key block (outer loop) and, for every active (j, i), loads "
                 "Q_i, O_i, ℓ_i, m_i and writes O_i, ℓ_i, m_i back; causal runs visit only the query blocks "
                 "ctx.q_blocks(visible_to=j) returns."),
    ),
    "fa2": ScheduleAssignment(
        name="fa2", function="fa2_forward", folder="fa2-forward",
        title="FlashAttention-2 forward pass (Dao 2023, Algorithm 1)",
        algorithm="fa2", algorithm_title="FlashAttention-2 Algorithm 1", hw="toy", outputs=("O", "L"),
        cases=_cases(),
        io_hint=("FlashAttention-2 loads Q_i once per query block, K_j and V_j once per active (i, j), and writes "
                 "O_i and L_i once per query block; O_i, ℓ_i, m_i stay on chip (ctx.fill before the inner loop, "
                 "ctx.keep inside it)."),
        answer="WHY_TRAFFIC_DIFFERS",
        answer_prompt="two sentences on why FA2's HBM traffic differs from FA1's",
    ),
    "blocks": BlocksAssignment(
        name="blocks", function="choose_blocks", folder="choose-blocks",
        title="Choose FlashAttention-2's block sizes for a GPU and a shape",
        algorithm="fa2",
        cases=(("h100-sxm", Problem(seq_len=8192, head_dim=128)),
               ("a100-40gb", Problem(seq_len=2048, head_dim=128)),
               ("toy", Problem(seq_len=1024, head_dim=32))),
        band=BLOCKS_BAND, answer="JUSTIFICATION",
        answer_prompt="a justification of the choices with numbers from `iosim explore`",
    ),
}


def function_names() -> dict:
    """Function name → assignment name (how a file's assignment is recognised)."""
    return {a.function: name for name, a in ASSIGNMENTS.items()}


# -- the reference, float64 -------------------------------------------------------------------
def reference_outputs(inputs: dict, problem) -> dict:
    """O, and the row statistics m = rowmax(S), ℓ = rowsum(e^{S−m}), L = m + log ℓ, computed
    from private copies of ``inputs`` and returned read-only."""
    Q, K, V = (np.array(inputs[name], dtype=np.float64, copy=True) for name in ("Q", "K", "V"))
    with np.errstate(over="ignore", under="ignore"):
        out = {"O": reference_attention(Q, K, V, causal=problem.causal),
               **reference_statistics(Q, K, causal=problem.causal)}
    for array in out.values():
        array.setflags(write=False)
    return out


# -- which assignment ---------------------------------------------------------------------------
def _defined_names(tree: ast.Module) -> set:
    """Names a module binds at top level (also inside top-level if/try/with blocks)."""
    names, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo.extend(getattr(node, field, []) or [])
        elif isinstance(node, ast.ExceptHandler):
            todo.extend(node.body)
    return names


def _literal_strings(tree: ast.Module, wanted: set) -> dict:
    """The string each name in ``wanted`` is bound to by the file's last top-level assignment of
    it (also inside top-level if/try/with blocks), when that is a string literal."""
    found, todo = {}, list(tree.body)
    assignments = []
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Assign):
            assignments += [(node.lineno, t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            assignments.append((node.lineno, node.target.id, node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            assignments.append((node.lineno, node.target.id, None))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for name in ("body", "orelse", "finalbody", "handlers"):
                todo.extend(getattr(node, name, []) or [])
        elif isinstance(node, ast.ExceptHandler):
            todo.extend(node.body)
    for _, name, value in sorted(assignments, key=lambda a: a[0]):
        if name in wanted:
            ok = isinstance(value, ast.Constant) and isinstance(value.value, str)
            found[name] = value.value if ok else None
    return found


@dataclass
class Submission:
    """What the grader learns from the file itself, before any of it runs."""

    file: pathlib.Path
    spec: object
    syntax_error: Exception | None = None
    answers: dict = dataclasses.field(default_factory=dict)   # the written answer's string literal, by name


def resolve(path: str | pathlib.Path, assignment: str | None) -> Submission:
    """The file, its assignment and (from its syntax tree) its written answer, or :class:`GradingInputError`."""
    file = pathlib.Path(path)
    if not file.is_file():
        raise GradingInputError(f"{path}: no such file")
    if assignment is not None:
        require_choice("assignment", assignment, ASSIGNMENTS, GradingInputError)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise GradingInputError(f"{path}: cannot read it ({exc.strerror})") from None
    if len(raw) > MAX_SOURCE_BYTES:
        raise GradingInputError(f"{path}: {len(raw):,} bytes is too large for a submission")
    source = raw.decode("utf-8", "replace")
    tree = None
    try:
        tree = ast.parse(source, filename=str(file))
        names, syntax_error = _defined_names(tree), None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        # Graded as a failure when we know which assignment it is; a guess from the text otherwise.
        names = set(re.findall(r"^def\s+(\w+)", source, flags=re.M))
        syntax_error = exc
    known = function_names()
    if assignment is None:
        found = sorted(known[n] for n in names if n in known)
        if len(found) != 1:
            wanted = ", ".join(f"{f} ({a})" for f, a in known.items())
            what = "several graded functions" if found else "none of the graded functions"
            raise GradingInputError(f"{path} defines {what}: {wanted}; say which with --assignment")
        assignment = found[0]
    spec = ASSIGNMENTS[assignment]
    if spec.function not in names:
        raise GradingInputError(f"{path} does not define {spec.function}{signature(spec)}, the function assignment "
                                f"{assignment!r} grades (see examples/assignments/{spec.folder}/README.md)")
    answers = _literal_strings(tree, {spec.answer}) if tree is not None and spec.answer else {}
    return Submission(file.resolve(), spec, syntax_error, answers)


def signature(spec) -> str:
    return "(ctx)" if isinstance(spec, ScheduleAssignment) else "(hw, problem)"
