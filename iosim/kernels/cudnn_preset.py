"""The ``cudnn`` preset: cuDNN's fused attention as PyTorch 2.11 runs it on Hopper
(``SDPBackend.CUDNN_ATTENTION``; measured on an H200 with cuDNN 9.19,
docs/validation/2026-12-01-cudnn.md; d = 32-256 and N_q = 1 in 2026-12-04-s29-cudnn.md).

What the launches show (names, grids, blocks, Nsight Compute's counters):

* forward, ``…sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x{64,128,192,256}…``: 384 threads (a
  producer warpgroup and two consumer warpgroups of 64 query rows), a persistent grid of
  min(tiles, #SMs) thread blocks over tiles of B_r = 128 query rows of one head; Q_i once,
  then K_j, V_j for every visible key block (B_c = 128), all through TMA in whole tiles of
  128 rows × the kernel's head dim (64, 128, 192 or 256, the first at least d: the name's
  last number);
  O by TMA store and L by plain stores, real rows and columns only. That is ``fa2`` with
  ``tma_box``.
* backward: ``cudnn::compute_dot_do_o…`` (D and a zeroed fp32 dQaccum, N_q × d), the
  persistent ``…flash_bprop_wgmma_f16_knob_26_64x64x{64,128,192,256}…`` (B_c = 128 keys per
  tile, query steps of B_r = 64; K, V, Q, dO by TMA in whole tiles; L and D by plain
  predicated loads; dQ_i added into dQaccum by TMA reductions; dK, dV by TMA stores; above
  d = 128 two thread blocks a tile, each loading all of it) and ``cudnn::convert_dq_to_16bits``;
  under GQA, two ``cudnn::fmha_reduce_head`` (dK, dV). That is ``fa2_kernel_backward`` with
  ``tma_box``, ``rounded_buffers=False`` and ``tile_blocks``.
* a forward of one query row runs cuDNN's sm80 ``…flash_fprop_wmma_f16_knob_35_16x128xD…`` (128
  threads; ``knob_3_64x64x64`` at N_kv ≤ 256) over (split, K/V head, batch), then, where the keys
  are split, ``cudnn::lean_reduction_kernel`` (docs/validation/2026-12-06-cudnn-splits.md): the
  ``cudnn_decode`` schedule on the decode layout's problem, with :func:`decode_splits` splits.
  Refused where it was not measured (:func:`check_decode`): groups of more than 16 query heads
  (a block's Q tile has 16 rows), GPUs without 132 SMs (the split rule's bounds, 66 and 256 blocks,
  were read on 132-SM chips only). At head dims that are no multiple of 16 the tiles' bytes are the
  schedule's; what the LSU counter adds there is :func:`iosim.gpu.cudnn_lsu.decode_load_bytes`'s.

Outside the schedules (they are the kernels' bookkeeping, not the attention's tensors):
the persistent kernels take tiles from an atomic counter, one 4-byte atomic per tile and
one more per thread block, each answered by a 32-byte sector through the L1's crossbar
(:func:`scheduler_bytes`); and ``convert_dq_to_16bits`` gives each thread block 2,048
elements (1,024 where d is no multiple of 16) starting at a multiple of ⌊chunk/d⌋ rows, so for d = 96
neighbouring blocks overlap (:func:`convert_dq_elements`); ``fmha_reduce_head`` does the same with
1,024 (d = 192 overlaps).

Time: the persistent kernels' steps are measured on launches made for them (:mod:`.cudnn_steps`), and
:mod:`iosim.models.cudnn_time` schedules a launch's tiles with them. Where no step was measured (another GPU, head
dim or dtype; the sm80 decode kernel) the launch's time is the roofline's lower bound, and the launch says so.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import ProblemError, ScheduleError
from ..workload.layouts import decode_layout
from .cudnn_steps import CudnnStep, cudnn_step, missing_note
from .tile_tables import KernelTile, gpu_info

SOURCE = "cuDNN 9.19 via PyTorch 2.11 on an H200: launch names, grids and ncu counters (docs/validation/2026-12-01-cudnn.md)"
#: the measured head dims' kernels run a head dim of 64, 128, 192 or 256 (d = 96 runs the 128 kernel,
#: 160 the 192 one: docs/validation/2026-12-01-cudnn.md, 2026-12-04-s29-cudnn.md)
KERNEL_HEAD_DIMS = (64, 128, 192, 256)
DECODE_SOURCE = ("cuDNN 9.19 via PyTorch 2.11 on an H200 and an H100: launch grids of 300 configs and ncu's LSU "
                 "counters of 102 launches (docs/validation/2026-12-06-cudnn-splits.md)")
#: the decode forward's split rule (docs/validation/2026-12-06-cudnn-splits.md): no split up to this many keys
NO_SPLIT_KEYS = 512
#: ... or past this many (batch, K/V head) pairs: half the SMs of the 132-SM chips it was read on
MAX_SPLIT_PAIRS = 66
MAX_SPLITS, MIN_SPLIT_KEYS, MAX_SPLIT_BLOCKS = 64, 128, 256
#: the decode kernel's Q tile (rows), its key tile (rows) and the head-dim columns a thread block serves
DECODE_Q_ROWS, DECODE_KEY_TILE, DECODE_HALF = 16, 128, 128
#: the SM count of the GPUs the split rule was read on (an H200 and an H100 SXM)
DECODE_SMS = 132
REDUCE_ELEMENTS = 1024     # fmha_reduce_head: a thread block's elements of one head's dK or dV
CONVERT_ELEMENTS = 2048     # convert_dq_to_16bits: 128 threads × 16 fp32 values per thread block
CONVERT_ELEMENTS_ODD = 1024  # the same at head dims no multiple of 16: 8 fp32 values per thread
SCHEDULER_SECTOR = 32       # bytes the crossbar returns for one 4-byte atomic of the tile scheduler
STUDY_NOTE = ("roofline, a lower bound: cuDNN's steps were measured on its own tiles, so a study's candidate tiles, "
              "its own among them, are all timed by the roofline")


@dataclass(frozen=True)
class CudnnTile(KernelTile):
    """A cuDNN launch's tile: its kernel's measured steps, or why it has none."""

    #: why the launch has no kernel time model (the roofline, a lower bound), where it has none
    time_model_note: str | None = None
    #: thread blocks a tile (the bprop above d = 128: two, each with half the head dim's outputs)
    blocks_per_tile: int = 1
    #: the kernel's measured steps (:class:`.cudnn_steps.CudnnStep`), where measured
    steps: CudnnStep | None = None

    def with_blocks(self, block_q: int, block_kv: int) -> "CudnnTile":
        """A study's candidate tile: timed by the roofline, as every candidate is (the steps are the kernel's own
        tile's, and a ranking compares like with like)."""
        return dataclasses.replace(self, block_q=block_q, block_kv=block_kv, steps=None, time_model_note=STUDY_NOTE)


