"""The assignments ``iosim grade`` knows: what a submission defines and what it is checked on.

Each assignment lives in ``examples/assignments/<folder>/`` (README and starter); the
instructor material is in ``examples/assignments/instructor/``.

* ``fa1`` — ``fa1_forward(ctx)``: FlashAttention's forward pass, Algorithm 1. Checked on
  five inputs of the teaching GPU ``toy`` with the paper's blocks (B_r = B_c = 32 at
  d = 32): exact output and statistics ℓ, m; tiles within shared memory and registers;
  HBM traffic equal to the built-in ``fa1`` schedule's, tensor by tensor.
* ``fa2`` — ``fa2_forward(ctx)``: FlashAttention-2's forward pass, Algorithm 1; the same
  checks against ``fa2`` (output O and logsumexp L), plus a two-sentence answer.
* ``blocks`` — ``choose_blocks(hw, problem) -> (block_q, block_kv)`` for FA2 on three
  GPUs and shapes: the tiles fit (shared memory, no register spill) and the HBM traffic
  is within :data:`BLOCKS_BAND` of the best block sizes ``iosim explore`` finds.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..workload.problem import Problem

#: allowed excess over the best HBM traffic when the student chooses the blocks
BLOCKS_BAND = 0.10
#: |student − reference| ≤ ATOL + RTOL·|reference|, element-wise, in float64
ATOL = RTOL = 1e-9


@dataclass(frozen=True)
class Case:
    """One input a schedule runs on. ``score_scale`` multiplies Q and K (scores by its square)."""

    name: str
    problem: Problem
    score_scale: float = 1.0


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
    d = 32
    return (
        Case("square N=128, 2 heads", Problem(seq_len=128, head_dim=d, heads=2)),
        Case("ragged N=100", Problem(seq_len=100, head_dim=d)),
        Case("causal N=128", Problem(seq_len=128, head_dim=d, causal=True)),
        Case("causal ragged N_q=70, N_kv=100", Problem(seq_len_q=70, seq_len_kv=100, head_dim=d, causal=True)),
        Case("large scores N=96 (|S| up to ~1000)", Problem(seq_len=96, head_dim=d), score_scale=20.0),
    )


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
