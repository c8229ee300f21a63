"""Real-kernel presets: what the attention kernel you actually run moves (``--kernel``).

The papers' listings take B_r and B_c as parameters; the real kernels pick them from
tables by head dimension, GPU and features (:mod:`iosim.kernels.tile_tables`, docs/spec/kernels.md), and
deviate from the listings in ways that change global traffic (docs/spec/algorithms.md §7). A preset turns a
request such as "FlashAttention-2's forward and backward on an H100" into the kernel
launches flash-attn would make, each run through the simulator:

``flash-attn-2``
  * as PyTorch's SDPA calls it: a head dim that is no multiple of 8 runs padded to one, with
    the user's softmax scale (:func:`iosim.workload.layouts.sdpa_padded`, docs/spec/kernels.md §1.1);
  * forward: flash-attn's ``mha_fwd`` first applies the decode layout (one query row with
    grouped heads: :func:`iosim.workload.layouts.decode_layout`), then asks its split heuristic
    (docs/spec/kernels.md §3) with the split kernel's tiles; more than one split runs ``fa2-splitkv``
    (split kernel + combine), otherwise ``fa2`` with the forward table's tile (kernels.md §2);
  * backward: the three backward kernels (:mod:`iosim.schedules.fa2_kernel_backward`, named ``fa2_kernel_backward`` in the registry)
    with the backward table's tile (kernels.md §4).
``flash-attn-3``
  * forward only, FlashAttention-2's traffic structure with FA3's Hopper tiles (kernels.md §6);
    FA3's own split and pack heuristics are not modelled;
  * fp16 and bf16 only (as ``flash-attn-2``): FA3's FP8 forward writes O in bf16, which is not
    modelled, so fp8 is refused, not run with the 16-bit tiles.
``cudnn``
  * cuDNN's fused attention as PyTorch runs it on Hopper: ``fa2`` and ``fa2_kernel_backward``
    with TMA tiles (:mod:`iosim.kernels.cudnn_preset`); no kernel time model.
``triton-fa2``
  * forward only: iosim's own Triton kernel at one configuration (BLOCK_M, BLOCK_N,
    num_warps, num_stages): ``fa2`` with tile BLOCK_M × BLOCK_N, key blocks ascending
    (:mod:`iosim.kernels.triton_preset`, docs/triton.md).

A forward+backward request runs each pass with its own tile and adds the counts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import ProblemError, ScheduleError, require_choice
from ..workload.layouts import decode_layout, sdpa_padded, unaligned_row_bytes
from ..workload.problem import Problem
# the backward's notes are re-exported with the others (plan.LONG_BACKWARD_NOTE, plan.WAVE_ROWS_NOTE)
from .backward_notes import LONG_BACKWARD_NOTE, WAVE_ROWS_NOTE  # noqa: F401
from .backward_notes import long_backward
from .forward_notes import LONG_CAUSAL_NOTE, SPREAD_GROUP_NOTE, WAVES_D128_NOTE, WIDE_CAUSAL_NOTE  # noqa: F401
from .forward_notes import long_causal as _long_causal, spread_group as _spread_group, waves_d128 as _waves_d128
from .forward_notes import wide_causal as _wide_causal
from .coresidency import uneven_mn_factor
from .cudnn_preset import plan_cudnn
from .flash_code import UNMEASURED_NOTE as CODE_NOTE
from .flash_code import causal_code, code_bytes, partial_code
from .spill_frames import SpillFrames, even_mn, spill_frames
from .split_heuristic import default_num_splits
from .strided_rows import strided_rows
from .tile_tables import KernelTile, NoKernelTile, gpu_info, kernel_tile
from .triton_preset import DEFAULT_CONFIG, TritonConfig, triton_tile, unlaunchable

KERNELS = ("flash-attn-2", "flash-attn-3", "triton-fa2", "cudnn")
#: the dtypes flash-attn's presets model (cudnn and triton-fa2 check theirs with their tiles): another
#: dtype is refused, with the reason, never counted with a 16-bit tile
FLASH_DTYPES = ("fp16", "bf16")
OTHER_DTYPES = {
    ("flash-attn-2", "fp8"): "flash-attn 2's kernels are compiled for fp16 and bf16 only",
    ("flash-attn-2", "fp32"): "flash-attn 2's kernels are compiled for fp16 and bf16 only",
    ("flash-attn-3", "fp8"): ("FA3's FP8 forward is not modelled: docs/spec/kernels.md §6 lists its tiles, but it "
                              "writes O in bf16 (hopper/flash_api.cpp), which this preset would count in fp8"),
    ("flash-attn-3", "fp32"): "FA3 has no fp32 kernel",
}


@dataclass(frozen=True)
class KernelLaunch:
    """One pass as the kernel runs it: which schedule (a name in :mod:`iosim.schedules`), on
    which problem (the one the kernel really runs, e.g. decode's GQA swap;
    :func:`iosim.workload.layouts.decode_layout`), with which tile."""

    passes: str                    # "forward" or "backward"
    schedule: str
    problem: Problem
    tile: KernelTile
    schedule_options: dict
    #: the grid's batch dimension runs faster than its head dimension: flash-attn 2's
    #: (blocks, batch, heads) grids (``dim3 grid(num_m_block, params.b, params.h)`` in
    #: flash_fwd_launch_template.h, ``grid_m``/``grid_n`` in flash_bwd_launch_template.h), so
    #: one query head of every batch runs before the next query head (the L2 model's launch order)
    batch_fastest: bool = False
    #: where the L2 model is known to part from what was measured in this launch, and how
    #: far (shown with its DRAM bytes; None: nothing known)
    l2_note: str | None = None
    #: the tensors it writes with all heads' rows side by side (e.g. (B, N_kv, H, d): rows of
    #: different heads share lines; the L2 model plays them as lines, iosim.models.cache.lines)
    interleaved: tuple = ()
    #: the tensors it reads with all heads' rows side by side ((B, N_q, H, d), as PyTorch
    #: hands flash-attn 2's backward O and dO; Q, K and V of (B, N, H, d) inputs:
    #: iosim.models.cache.line_reads)
    interleaved_reads: tuple = ()
    #: spilled registers it reads before every lane wrote them: a DRAM fill per slot
    #: (:mod:`iosim.kernels.spill_frames`), or None
    frames: SpillFrames | None = None
    #: where the kernel time model is known to part from what was measured in this launch
    time_note: str | None = None
    #: kernel -> bytes of its code it reads from DRAM once (:mod:`iosim.kernels.flash_code`), or None
    code: dict | None = None
    #: a causal forward's code against the dense one's (:class:`iosim.kernels.flash_code.CausalCode`), or None
    causal_code: object | None = None

    def describe(self) -> dict:
        note = {k: v for k, v in (("l2_note", self.l2_note), ("time_note", self.time_note)) if v is not None}
        return {"pass": self.passes, "schedule": self.schedule, "block_q": self.tile.block_q,
                "block_kv": self.tile.block_kv, "kernel": self.tile.kernel, "rule": self.tile.rule,
                **self.schedule_options, **note}


#: where a preset splits the keys, for the message that refuses algorithm='fa2-splitkv' elsewhere
SPLIT_WHERE = {"cudnn": " but for one query row (its decode kernel picks its own splits)"}


def plan(kernel: str, algorithm: str, problem: Problem, profile, passes: str,
         num_splits: int | None = None, config=None) -> list[KernelLaunch]:
    """The launches ``kernel`` makes for ``passes`` of ``algorithm`` on ``problem``;
    ``config``: the Triton kernel's (BLOCK_M, BLOCK_N, num_warps, num_stages) (``triton-fa2`` only)."""
    require_choice("kernel", kernel, KERNELS)
    if algorithm not in ("fa2", "fa2-splitkv"):
        raise ProblemError(f"kernel={kernel!r} runs FlashAttention-2's loop order: use algorithm='fa2' "
                           f"(got {algorithm!r})", field="algorithm")
    if algorithm == "fa2-splitkv" and (kernel in ("triton-fa2", "flash-attn-3") or
                                       kernel == "cudnn" and problem.seq_len_q > 1):
        raise ProblemError(f"kernel={kernel!r} is modelled without a split-KV kernel{SPLIT_WHERE.get(kernel, '')}: "
                           "use algorithm='fa2' (flash-attn-2 picks its own key splits)", field="algorithm")
    if num_splits is not None and kernel != "flash-attn-2":
        raise ProblemError(f"kernel={kernel!r} picks its own key splits (num_splits is flash-attn-2's, whose split "
                           "kernel it selects)", field="num_splits")
    if config is not None and kernel != "triton-fa2":
        raise ProblemError(f"kernel={kernel!r} picks its own tiles; a kernel config is for triton-fa2",
                           field="kernel_config")
    if kernel in ("flash-attn-2", "flash-attn-3") and problem.dtype not in FLASH_DTYPES:
        raise ProblemError(f"kernel={kernel!r} runs fp16 or bf16, not {problem.dtype}: "
                           f"{OTHER_DTYPES.get((kernel, problem.dtype), 'no kernel of it takes that dtype')}",
                           field="dtype")
    runs = sdpa_padded(problem) if kernel == "flash-attn-2" else problem   # PyTorch pads d (kernels.md §1.1)
    try:
        if kernel == "triton-fa2":
            return [_triton(problem, profile, passes, config)]
        if kernel == "cudnn":
            return plan_cudnn(problem, profile, passes, KernelLaunch)
        launches = []
        if "forward" in passes:
            launches.append(_forward(kernel, runs, profile, num_splits))
        if "backward" in passes:
            launches.append(_backward(kernel, runs, profile))
        return launches
    except NoKernelTile as exc:
        padded = f" (head dim {problem.head_dim}, padded by PyTorch to a multiple of 8)" \
            if runs.head_dim != problem.head_dim else ""
        raise ProblemError(f"kernel={kernel!r}: {exc}{padded}", field="kernel") from None