def kernel_head_dim(d: int) -> int:
    """The head dim of the cuDNN kernel that runs ``d`` (measured: 32, 64 → 64; 80-128 → 128;
    160, 192 → 192; 256 → 256)."""
    for k in KERNEL_HEAD_DIMS:
        if d <= k:
            return k
    raise ProblemError(f"kernel='cudnn': head dim {d} is not modelled (cuDNN's kernels for d > 256 were not "
                       "measured; measured: 32-256)", field="kernel")


def cudnn_tiles(problem, profile) -> tuple[CudnnTile, CudnnTile]:
    """(forward tile, backward tile) of cuDNN's Hopper kernels for ``problem``."""
    if gpu_info(profile).compute_capability != (9, 0):
        raise ProblemError(f"kernel='cudnn' models cuDNN's Hopper (sm90) kernels; profile {profile.name!r} "
                           "is not a Hopper GPU", field="kernel")
    if problem.dtype not in ("fp16", "bf16"):
        raise ProblemError("kernel='cudnn' runs fp16 or bf16 (the measured kernels)", field="dtype")
    if problem.head_dim % 8:
        raise ProblemError(f"kernel='cudnn': head dim {problem.head_dim} is no multiple of 8, which PyTorch's cuDNN "
                           "backend refuses (PyTorch pads a head dim only for flash-attn: use kernel='flash-attn-2')",
                           field="kernel")
    kd = kernel_head_dim(problem.head_dim)
    gpu = f"{profile.name} (sm90)"
    fwd = CudnnTile(128, 128, 12, f"sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x{kd}", kd,
                    "2 consumer warpgroups × 64 query rows; keys by 128", SOURCE, gpu,
                    **_timing("fprop", problem, profile, kd))
    split = 2 if kd > 128 else 1         # measured: grid and scheduler atomics 2 × the key tiles above d = 128
    bwd = CudnnTile(64, 128, 12, f"sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x{kd}", kd,
                    "128 keys per tile; query steps of 64" + ("; two thread blocks a tile" if split > 1 else ""),
                    SOURCE, gpu, blocks_per_tile=split, **_timing("bprop", problem, profile, kd))
    return fwd, bwd


