"""The code a flash-attn 2 launch reads from DRAM: its kernel's instructions.

Nsight Compute flushes the caches before each kernel it measures, so a measured launch reads
its kernel's instructions from DRAM once, through the L2, the first SM to run a block fetching
each line and the rest finding it there. A launch therefore reads, beyond its tensors, about
the ``.text`` of the instantiation it runs: measured on the H200 over the committed runs
(docs/validation/2026-12-04-code.md), the DRAM reads beyond the model's are that size to a
median 0 B on the split-KV forward and 2.2–2.4 KB more (about the parameter bank, which is
read too) on the combine and the three backward kernels; on small launches it is most of the
gap (7–10 KB of a 8–16 KB dot_do_o, 70 KB of a 0.26 MB split-KV forward).

The sizes are PyTorch 2.11.0+cu130's ``libtorch_cuda.so`` for sm_90, read with
``cuobjdump -elf`` (``flash_code_sm90.json``, made by ``benchmarks/flash_code.py``), for the
traits each kernel and kHeadDim runs with on the H200. Which instantiation a launch runs is
flash-attn's launch code (flash_fwd_launch_template.h, flash_bwd_launch_template.h): its
template flags after the traits, e.g. ``flash_fwd_kernel<traits, Is_dropout, Is_causal,
Is_local, Has_alibi, Is_even_MN, Is_even_K, Is_softcap, Return_softmax>``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from dataclasses import dataclass

from .combine_kernel import block_rows
from .spill_frames import MEASURED_ON, even_mn, masking_steps

#: a causal forward whose thread blocks all run fewer key blocks than the unrolled copies of its
#: step: it may fetch only part of its code, and the model counts all of it (session 31)
PARTIAL_CODE_NOTE = (
    "not exact: no thread block of this causal forward runs more than {steps} key block(s), fewer than the {copies} "
    "unrolled copies of the step in its code ({code:,} B), and the L2 model counts all of that code; on the H200 the "
    "model's DRAM reads of 22 such launches were 1.00-1.20 x the measured (21 within 10 %); 16 of them, measured "
    "for it, read 0.54-1.01 of their code from DRAM beyond their inputs (65-89 KB; docs/validation/2026-12-04-code.md)")

TABLE = os.path.join(os.path.dirname(__file__), "flash_code_sm90.json")
UNMEASURED_NOTE = ("the L2 model adds no DRAM reads for the kernels' code, read once a launch after the "
                   "profiler's cache flush: only PyTorch's sm_90 build was read (docs/validation/2026-12-04-code.md)")


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    with open(TABLE) as f:
        return json.load(f)["bytes"]


def _bits(*flags) -> str:
    return ",".join(str(int(f)) for f in flags)


def instantiation(kernel: str, problem, tile, num_splits: int = 1) -> str:
    """The template flags after the traits of the flash-attn 2 kernel ``kernel`` (iosim's
    name: main, splitkv, combine, dot_do_o, dq_dk_dv, convert_dq) for ``problem`` (the one the
    kernel runs) with ``tile``; no dropout, local window, ALiBi or softcap (PyTorch's SDPA)."""
    kd, c = tile.kernel_head_dim, problem.causal
    even_k = problem.head_dim == kd
    even = even_mn(problem, tile)         # Is_even_MN && Is_even_K && kHeadDim ≤ 128, as instantiated
    if kernel == "main":
        return _bits(0, c, 0, 0, even, even_k, 0, 0)
    if kernel == "splitkv":
        return _bits(c, 0, 0, even, even_k, 0, 1, 0)
    if kernel == "combine":          # kBlockM, Log_max_splits (the smallest 2^k ≥ num_splits), Is_even_K
        return _bits(block_rows(kd), max(1, (num_splits - 1).bit_length()), even_k)
    if kernel == "dq_dk_dv":
        return _bits(0, c, 0, 0, even, even_k, 0)
    if kernel == "dot_do_o":         # Clear_dQaccum: dQaccum is zeroed here (not deterministic)
        return _bits(1)
    if kernel == "convert_dq":
        return ""
    raise KeyError(kernel)


def code_bytes(kernels, problem, tile, num_splits: int, compute_capability) -> dict | None:
    """kernel -> bytes of its code a launch reads from DRAM, for the flash-attn 2 ``kernels`` of
    one pass; None where the build was not read (another architecture) or lacks one of them."""
    if tuple(compute_capability or ()) != MEASURED_ON:
        return None
    sizes = _table()
    out = {}
    for kernel in kernels:
        got = sizes.get(kernel, {}).get(problem.dtype, {}).get(str(tile.kernel_head_dim), {})
        flags = instantiation(kernel, problem, tile, num_splits)
        if flags not in got:
            return None
        out[kernel] = got[flags]
    return out


@dataclass(frozen=True)
class CausalCode:
    """A causal flash-attn 2 forward's code (bytes) against its dense instantiation's: its loop
    unrolls the masking steps (``n_masking_steps``: ⌈kBlockM / kBlockN⌉, one more when uneven)
    and a step of the loop body, ``copies`` copies of a step in all; the dense kernel two."""

    causal: int
    dense: int
    copies: int

    def executed(self, steps: int) -> tuple[float, float]:
        """(causal, dense) bytes of code a thread block of ``steps`` key blocks runs: the share of
        their step copies it reaches (a block of one key block runs one masking step only)."""
        return self.causal * min(1.0, steps / self.copies), self.dense * min(1.0, steps / 2)


def causal_code(kernel: str, problem, tile, num_splits: int, compute_capability) -> CausalCode | None:
    """The :class:`CausalCode` of a causal forward launch of ``kernel`` (main or splitkv), or None:
    not causal, a build not read, or the main kernel at a head dim that is no kernel size
    (``Is_even_K = false``), whose measured extra fell with the key blocks (d = 112: 19 µs at 16
    key blocks a block, 13 at 64; docs/validation/2026-12-04-mask-cost.md) and is not modelled."""
    if not problem.causal or (kernel == "main" and problem.head_dim != tile.kernel_head_dim):
        return None
    both = [code_bytes((kernel,), dataclasses.replace(problem, causal=c), tile, num_splits, compute_capability)
            for c in (True, False)]
    if None in both:
        return None
    return CausalCode(both[0][kernel], both[1][kernel], step_copies(problem, tile))


def step_copies(problem, tile) -> int:
    """The copies of the step a causal forward's code holds: its ``n_masking_steps`` unrolled
    masking steps and the loop body."""
    return masking_steps(tile.block_q, tile.block_kv, True, even_mn(problem, tile)) + 1


def partial_code(kernel: str, problem, tile, num_splits: int, code: dict | None) -> str | None:
    """:data:`PARTIAL_CODE_NOTE` for a causal forward launch of ``kernel`` (main or splitkv) whose
    blocks all run fewer key blocks (a split's: ⌈n_blocks / num_splits⌉) than its code's copies
    of the step (the masking steps and the loop body), or None; None where ``code`` is unknown."""
    if not problem.causal or not code or kernel not in code:
        return None
    steps = -(-(-(-problem.seq_len_kv // tile.block_kv)) // num_splits)
    copies = step_copies(problem, tile)
    return PARTIAL_CODE_NOTE.format(steps=steps, copies=copies, code=code[kernel]) if steps < copies else None


__all__ = ["PARTIAL_CODE_NOTE", "UNMEASURED_NOTE", "CausalCode", "causal_code", "code_bytes", "instantiation",
           "partial_code", "step_copies"]
