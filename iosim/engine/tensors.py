"""The tensors that live in HBM, and where their tiles live on chip.

Each HBM tensor has a row axis (query side ``q`` or key side ``kv``), a column extent
(``d``, the key axis ``kv`` for S and P, or none for per-row vectors), a dtype, and a
*role* that decides which on-chip level holds a tile of it (see :mod:`.residency`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import ACCUM_DTYPE, width
from ..errors import ScheduleError
from ..workload.problem import Problem


def rounded_head_size(d: int) -> int:
    """The head size flash-attn 2's backward allocates dQaccum with: d rounded up to a
    multiple of 32, or of 64 above 128 (PyTorch's flash_api.cpp ``head_size_rounded``;
    measured on an H200: 40 → 64, 80 → 96, 160 → 192; docs/spec/kernels.md §4)."""
    step = 32 if d <= 128 else 64
    return -(-d // step) * step


@dataclass(frozen=True)
class TensorSpec:
    """An HBM tensor of one head.

    ``rows``: ``"q"`` (N_q rows) or ``"kv"`` (N_kv rows). ``cols``: ``"d"``, ``"kv"``
    (N_kv columns, for the N×N score matrices), ``"d_rounded"`` (d values in a row of the
    rounded head size, :func:`rounded_head_size`) or ``None`` (a vector, one value per row).
    ``dtype``: ``None`` means the problem's dtype. ``role``: ``input``, ``output``,
    ``scores`` or ``stats``. ``heads``: ``"kv"`` for tensors that exist once per K/V
    head (K, V and their gradients); a query head reads its group's copy.
    """

    name: str
    rows: str
    cols: str | None
    role: str
    dtype: str | None = None
    description: str = ""
    heads: str = "q"  # "q": one per query head; "kv": one per K/V head (K, V, dK, dV under GQA)
    per_split: bool = False  # one copy per split of the keys (Flash-Decoding's Oaccum, LSEaccum)

    def dtype_for(self, problem: Problem) -> str:
        return self.dtype or problem.dtype

    def width(self, problem: Problem) -> int:
        return width(self.dtype_for(problem))

    def num_cols(self, problem: Problem) -> int:
        """Columns of the values (what the arithmetic sees)."""
        cols = self.cols
        if cols == "d":     # the common case first: a load of Q, K, V or a store of O
            return problem.head_dim
        return {"d": problem.head_dim, "d_rounded": problem.head_dim, "kv": problem.seq_len_kv, None: 1}[cols]

    def moved_cols(self, problem: Problem) -> int:
        """Columns a row moves in HBM: the values', or, for a buffer allocated with a
        rounded head size (``cols="d_rounded"``: flash-attn's dQaccum), that size."""
        return rounded_head_size(problem.head_dim) if self.cols == "d_rounded" else self.num_cols(problem)

    def num_rows(self, problem: Problem) -> int:
        return problem.seq_len_q if self.rows == "q" else problem.seq_len_kv

    def elements(self, problem: Problem) -> int:
        """Elements of the whole tensor, per head."""
        return self.num_rows(problem) * self.num_cols(problem)


#: The forward-pass tensors, named as in the papers.
FORWARD_TENSORS = (
    TensorSpec("Q", "q", "d", "input", description="queries, N_q × d"),
    TensorSpec("K", "kv", "d", "input", description="keys, N_kv × d", heads="kv"),
    TensorSpec("V", "kv", "d", "input", description="values, N_kv × d", heads="kv"),
    TensorSpec("O", "q", "d", "output", description="output, N_q × d"),
    TensorSpec("S", "q", "kv", "scores", description="scores QKᵀ, N_q × N_kv (standard attention only)"),
    TensorSpec("P", "q", "kv", "scores", description="softmax(S), N_q × N_kv (standard attention only)"),
    TensorSpec("l", "q", None, "stats", ACCUM_DTYPE, "ℓ: running softmax denominators (FA1)"),
    TensorSpec("m", "q", None, "stats", ACCUM_DTYPE, "m: running row maxima (FA1)"),
    TensorSpec("L", "q", None, "stats", ACCUM_DTYPE, "L = m + log ℓ: logsumexp (FA2)"),
)

#: Flash-Decoding's per-split partial results (fp32, one copy per split).
SPLIT_TENSORS = (
    TensorSpec("Oaccum", "q", "d", "output", ACCUM_DTYPE, "split-KV: each split's normalised O, fp32",
               per_split=True),
    TensorSpec("LSEaccum", "q", None, "stats", ACCUM_DTYPE, "split-KV: each split's logsumexp, fp32",
               per_split=True),
    TensorSpec("m_accum", "q", None, "stats", ACCUM_DTYPE, "cuDNN's split decode: each split's row maxima, fp32",
               per_split=True),
    TensorSpec("l_accum", "q", None, "stats", ACCUM_DTYPE, "cuDNN's split decode: each split's row sums, fp32",
               per_split=True),
)

#: Buffers of the real kernels that the paper listings do not have (docs/spec/algorithms.md §7).
KERNEL_TENSORS = (
    TensorSpec("dQaccum", "q", "d_rounded", "output", ACCUM_DTYPE,
               "flash-attn 2 backward: dQ accumulated in fp32 with atomic adds; its rows are padded to "
               "whole blocks and its columns to the rounded head size (cuDNN's: N_q × d, reduced by TMA)"),
)

#: The backward-pass tensors (FA1 Algorithms 3–4, FA2 Algorithm 2).
BACKWARD_TENSORS = (
    TensorSpec("dO", "q", "d", "input", description="gradient of the output, N_q × d"),
    TensorSpec("dQ", "q", "d", "output", description="gradient of Q, N_q × d (accumulated)"),
    TensorSpec("dK", "kv", "d", "output", description="gradient of K, N_kv × d", heads="kv"),
    TensorSpec("dV", "kv", "d", "output", description="gradient of V, N_kv × d", heads="kv"),
    TensorSpec("dK_expanded", "kv", "d", "output",
               description="GQA: per-query-head dK, summed over each group into dK afterwards"),
    TensorSpec("dV_expanded", "kv", "d", "output",
               description="GQA: per-query-head dV, summed over each group into dV afterwards"),
    TensorSpec("dP", "q", "kv", "scores", description="dO Vᵀ, N_q × N_kv (standard attention only)"),
    TensorSpec("dS", "q", "kv", "scores", description="P ∘ (dP − D), N_q × N_kv (standard attention only)"),
    TensorSpec("D", "q", None, "stats", ACCUM_DTYPE, "D = rowsum(dO ∘ O) (FA2)"),
)

#: The attention's inputs: read-only in HBM (a schedule may not write or initialise them).
INPUT_TENSORS = frozenset(s.name for s in FORWARD_TENSORS + BACKWARD_TENSORS if s.role == "input")


#: the built-in tensors by name (every run's table starts as a copy)
_DEFAULT_SPECS = FORWARD_TENSORS + SPLIT_TENSORS + KERNEL_TENSORS + BACKWARD_TENSORS
_BUILT_IN = {s.name: s for s in _DEFAULT_SPECS}


class TensorTable:
    """The tensors a run knows about: the built-in ones plus any a schedule declares."""

    def __init__(self, specs=_DEFAULT_SPECS):
        self._specs = dict(_BUILT_IN) if specs is _DEFAULT_SPECS else {s.name: s for s in specs}

    def __getitem__(self, name: str) -> TensorSpec:
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(self._specs)
            raise ScheduleError(f"unknown tensor {name!r}; known tensors: {known} (declare new ones with ctx.declare)") from None

    def declare(self, spec: TensorSpec) -> None:
        if spec.name in self._specs and self._specs[spec.name] != spec:
            raise ScheduleError(f"tensor {spec.name!r} is already declared differently")
        self._specs[spec.name] = spec

    def __iter__(self):
        return iter(self._specs.values())