def _forward(kernel: str, problem: Problem, profile, num_splits: int | None) -> KernelLaunch:
    d = problem.head_dim
    run = decode_layout(problem)  # the problem the forward kernels really run
    if kernel == "flash-attn-3":
        tile = kernel_tile("fa3", d, profile, causal=problem.causal)
        return KernelLaunch("forward", "fa2", run, tile, {})
    split_tile = kernel_tile("fa2-splitkv", d, profile)
    if num_splits is None:
        n_blocks = -(-run.seq_len_kv // split_tile.block_kv)
        num_splits = default_num_splits(run.batch, run.heads, run.seq_len_q, n_blocks, profile.sm_count,
                                        split_tile.block_q)
    cc = gpu_info(profile).compute_capability
    if num_splits > 1:
        code = code_bytes(("splitkv", "combine"), run, split_tile, num_splits, cc)
        return KernelLaunch("forward", "fa2-splitkv", run, split_tile, {"num_splits": num_splits, "kv_descending": True},
                            l2_note=_notes(partial_code("splitkv", run, split_tile, num_splits, code),
                                           None if code else CODE_NOTE), code=code,
                            **strided_rows(run, run is problem, "forward"),
                            causal_code=causal_code("splitkv", run, split_tile, num_splits, cc))
    tile = kernel_tile("fa2", d, profile, causal=run.causal, seq_len_kv=run.seq_len_kv)
    frames, note = spill_frames(tile, d, run.causal, cc)
    code = code_bytes(("main",), run, tile, 1, cc)
    # flash_fwd_kernel walks n_block from n_block_max − 1 down (docs/spec/algorithms.md §7.2)
    return KernelLaunch("forward", "fa2", run, tile, {"kv_descending": True}, batch_fastest=True,
                        **strided_rows(run, run is problem, "forward"),
                        l2_note=_notes(note, _long_causal(run, profile) or _wide_causal(run, tile, profile)
                                       or _waves_d128(run, tile, profile),
                                       _spread_group(run, tile, profile),
                                       partial_code("main", run, tile, 1, code), None if code else CODE_NOTE),
                        frames=frames,
                        time_note=_instruction_fetch(run, tile), code=code,
                        causal_code=causal_code("main", run, tile, 1, cc))


def _notes(*notes) -> str | None:
    """The launch's L2 notes as one, or None."""
    return "; ".join(n for n in notes if n) or None


def _triton(problem: Problem, profile, passes: str, config) -> KernelLaunch:
    """The Triton kernel's one launch (forward only; MHA with N_q = N_kv: its layout is (B, H, N, d))."""
    if passes != "forward":
        raise ScheduleError("kernel='triton-fa2' is a forward kernel: use passes='forward'", field="kernel")
    if problem.kv_heads not in (None, problem.heads) or problem.seq_len_q != problem.seq_len_kv:
        raise ProblemError("kernel='triton-fa2' runs multi-head attention with equal query and key lengths "
                           "(no GQA, no --seq-len-q/--seq-len-kv)", field="kernel")
    cfg = TritonConfig.parse(DEFAULT_CONFIG if config is None else config)
    tile = triton_tile(cfg, problem.head_dim, problem.dtype, profile)
    reasons = unlaunchable(cfg, tile, profile)
    if reasons:
        raise ProblemError(f"triton config {cfg.label()}: needs {tile.shared_bytes:,} B of shared memory (the Q tile "
                           f"and {cfg.num_stages} stage(s) of K and V tiles) and {cfg.num_warps * 32} threads; on "
                           f"{profile.name}: {'; '.join(reasons)}: Triton cannot launch it", field="kernel_config")
    return KernelLaunch("forward", "fa2", problem, tile, {})


def _backward(kernel: str, problem: Problem, profile) -> KernelLaunch:
    if kernel == "flash-attn-3":
        raise ScheduleError("the spec has no FlashAttention-3 backward tiles; kernel='flash-attn-3' is forward only",
                            field="kernel")
    tile = kernel_tile("fa2", problem.head_dim, profile, direction="bwd", causal=problem.causal)
    options = {"stats_loads": tile.stats_loads} if tile.stats_loads else {}
    fa2 = kernel == "flash-attn-2"
    if fa2:
        options["q_descending"] = True        # flash_bwd_kernel.h: m_block = m_block_max - 1, then --m_block
    off_tiles = problem.head_dim == tile.kernel_head_dim and not even_mn(problem, tile)   # lengths, not d
    uneven_mn = uneven_mn_factor(tile.kernel, tile.block_q, tile.block_kv, tile.warps, tile.kernel_head_dim)
    if fa2 and off_tiles and not problem.causal and uneven_mn:   # dense: its Is_even_MN = false instantiation
        tile = dataclasses.replace(tile, coresident=uneven_mn)
    code = code_bytes(("dot_do_o", "dq_dk_dv", "convert_dq"), problem, tile, 1,
                      gpu_info(profile).compute_capability) if fa2 else None
    return KernelLaunch("backward", "fa2_kernel_backward", problem, tile, options,
                        batch_fastest=fa2, code=code,
                        l2_note=_notes(_shared_sectors(problem), _gqa_decode(problem),
                                       long_backward(problem, tile, profile), None if code else CODE_NOTE)
                        if fa2 else None,
                        time_note=_one_query_block(problem, tile) if fa2 else None,
                        **(strided_rows(problem, True, "backward") if fa2 else {}))


#: causal forwards of at most this many key blocks a query block wait measurably for instruction
#: fetch in flash-attn 2's uneven instantiation (docs/validation/2026-12-04-even-mn.md)
FETCH_BOUND_KEY_BLOCKS = 16
FETCH_NOTE = (
    "not exact: this causal forward runs flash-attn 2's uneven instantiation (lengths that are no multiple of "
    "the tile, or a head dim that is no kernel size: Is_even_MN = false), whose code is about 1.6 x the even "
    "one's; with {n} key blocks or fewer a query block its warps wait for instruction fetch. The time model "
    "has the first wave's wait at the kernel head dims only (docs/validation/2026-12-04-mask-cost.md), not "
    "the waits of the blocks after it: on the H200 such launches took 0.84-1.71 x the predicted time "
    "(median 1.35 over 30 launches)")


def _instruction_fetch(run: Problem, tile: KernelTile) -> str | None:
    """The time note of a flash-attn 2 causal forward in its uneven instantiation with short
    query blocks, or None. Above kHeadDim 128 flash-attn compiles only that instantiation, and
    the time model's steps were measured on it."""
    uneven = tile.kernel_head_dim <= 128 and not even_mn(run, tile)
    short = -(-run.seq_len_kv // tile.block_kv) <= FETCH_BOUND_KEY_BLOCKS
    return FETCH_NOTE.format(n=FETCH_BOUND_KEY_BLOCKS) if run.causal and uneven and short else None


ONE_QUERY_BLOCK_NOTE = (
    "not exact: this backward has a single query block (a decode), where flash-attn 2's backward kernels "
    "at kHeadDim <= 96, and GQA ones whose dK and dV rows share sectors at any kHeadDim, took 1.02-1.41 x the "
    "predicted time on the H200 (median 1.16 over 55 launches); the cause is open: not the reductions into "
    "one dQaccum tile, not instruction fetch (docs/validation/2026-12-04-red-contention.md; on an H100 such "
    "GQA blocks took 1.2-2.7 us more each than one head's: docs/validation/2026-12-06-decode-bwd.md)")


def _one_query_block(problem: Problem, tile: KernelTile) -> str | None:
    """The time note of a flash-attn 2 backward over a single query block at kHeadDim <= 96, or of a
    GQA one whose rows share sectors (:func:`_shared_sectors`) at any kHeadDim, or None."""
    marked = tile.kernel_head_dim <= 96 or _shared_sectors(problem) is not None
    return ONE_QUERY_BLOCK_NOTE if problem.seq_len_q <= tile.block_q and marked else None


SHARED_SECTORS_NOTE = (
    "not exact: the main backward kernel's dK and dV rows ({row} bytes, per query head into flash-attn's "
    "(B, N_kv, H, d) buffers) share 128-byte lines and 32-byte sectors with other query heads' rows; "
    "the L2 model plays those buffers as lines, with a 64-byte read-modify-write for each sector written "
    "in halves whose line left the L2 between them, where it plays every head (not in a sample of chunks "
    "or in windows of rounds); on the H200 the model's DRAM reads of 40 such backwards were 0.74-1.10 x the "
    "measured (33 within 10 %; docs/validation/2026-12-04-lines.md)")


#: a GQA backward of a few query rows: where the L2 model reads too little (the committed grids'
#: 33 such backwards, 2 of them with (B, N, H, d) inputs; an MHA one is within 5 %)
GQA_DECODE_ROWS = 16
GQA_DECODE_NOTE = (
    "not exact: a GQA backward of N_q <= 16 query rows; on the H200 the model's DRAM reads of 33 such backwards "
    "were 0.72-1.00 x the measured (21 within 10 %): the next query head of a group re-reads its K/V head about "
    "a partition's traffic later, and "
    "the GPU keeps less of it than the model (docs/cache.md, \"Sets\")")


def _gqa_decode(problem: Problem) -> str | None:
    """:data:`GQA_DECODE_NOTE` for a GQA backward of at most GQA_DECODE_ROWS query rows, or None."""
    return GQA_DECODE_NOTE if problem.group_size > 1 and problem.seq_len_q <= GQA_DECODE_ROWS else None


def _shared_sectors(problem: Problem) -> str | None:
    """What the L2 model is known to miss in this backward launch, or None: GQA, rows of
    2-byte elements an odd number of 16-byte chunks long (d = 8 mod 16)."""
    row = unaligned_row_bytes(problem)
    return SHARED_SECTORS_NOTE.format(row=row) if row and problem.kv_heads != problem.heads else None

