"""Launch iosim's CUDA kernels for one attention problem: buffers, grids, counters.

Three loop orders, each with the simulator's tiles (B_r = ``block_q``, B_c = ``block_kv``):

=============  ===========================================================================
``standard``   FA1 Algorithm 0 as three kernels: S = QKᵀ/√d in B_r×B_c tiles (each loads
               Q_i and K_j once), row softmax (reads S once, writes P once, applies the
               causal mask), O = PV (per query block, loads P_ij and V_j for every j)
``fa1``        FA1 Algorithm 1: one block per head, K/V blocks outer, query blocks inner;
               O_i, ℓ_i, m_i read from and written back to global memory every step
``fa2``        FA2 Algorithm 1: one block per (query block, head); Q_i read once, K_j and
               V_j once per active j, O_i and L_i written once
=============  ===========================================================================

Two implementations: ``mma`` (tensor cores, fp16 only; ``fa2`` and ``standard``'s two
products) and ``generic`` (CUDA cores, fp32 or fp16 storage, any B_c and B_r ≤ 128). Both
compute in fp32. Layout: Q, K, V, O are [B·H, N, d]; S, P are [B·H, N, N]; ℓ, m, L are
[B·H, N] in fp32. Only square attention (N_q = N_kv) is implemented.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import CapacityError, ProblemError, require_choice, require_positive_int
from ..kernels.measured_steps import measured_step
from ..models import measured_time
from ..models.kernel_time import WarpLayout
from ..run import Options, simulate
from ..run.setup import resolve_profile
from ..run.kernel_timing import kernel_times, kernel_traffic
from . import build
from .numerics import NP_DTYPE

#: Order of the kernels' counter slots (common.cuh, ``enum IosimTensor``), with the
#: simulator's tensor names: ℓ is "l", m is "m", the logsumexp is "L".
TENSOR_SLOTS = ("Q", "K", "V", "O", "S", "P", "l", "m", "L")

ALGORITHMS = ("standard", "fa1", "fa2")
IMPLS = ("auto", "mma", "generic")
MMA_HEAD_DIMS = (32, 64, 128)
MMA_BLOCKS = (16, 32, 64, 128)
GENERIC_HEAD_DIMS = (32, 64, 128)
GENERIC_MAX_BLOCK_Q = 128  # GEN_MAX_BR in generic.cu: the O_i tile lives in registers
GENERIC_THREADS = 256
MMA_PAD = 8  # halves of padding per shared-memory row, as in mma.cu
DEFAULT_SMEM_LIMIT = 48 * 1024

_CTYPE = {"fp32": "float", "fp16": "iosim_half"}


@dataclass(frozen=True)
class Config:
    """One run: the problem, the tiles and the resolved implementation (``mma``/``generic``)."""

    algo: str
    seq_len: int
    head_dim: int
    heads_total: int
    dtype: str
    causal: bool
    block_q: int
    block_kv: int
    impl: str

    @property
    def num_q_blocks(self) -> int:
        return -(-self.seq_len // self.block_q)

    @property
    def num_kv_blocks(self) -> int:
        return -(-self.seq_len // self.block_kv)

    @property
    def flops(self) -> int:
        """4·N²·d per head (two products), the usual convention; causal halves the work done
        but the figure is kept dense so that throughputs compare with other tables."""
        return 4 * self.seq_len * self.seq_len * self.head_dim * self.heads_total


def make_config(algo: str, *, seq_len: int, head_dim: int, heads_total: int, dtype: str, causal: bool,
                block_q: int, block_kv: int, impl: str = "auto") -> Config:
    """Check the request against what the kernels implement and pick the implementation."""
    require_choice("algorithm", algo, ALGORITHMS)
    if dtype not in _CTYPE:
        raise ProblemError(f"the GPU kernels take dtype fp32 or fp16, got {dtype!r}")
    require_choice("implementation", impl, IMPLS)
    for name, value in (("seq_len", seq_len), ("head_dim", head_dim), ("heads_total", heads_total),
                        ("block_q", block_q), ("block_kv", block_kv)):
        require_positive_int(name, value)
    mma_ok = (algo in ("fa2", "standard") and dtype == "fp16" and head_dim in MMA_HEAD_DIMS
              and block_q in MMA_BLOCKS and block_kv in MMA_BLOCKS)
    if impl == "auto":
        impl = "mma" if mma_ok else "generic"
    if impl == "mma" and not mma_ok:
        raise ProblemError(
            "the tensor-core kernels need algo fa2 or standard, dtype fp16, head_dim in "
            f"{MMA_HEAD_DIMS} and block sizes in {MMA_BLOCKS}; got {algo}, {dtype}, d={head_dim}, "
            f"B_r={block_q}, B_c={block_kv}")
    if impl == "generic":
        if head_dim not in GENERIC_HEAD_DIMS:
            raise ProblemError(f"the GPU kernels are built for head_dim in {GENERIC_HEAD_DIMS}, got {head_dim}")
        if block_q > GENERIC_MAX_BLOCK_Q:
            raise ProblemError(f"the generic GPU kernels take block_q <= {GENERIC_MAX_BLOCK_Q}, got {block_q}")
    return Config(algo, seq_len, head_dim, heads_total, dtype, bool(causal), block_q, block_kv, impl)


@dataclass(frozen=True)
class Launch:
    """One kernel launch of an algorithm: which kernel, its grid and its shared memory."""

    role: str  # "fa2", "fa1", "qk", "softmax", "pv"
    name: str  # CuPy name expression of the template instantiation
    grid: tuple[int, ...]
    block: int
    smem_bytes: int


def launches(cfg: Config) -> list[Launch]:
    """The kernel launches of ``cfg``, in order, with their shared-memory needs."""
    n, d, bh, br, bc = cfg.seq_len, cfg.head_dim, cfg.heads_total, cfg.block_q, cfg.block_kv
    tr, tc = cfg.num_q_blocks, cfg.num_kv_blocks
    t = _CTYPE[cfg.dtype]
    if cfg.impl == "mma":
        sd, nt = d + MMA_PAD, 2 * br
        tpl = f"{d}, {br}, {bc}"
        if cfg.algo == "fa2":
            return [Launch("fa2", f"fa2_mma<{tpl}>", (tr, bh), nt, (br + 2 * bc) * sd * 2)]
        return [
            Launch("qk", f"std_qk_mma<{tpl}>", (tc, tr, bh), nt, (br * sd + bc * sd + br * (bc + MMA_PAD)) * 2),
            Launch("softmax", f"std_softmax<{t}>", (n, bh), GENERIC_THREADS, n * 4),
            Launch("pv", f"std_pv_mma<{tpl}>", (tr, bh), nt, (br * (bc + MMA_PAD) + bc * sd) * 2),
        ]
    dp, g = d + 1, GENERIC_THREADS
    if cfg.algo == "fa2":
        return [Launch("fa2", f"fa2_generic<{t}, {d}>", (tr, bh), g, (br * dp + bc * dp + br * bc + 3 * br) * 4)]
    if cfg.algo == "fa1":
        return [Launch("fa1", f"fa1_generic<{t}, {d}>", (bh,), g, (2 * bc * dp + br * dp + br * bc + 4 * br) * 4)]
    return [
        Launch("qk", f"std_qk_generic<{t}, {d}>", (tc, tr, bh), g, (br * dp + bc * dp) * 4),
        Launch("softmax", f"std_softmax<{t}>", (n, bh), g, n * 4),
        Launch("pv", f"std_pv_generic<{t}, {d}>", (tr, bh), g, (br * bc + bc * dp) * 4),
    ]


def warp_layout(cfg: Config):
    """How the warps of ``cfg``'s kernel share its products, for :mod:`iosim.models.kernel_time`, or
    None where the kernel has none the model knows: ``fa2_mma`` gives each warp 16 query rows
    (B_r/16 warps stacked on the rows, as flash-attn's forward), reads Q_i, K_j and V_j with
    ``ldmatrix`` per warp and keeps P in registers."""
    return WarpLayout(cfg.block_q // 16) if cfg.impl == "mma" and cfg.algo == "fa2" else None


def simulate_config(profile, cfg: Config, problem, **kw):
    """The simulator run that ``cfg``'s kernels are held to: its algorithm and tiles, and for
    ``standard`` the tiled GEMM model (``gemm="tiled"``) that a real tiled kernel follows.
    ``problem`` is the :class:`~iosim.Problem` (B and H apart); ``kw`` are
    :class:`~iosim.Options` fields (``cache``, ``threads_per_block``, ...); the L2 model's
    occupancy takes :func:`occupancy`'s fields where ``kw`` does not name them."""
    options = Options(gemm="tiled" if cfg.algo == "standard" else None, **{**occupancy(profile, cfg), **kw})
    return simulate(profile, cfg.algo, problem, blocks=(cfg.block_q, cfg.block_kv), options=options)


def occupancy(profile, cfg: Config) -> dict:
    """:class:`~iosim.Options` fields that give the L2 model the blocks an SM of ``cfg``'s first
    kernel: its threads, and where its steps were measured on the profile's GPU (:func:`measured`)
    the compiled kernel's registers a thread. Without them the model counts blocks by shared memory
    and threads alone, and fa2_mma at d = 128 holds fewer (64 × 64: 2 an SM, not 4; 128 × 64: 1, not
    3; docs/validation/2026-12-04-drift-probe.md)."""
    out = {"threads_per_block": launches(cfg)[0].block}
    steps = measured(resolve_profile(profile), cfg)
    if steps is not None:
        out["registers_per_thread"] = steps.registers
    return out


def measured(profile, cfg: Config):
    """``fa2_mma``'s steps measured on ``profile``'s GPU for ``cfg``'s tile (keyed (B_r, B_c,
    B_r/16 warps, 1 stage, d): :mod:`iosim.kernels.measured_steps`), or None."""
    if cfg.impl != "mma" or cfg.algo != "fa2":
        return None
    return measured_step("cupy-fa2-mma", profile.name, (cfg.block_q, cfg.block_kv, cfg.block_q // 16, 1),
                         cfg.head_dim)


def model_time(sim, profile, cfg: Config) -> dict | None:
    """The kernel time model's prediction for ``sim`` (a :func:`simulate_config` result),
    summed over its kernels: ``{"predicted_s", "bound", "model"}`` (the bounds joined by "; "),
    or None where the model has no warp layout for the kernel. Where the kernel's steps were
    measured on the profile's GPU (:func:`measured`) they time it
    (:func:`iosim.models.measured_time.predict`), else ``cfg``'s warp layout does."""
    steps = measured(profile, cfg)
    layout = warp_layout(cfg)
    if steps is not None:
        requested, dram, work = kernel_traffic(sim)
        times = measured_time.predict(profile, sim.problem.dtype, steps, requested, dram, work, causal=cfg.causal)
        model = f"kernel time model ({steps.source})"
    elif layout is not None:
        times = kernel_times(sim, profile, {k: layout for k in sim.cta_work})
        model = f"kernel time model (warp layout: {layout.warps} warps on the rows; no steps measured on this GPU)"
    else:
        return None
    return {"predicted_s": sum(t.predicted_s for t in times.values()),
            "bound": "; ".join(t.bound for t in times.values()), "model": model}


def launch_jobs(cfgs, counts=(True, False)) -> set[tuple[str, bool]]:
    """The ``(name expression, count)`` compile jobs of every kernel launch of ``cfgs``
    (:class:`Config`), in each build of ``counts``."""
    return {(ln.name, c) for cfg in cfgs for ln in launches(cfg) for c in counts}


def warm_configs(cfgs, counts=(True, False), workers: int | None = None) -> None:
    """build.warm for every kernel launch of ``cfgs``, in each build of ``counts``."""
    build.warm(sorted(launch_jobs(cfgs, counts)), workers)


def smem_limit() -> int:
    """Largest dynamic shared memory one block may opt in to on the current device."""
    import cupy

    dev = cupy.cuda.Device().id
    try:  # cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
        return int(cupy.cuda.runtime.deviceGetAttribute(97, dev))
    except Exception:  # noqa: BLE001 - an old runtime without the attribute
        return DEFAULT_SMEM_LIMIT


class Attention:
    """Output buffers, counters and launches of one algorithm on given Q, K, V (cupy arrays).

    ``count=True`` uses the instrumented build; its counters (bytes read and written per
    tensor, summed over the whole grid and B·H) are read with :meth:`counts`.
    """

    def __init__(self, cfg: Config, q, k, v, *, count: bool):
        import cupy

        self.cfg, self.q, self.k, self.v, self.count = cfg, q, k, v, count
        n, d, bh, dt = cfg.seq_len, cfg.head_dim, cfg.heads_total, NP_DTYPE[cfg.dtype]
        self.out = {"O": cupy.empty((bh, n, d), dtype=dt)}
        if cfg.algo == "fa2":
            self.out["L"] = cupy.empty((bh, n), dtype=cupy.float32)
        elif cfg.algo == "fa1":
            self.out["l"] = cupy.empty((bh, n), dtype=cupy.float32)
            self.out["m"] = cupy.empty((bh, n), dtype=cupy.float32)
        else:
            self.out["S"] = cupy.empty((bh, n, n), dtype=dt)
            self.out["P"] = cupy.empty((bh, n, n), dtype=dt)
        self.counters = cupy.zeros(2 * len(TENSOR_SLOTS), dtype=cupy.uint64)
        self.plan = launches(cfg)
        limit = smem_limit()
        for ln in self.plan:
            if ln.smem_bytes > limit:
                raise CapacityError(
                    f"{ln.name} needs {ln.smem_bytes} bytes of shared memory per block for N={n}, d={d}, "
                    f"B_r={cfg.block_q}, B_c={cfg.block_kv}, {cfg.dtype}; this GPU allows {limit}")
        self.kernels = [build.kernel(ln.name, count) for ln in self.plan]
        for ln, kern in zip(self.plan, self.kernels):
            if ln.smem_bytes > DEFAULT_SMEM_LIMIT:
                kern.max_dynamic_shared_size_bytes = ln.smem_bytes
        self.reset()

    def poison(self) -> None:
        """Fill every output with NaN, so an element no kernel writes fails the check."""
        for arr in self.out.values():
            arr.fill(np.nan)
        self.reset()

    def reset(self) -> None:
        """Zero the counters; for FA1, Algorithm 1 line 2: O = 0, ℓ = 0, m = −inf in HBM.

        These initialising writes are not counted (convention C5) and are not part of the timed
        region (:func:`iosim.gpu.runner.time_launches` records its events around :meth:`launch`).
        """
        if self.count:
            self.counters.fill(0)
        if self.cfg.algo == "fa1":
            self.out["O"].fill(0)
            self.out["l"].fill(0)
            self.out["m"].fill(-np.inf)

    def launch(self) -> None:
        cfg = self.cfg
        n, c = np.int32(cfg.seq_len), self.counters
        br, bc, causal = np.int32(cfg.block_q), np.int32(cfg.block_kv), np.int32(cfg.causal)
        scale = 1.0 / math.sqrt(cfg.head_dim)
        o = self.out["O"]
        for ln, kern in zip(self.plan, self.kernels):
            if ln.role == "fa2" and cfg.impl == "mma":
                args = (self.q, self.k, self.v, o, self.out["L"], n, np.float32(scale * math.log2(math.e)), causal, c)
            elif ln.role == "fa2":
                args = (self.q, self.k, self.v, o, self.out["L"], n, br, bc, np.float32(scale), causal, c)
            elif ln.role == "fa1":
                args = (self.q, self.k, self.v, o, self.out["l"], self.out["m"], n, br, bc, np.float32(scale), causal, c)
            elif ln.role == "qk" and cfg.impl == "mma":
                args = (self.q, self.k, self.out["S"], n, np.float32(scale), c)
            elif ln.role == "qk":
                args = (self.q, self.k, self.out["S"], n, br, bc, np.float32(scale), c)
            elif ln.role == "softmax":
                args = (self.out["S"], self.out["P"], n, causal, c)
            elif cfg.impl == "mma":
                args = (self.out["P"], self.v, o, n, c)
            else:
                args = (self.out["P"], self.v, o, n, br, bc, c)
            kern(ln.grid, (ln.block,), args, shared_mem=ln.smem_bytes)

    def counts(self) -> dict[str, tuple[int, int]]:
        """Bytes (read, written) per tensor, as counted by the instrumented kernels."""
        if not self.count:
            raise RuntimeError("counts() needs the instrumented build (count=True)")
        raw = [int(x) for x in self.counters.get()]
        return {name: (raw[2 * s], raw[2 * s + 1]) for s, name in enumerate(TENSOR_SLOTS)}

    def lse(self):
        """Row logsumexp of the scaled scores, when the algorithm leaves one (cupy, fp32)."""
        if "L" in self.out:
            return self.out["L"]
        if "l" in self.out:
            import cupy

            return self.out["m"] + cupy.log(self.out["l"])
        return None
