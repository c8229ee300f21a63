"""The ``triton-fa2`` preset: how iosim's own Triton FlashAttention-2 forward kernel
(:mod:`iosim.gpu.triton_attention`) launches for one configuration (docs/triton.md).

A configuration is Triton's four knobs, ``(BLOCK_M, BLOCK_N, num_warps, num_stages)``.
What follows from them, as Triton compiles the kernel:

* **Launch grid** ``(cdiv(N, BLOCK_M), B·H)``: axis 0 (the query block) is the fastest, so
  the thread blocks that run together are consecutive query blocks of one head (which
  decides what the L2 shares); each walks its key blocks in ascending order — the ``fa2``
  schedule with tile B_r × B_c = BLOCK_M × BLOCK_N, ``kv_descending`` off.
* **Tensor-core instruction** (Triton's ``AccelerateMatmul`` pass): on sm90 a ``tl.dot``
  becomes a warpgroup MMA (``wgmma``, MMA v3) when ``num_warps % 4 == 0`` and the result's
  rows are a multiple of 64 (``supportMMA``), else ``mma.sync`` (MMA v2); sm80–89 always
  run MMA v2.
* **Warps.** The two products are chained (S feeds P·V), and Triton then stacks the warps
  along one axis: MMA v3 along the query rows (``warpsPerTileV3``); MMA v2 along the rows
  when BLOCK_M ≥ BLOCK_N, else along the keys (``warpsPerTileV2``). A warp's instruction
  covers at least 16 rows (``m16n8k16``; a warpgroup 64), so fewer rows per warp are padded:
  the products are computed for ``max(BLOCK_M, 16 · warps along the rows)`` rows.
* **Shared memory**: the Q tile (wgmma reads it from shared memory; mma.sync passes it
  through shared memory once to reach its register layout) plus ``num_stages`` buffers of
  the K tile and of the V tile (the software pipeliner's ring; with ``num_stages = 1``
  the loop is not pipelined and each tile still passes through one buffer):
  ``width · (BLOCK_M·d + num_stages · 2·BLOCK_N·d)`` bytes. The device script checks it
  against the compiled kernel's ``metadata.shared``.
* **Registers per thread** (an estimate; the device script records ``n_regs``): the fp32
  O accumulator and S tile (P, 16-bit pairs, is converted from S piece by piece and takes
  S's registers), Q's operand fragments under mma.sync (kept across the loop), the
  row statistics, and :data:`REGISTER_OVERHEAD` for addresses and loop state, over
  ``32 · num_warps`` threads. Above :data:`MAX_REGISTERS` the compiler spills.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ..dtypes import width as dtype_width
from ..errors import ProblemError
from .tile_tables import MAX_REGISTERS, REGISTER_OVERHEAD, GpuInfo, KernelTile, NoKernelTile, gpu_info
from .measured_steps import MeasuredStep, measured_step

#: the knobs the benchmark and ``explore --kernel triton-fa2`` try
BLOCK_M_VALUES = (16, 32, 64, 128, 256)
BLOCK_N_VALUES = (16, 32, 64, 128)
NUM_WARPS_VALUES = (2, 4, 8)
NUM_STAGES_VALUES = (1, 2, 3, 4)
#: the configuration ``simulate --kernel triton-fa2`` runs when given none (the first of the
#: Triton tutorial's forward autotune list at these head dims; not tuned here)
DEFAULT_CONFIG = (128, 64, 4, 3)
#: the head dims the kernel is written for (tl.arange needs a power of two)
HEAD_DIMS = (16, 32, 64, 128, 256)


@dataclass(frozen=True)
class TritonConfig:
    """One configuration of the Triton kernel."""

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n", "num_warps", "num_stages"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ProblemError(f"triton config: {name} must be a positive integer, got {value!r}",
                                   field="kernel_config")
        for name in ("block_m", "block_n", "num_warps"):
            value = getattr(self, name)
            if value & (value - 1):
                raise ProblemError(f"triton config: {name} must be a power of two (Triton's tl.arange), got {value}",
                                   field="kernel_config")
        if self.block_m < 16 or self.block_n < 16:
            raise ProblemError(f"triton config: BLOCK_M and BLOCK_N must be at least 16 (tl.dot), got "
                               f"{self.block_m}x{self.block_n}", field="kernel_config")

    @classmethod
    def parse(cls, value) -> "TritonConfig":
        """From a config, a 4-tuple, or text ``"BM,BN,W,S"``."""
        if isinstance(value, TritonConfig):
            return value
        if isinstance(value, str):
            parts = value.replace("x", ",").split(",")
            try:
                value = tuple(int(p) for p in parts)
            except ValueError:
                raise ProblemError(f"triton config: expected BLOCK_M,BLOCK_N,num_warps,num_stages, got {value!r}",
                                   field="kernel_config") from None
        if not isinstance(value, (tuple, list)) or len(value) != 4:
            raise ProblemError(f"triton config: expected 4 values (BLOCK_M, BLOCK_N, num_warps, num_stages), got "
                               f"{value!r}", field="kernel_config")
        return cls(*value)

    def key(self) -> tuple[int, int, int, int]:
        return self.block_m, self.block_n, self.num_warps, self.num_stages

    def label(self) -> str:
        return f"{self.block_m}x{self.block_n} w{self.num_warps} s{self.num_stages}"


def search_space() -> list[TritonConfig]:
    """Every configuration of the knobs' values (feasible or not)."""
    return [TritonConfig(*k) for k in product(BLOCK_M_VALUES, BLOCK_N_VALUES, NUM_WARPS_VALUES, NUM_STAGES_VALUES)]