def _timing(kernel: str, problem, profile, kd: int) -> dict:
    """The tile's measured steps, or the note that says it has none (:mod:`.cudnn_steps`)."""
    step = cudnn_step(kernel, profile.name, kd, problem.dtype)
    if step is None or (problem.causal and step.causal_step_s is None):
        return {"time_model_note": missing_note(kernel, profile.name, kd, problem.dtype, problem.causal)}
    return {"steps": step}


def check_problem(problem, profile, passes: str = "forward+backward") -> tuple[CudnnTile, CudnnTile]:
    """The preset's tiles for ``problem``; ProblemError or ScheduleError (one line) where it has
    no model: a profile that is no Hopper GPU, fp32 or fp8, d > 256, causal with N_q ≠ N_kv,
    a forward (in ``passes``) of one query row."""
    tiles = cudnn_tiles(problem, profile)
    if problem.causal and problem.seq_len_q != problem.seq_len_kv:
        raise ScheduleError("kernel='cudnn': causal attention with N_q ≠ N_kv was not measured; no model",
                            field="kernel")
    if "forward" in passes and problem.seq_len_q == 1:
        check_decode(problem, profile)
    return tiles


def check_decode(problem, profile) -> None:
    """ScheduleError (one line) where the decode forward was not measured (see the module's docstring)."""
    where = "docs/validation/2026-12-06-cudnn-splits.md"
    if problem.group_size > DECODE_Q_ROWS:
        raise ScheduleError(f"kernel='cudnn': a forward of one query row with {problem.group_size} query heads a K/V "
                            f"head is not modelled: the decode kernel's Q tile has {DECODE_Q_ROWS} rows, and larger "
                            f"groups were not measured ({where})", field="kernel")
    if profile.sm_count != DECODE_SMS:
        raise ScheduleError(f"kernel='cudnn': the decode forward's split rule was read on GPUs of {DECODE_SMS} SMs; "
                            f"{profile.name} has {profile.sm_count}, where its bounds may differ ({where})",
                            field="kernel")