def mma_version(config: TritonConfig, gpu: GpuInfo) -> int:
    """3 (wgmma) or 2 (mma.sync), as Triton's ``getMMAVersionSafe``/``supportMMA`` choose."""
    cc = gpu.compute_capability
    if cc is not None and cc[0] == 9 and config.num_warps % 4 == 0 and config.block_m % 64 == 0:
        return 3
    return 2


def warp_grid(config: TritonConfig, version: int) -> tuple[int, int]:
    """(warps along the query rows, warps along the other axis) of S = Q·Kᵀ, whose result
    feeds the second dot: MMA v3 puts every warp on the rows; MMA v2 on the rows when
    BLOCK_M ≥ BLOCK_N, else on the keys (``warpsPerTileV3``/``warpsPerTileV2``, chained dot)."""
    if version == 3 or config.block_m >= config.block_n:
        return config.num_warps, 1
    return 1, config.num_warps


def pv_warp_grid(config: TritonConfig, version: int) -> tuple[int, int]:
    """(warps along the rows, warps along d) of O += P·V. Its result feeds no further dot, so
    under MMA v3 ``warpsPerTileV3`` grows a (4, 1) warpgroup along the rows while the rows
    exceed 16 per warp, else along d: BLOCK_M = 64 with 8 warps gives (4, 2), two
    warpgroups each computing half of d for the same 64 rows. MMA v2 follows the first dot's
    grid (``warpsPerTileV2`` returns the chained dot's warps)."""
    if version != 3:
        return warp_grid(config, version)
    wm, wn = 4, 1
    while wm * wn < config.num_warps:
        if config.block_m > 16 * wm:
            wm *= 2
        else:
            wn *= 2
    return wm, wn


def computed_rows(config: TritonConfig, version: int) -> int:
    """Rows the tensor cores compute for S: BLOCK_M, padded to 16 per warp along the rows
    (a wgmma warpgroup covers 64 rows; a smaller tile is replicated across the warpgroups)."""
    return max(config.block_m, 16 * warp_grid(config, version)[0])


def pv_rows(config: TritonConfig, version: int) -> int:
    """Rows the tensor cores compute for O += P·V (:func:`pv_warp_grid`'s rows, padded as above)."""
    return max(config.block_m, 16 * pv_warp_grid(config, version)[0])


def converts_p(config: TritonConfig, version: int) -> bool:
    """Whether P must change layout between the two products: under MMA v3 when the two
    dots' warp grids differ (the register operand of a wgmma must be in its own
    accumulator's row split), a conversion Triton lowers through shared memory."""
    return version == 3 and warp_grid(config, version) != pv_warp_grid(config, version)


def shared_bytes(config: TritonConfig, head_dim: int, dtype: str) -> int:
    """Shared memory Triton allocates for one thread block (module docstring)."""
    d = head_dim
    return dtype_width(dtype) * (config.block_m * d + config.num_stages * 2 * config.block_n * d)