def decode_splits(n_kv: int, pairs: int) -> int:
    """S, the key splits of cuDNN's decode forward for N_kv keys and ``pairs`` = B · H_kv: 1 where
    N_kv ≤ 512 or pairs > 66; else the largest power of two ≤ 64 with ⌈N_kv / S⌉ ≥ 128 and
    pairs · S ≤ 256 (read from 300 configs' launch grids, docs/validation/2026-12-06-cudnn-splits.md)."""
    if n_kv <= NO_SPLIT_KEYS or pairs > MAX_SPLIT_PAIRS:
        return 1
    s = MAX_SPLITS
    while s > 1 and (-(-n_kv // s) < MIN_SPLIT_KEYS or pairs * s > MAX_SPLIT_BLOCKS):
        s //= 2
    return s


def decode_halves(d: int) -> int:
    """Thread blocks a split of cuDNN's decode kernel: one for each DECODE_HALF columns of the head dim."""
    return -(-d // DECODE_HALF)


def decode_tile(problem, profile) -> CudnnTile:
    """The decode kernel's tile: 16 query rows (a group's g ≤ 16), key blocks of 128."""
    d = problem.head_dim
    kd = 64 if d <= 64 else 128 if d <= 128 else 256
    two = "; two blocks a split" if decode_halves(d) > 1 else ""
    rule = "one query row: a block a split of a K/V head's keys" + two
    return CudnnTile(DECODE_Q_ROWS, DECODE_KEY_TILE, 4, f"sm80_flash_fprop_wmma_f16_knob_35_16x128x{kd}", kd, rule,
                     DECODE_SOURCE, f"{profile.name} (sm90)",
                     time_model_note="roofline, a lower bound: no kernel time model for cuDNN's sm80 decode kernel "
                                     "and its reduction (their times were not modelled)")


def plan_cudnn(problem, profile, passes: str, launch_cls) -> list:
    """The ``cudnn`` preset's launches (``launch_cls``: :class:`iosim.kernels.plan.KernelLaunch`)."""
    fwd, bwd = check_problem(problem, profile, passes)
    out = []
    if "forward" in passes and problem.seq_len_q == 1:
        run = decode_layout(problem)
        out.append(launch_cls("forward", "cudnn_decode", run, decode_tile(run, profile),
                              {"num_splits": decode_splits(run.seq_len_kv, run.batch * run.heads),
                               "halves": decode_halves(run.head_dim)}))
    elif "forward" in passes:
        out.append(launch_cls("forward", "fa2", problem, fwd, {"tma_box": fwd.kernel_head_dim}))
    if "backward" in passes:
        out.append(launch_cls("backward", "fa2_kernel_backward", problem, bwd,
                              {"tma_box": bwd.kernel_head_dim, "rounded_buffers": False,
                               "tile_blocks": bwd.blocks_per_tile, "q_descending": True}))
    return out


def persistent_grid(tiles: int, sm_count: int) -> int:
    """Thread blocks of a persistent launch: one per SM, at most one per tile."""
    return min(tiles, sm_count)


def scheduler_bytes(tiles: int, sm_count: int) -> int:
    """Crossbar bytes of the tile scheduler: tiles + thread blocks atomics, a sector each."""
    return SCHEDULER_SECTOR * (tiles + persistent_grid(tiles, sm_count))


def convert_chunk(d: int) -> int:
    """A ``convert_dq_to_16bits`` thread block's dQaccum elements: 2,048, or 1,024 at head dims that are
    no multiple of 16 (its grids at d = 40, 72, 120, 152, 200: ⌈N / ⌊1024/d⌋⌉ blocks a head, and the
    loads those blocks give, exactly; at d = 64, 80, 96, 112, 160, 192: ⌈N / ⌊2048/d⌋⌉)."""
    return CONVERT_ELEMENTS if d % 16 == 0 else CONVERT_ELEMENTS_ODD


def convert_dq_elements(rows: int, d: int, chunk: int | None = None) -> int:
    """dQaccum elements ``convert_dq_to_16bits`` moves per head: thread block b covers
    ``chunk`` elements (:func:`convert_chunk` unless given) from row b·⌊chunk/d⌋, clipped at the
    head's end. ``fmha_reduce_head`` moves its rows the same way in chunks of REDUCE_ELEMENTS (its
    grid at d = 192, N = 2,048: 410 = ⌈2,048 / 5⌉ blocks a K/V head)."""
    chunk = convert_chunk(d) if chunk is None else chunk
    step = (chunk // d) * d
    total = rows * d
    blocks = -(-rows // (chunk // d))
    return sum(min(chunk, total - b * step) for b in range(blocks))