def registers_per_thread(config: TritonConfig, head_dim: int, version: int) -> int:
    """Estimated registers per thread (module docstring), before any cap: each accumulator
    is split over the warps of its own product's grid, with the padded rows replicated."""
    threads = 32 * config.num_warps
    rows = computed_rows(config, version)
    wm, wn = warp_grid(config, version)
    acc_o = pv_rows(config, version) * head_dim / threads          # fp32 O, in P·V's grid
    acc_s = rows * config.block_n / threads            # fp32 S
    q = rows * head_dim / 2 / threads * wn if version == 2 else 0   # Q's fragments, kept across the loop
    stats = 2 * rows / (wm * 8)                        # m_i, l_i: a thread holds rows / (8 · warps along rows)
    return int(-(-(acc_o + acc_s + q + stats) // 1)) + REGISTER_OVERHEAD


@dataclass(frozen=True)
class TritonTile(KernelTile):
    """A :class:`KernelTile` with what the Triton kernel's time model needs besides it."""

    num_stages: int = 1
    mma: int = 2
    warps_m: int = 1
    computed_rows: int = 0
    pv_rows: int = 0
    p_convert: bool = False
    shared_bytes: int = 0
    spills: bool = False
    #: the configuration's steps measured on this GPU (:mod:`.measured_steps`), or None
    measured: MeasuredStep | None = None

    @property
    def config(self) -> TritonConfig:
        return TritonConfig(self.block_q, self.block_kv, self.warps, self.num_stages)

    def to_dict(self) -> dict:
        return {**super().to_dict(), "num_stages": self.num_stages, "mma": f"v{self.mma}",
                "warps_m": self.warps_m, "computed_rows": self.computed_rows, "pv_rows": self.pv_rows,
                "p_convert": self.p_convert, "shared_bytes": self.shared_bytes,
                "registers_per_thread": self.registers, "spills": self.spills,
                "measured_steps": self.measured.source if self.measured else None}


def triton_tile(config: TritonConfig, head_dim: int, dtype: str, profile) -> TritonTile:
    """The tile, footprint and warp layout of ``config`` on ``profile``'s GPU; raises
    :class:`NoKernelTile` where the kernel does not run there."""
    gpu = gpu_info(profile)
    cc = gpu.compute_capability
    if gpu.vendor != "nvidia" or cc is None or cc < (8, 0):
        raise NoKernelTile(f"the Triton kernel's model is for NVIDIA GPUs of compute capability 8.0 or later "
                           f"(tensor-core tl.dot); {gpu.name} is {gpu.vendor} {gpu.arch}")
    if head_dim not in HEAD_DIMS:
        raise NoKernelTile(f"the Triton kernel takes head dims {', '.join(map(str, HEAD_DIMS))} (tl.arange needs a "
                           f"power of two), got {head_dim}")
    if dtype not in ("fp16", "bf16"):
        raise NoKernelTile(f"the Triton kernel runs fp16 and bf16, got {dtype}")
    version = mma_version(config, gpu)
    measured = measured_step("triton-fa2", profile.name, config.key(), head_dim)
    if measured is not None:    # the compiled kernel's own registers and spills
        regs, spills = measured.registers, measured.spills > 0
    else:
        regs = registers_per_thread(config, head_dim, version)
        spills = regs > MAX_REGISTERS
    return TritonTile(config.block_m, config.block_n, config.num_warps, f"triton-fa2 {config.label()}", head_dim,
                      f"config {config.label()}: mma v{version}", "iosim.gpu.triton_attention",
                      f"{profile.name} ({gpu.arch})", registers=min(regs, MAX_REGISTERS),
                      num_stages=config.num_stages, mma=version, warps_m=warp_grid(config, version)[0],
                      computed_rows=computed_rows(config, version), pv_rows=pv_rows(config, version),
                      p_convert=converts_p(config, version),
                      shared_bytes=shared_bytes(config, head_dim, dtype), spills=spills, measured=measured)


def infeasible_reason(config: TritonConfig, head_dim: int, dtype: str, profile) -> str:
    """Why ``config`` cannot run (or would spill) on ``profile``; "" when it fits. A kernel
    whose steps were measured runs as measured, spills included (its time is the measured one)."""
    try:
        tile = triton_tile(config, head_dim, dtype, profile)
    except NoKernelTile as exc:
        return str(exc)
    reasons = unlaunchable(config, tile, profile)
    if tile.spills and tile.measured is None:
        reasons.insert(1 if reasons[:1] and reasons[0].startswith("shared") else 0,
                       f"registers: about {registers_per_thread(config, head_dim, tile.mma)} per thread > "
                       f"{MAX_REGISTERS} (would spill)")
    return "; ".join(reasons)


def unlaunchable(config: TritonConfig, tile: TritonTile, profile) -> list[str]:
    """Why Triton cannot launch ``config`` at all on ``profile`` (its shared memory, its
    threads); [] when it can."""
    limit = profile.scratchpad.per_block_bytes
    reasons = []
    if limit is not None and tile.shared_bytes > limit:
        reasons.append(f"shared memory: needs {tile.shared_bytes:,} B > {limit:,} B per block")
    if config.num_warps * 32 > 1024:
        reasons.append(f"{config.num_warps * 32} threads per block > 1,024")
    return reasons


__all__ = ["TritonConfig", "TritonTile", "search_space", "mma_version", "warp_grid", "pv_warp_grid", "computed_rows",
           "pv_rows", "converts_p",
           "shared_bytes", "registers_per_thread", "triton_tile", "infeasible_reason", "unlaunchable", "DEFAULT_CONFIG",
           "BLOCK_M_VALUES", "BLOCK_N_VALUES", "NUM_WARPS_VALUES", "NUM_STAGES_VALUES"]
