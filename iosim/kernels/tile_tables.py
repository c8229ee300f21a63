"""The block shapes the real FlashAttention kernels launch with, as data.

``iosim explore`` compares its best (B_r, B_c) against the tile the real kernel would
pick for the same head dim and GPU. The choice lives in the flash-attention launch
templates as nested ``if``s; here it is a table of rules, read top to bottom, the first
rule whose head dim and condition match wins (docs/spec/kernels.md).

=================  ==========================================================
kernel symbol      iosim
=================  ==========================================================
kHeadDim           d rounded up to the next size the kernel is compiled for
kBlockM            ``KernelTile.block_q`` (B_r: query rows per thread block)
kBlockN            ``KernelTile.block_kv`` (B_c: key rows per inner step)
kNWarps            ``KernelTile.warps``
``is_sm8x``        compute capability 8.x with minor > 0 (sm86, sm87, sm89);
                   A100 (sm80) and H100 (sm90) are *not* sm8x
=================  ==========================================================

Tables (one entry of :data:`TABLES` each):

* ``("fa2", "fwd")``: FlashAttention-2 forward, ``flash_fwd_launch_template.h`` at
  flash-attention HEAD ``0251105a`` (docs/spec/kernels.md §2).
* ``("fa2-splitkv", "fwd")``: its split-KV (Flash-Decoding) forward, used when
  num_splits > 1 (docs/spec/kernels.md §2.1).
* ``("fa2", "bwd")``: FlashAttention-2 backward, ``flash_bwd_launch_template.h`` (docs/spec/kernels.md §4).
* ``("fa3", "fwd")``: FlashAttention-3 forward on Hopper, ``hopper/tile_size.h`` (docs/spec/kernels.md §6).
  Warps are FA3's 128-thread warpgroups × 4 as launched (8 or 12 warps).
* ``("fa1", "fwd")``: FlashAttention v1.0.9 forward (``fmha_fwd_hdim*.cu``, docs/spec/kernels.md §5).

The GPU facts a rule may test come from the hardware profile (:class:`GpuInfo`): the
compute capability (a profile field when the profile has one, otherwise the
"compute capability X.Y" its description states), and the shared memory per block and
per SM that the d = 256 rule compares against.

>>> from iosim import load_profile
>>> t = kernel_tile("fa2", 128, load_profile("h100-sxm"))
>>> (t.block_q, t.block_kv, t.warps)
(128, 64, 4)
>>> kernel_tile("fa2", 256, load_profile("a100-80gb")).block_q   # 128 x 64 on A100, 64 x 64 on H100
128
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Callable

from ..errors import IosimError
from .coresidency import coresident_factor, step_factor

#: registers a thread may hold before ptxas spills (sm70+)
MAX_REGISTERS = 255
#: registers for addresses, loop counters and masks, beside the tiles' fragments
REGISTER_OVERHEAD = 32


def warps_register_bytes(warps: int) -> int:
    """The bytes of tile fragments ``warps`` warps hold in registers without spilling: 32
    threads a warp, each :data:`MAX_REGISTERS` less :data:`REGISTER_OVERHEAD` 4-byte registers."""
    return warps * 32 * (MAX_REGISTERS - REGISTER_OVERHEAD) * 4


class NoKernelTile(IosimError):
    """No table entry applies (unsupported head dim, GPU, vendor or feature)."""


@dataclass(frozen=True)
class GpuInfo:
    """What the kernels' launch code looks at, taken from a hardware profile."""

    name: str
    vendor: str
    compute_capability: tuple[int, int] | None
    smem_per_block_bytes: int | None
    smem_per_sm_bytes: int | None

    @property
    def is_sm8x(self) -> bool:
        """flash-attn's ``is_sm8x``: cc 8.x with minor > 0 (sm86/87/89), not A100's sm80."""
        cc = self.compute_capability
        return cc is not None and cc[0] == 8 and cc[1] > 0

    @property
    def arch(self) -> str:
        cc = self.compute_capability
        return "unknown" if cc is None else f"sm{cc[0]}{cc[1]}"


_CC_TEXT = re.compile(r"compute capability\s*(\d+)\.(\d+)", re.IGNORECASE)


def gpu_info(profile) -> GpuInfo:
    """The :class:`GpuInfo` of a :class:`~iosim.hardware.HardwareProfile`."""
    cc = _compute_capability(profile)
    scratch = profile.scratchpad
    return GpuInfo(profile.name, profile.vendor, cc, scratch.per_block_bytes, scratch.capacity_bytes)


def _compute_capability(profile) -> tuple[int, int] | None:
    value = getattr(profile, "compute_capability", None)
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return int(value[0]), int(value[1])
    if isinstance(value, (str, float)):
        major, _, minor = str(value).partition(".")
        return int(major), int(minor or 0)
    found = _CC_TEXT.search(profile.description or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


@dataclass(frozen=True)
class Features:
    """The launch options a rule may test besides the GPU."""

    causal: bool = False
    dropout: bool = False
    seq_len_kv: int | None = None


# A condition: (text shown to the user, predicate on the GPU and the launch features).
Condition = tuple[str, Callable[[GpuInfo, Features], bool]]

ANY: Condition = ("all", lambda g, f: True)


def _all(*conds: Condition) -> Condition:
    return (", ".join(t for t, _ in conds), lambda g, f: all(p(g, f) for _, p in conds))


NO_DROPOUT: Condition = ("no dropout", lambda g, f: not f.dropout)
DROPOUT: Condition = ("dropout", lambda g, f: f.dropout)
CAUSAL: Condition = ("causal", lambda g, f: f.causal)
NON_CAUSAL: Condition = ("non-causal", lambda g, f: not f.causal)
SM8X: Condition = ("sm86/87/89", lambda g, f: g.is_sm8x)
NOT_SM8X: Condition = ("not sm86/87/89 (A100, H100)", lambda g, f: not g.is_sm8x)
# flash_fwd_launch_template.h, run_mha_fwd_hdim256: 128 x 64 needs 2·256·(128 + 2·64) B of smem per
# block, and is chosen only where 4·256·(64 + 2·64) B (two 64 x 64 CTAs) would not fit in one SM.
A100_LIKE_SMEM: Condition = (
    "smem/block >= 131,072 B and smem/SM < 196,608 B (A100)",
    lambda g, f: (g.smem_per_block_bytes or 0) >= 2 * 256 * (128 + 2 * 64)
    and (g.smem_per_sm_bytes or 0) < 4 * 256 * (64 + 2 * 64),
)
OTHER_SMEM: Condition = ("otherwise (H100)", lambda g, f: True)
# flash_bwd_launch_template.h tests cudaDevAttrMaxSharedMemoryPerBlockOptin against these.
SMEM_144K: Condition = ("smem/block >= 144 KiB (A100, H100)", lambda g, f: (g.smem_per_block_bytes or 0) >= 144 * 1024)
SMEM_176K: Condition = ("smem/block >= 176 KiB (H100)", lambda g, f: (g.smem_per_block_bytes or 0) >= 176 * 1024)
SMEM_LESS_144K: Condition = ("smem/block < 144 KiB (sm86/89)", lambda g, f: (g.smem_per_block_bytes or 0) < 144 * 1024)
SMEM_LESS_176K_AT_LEAST_144K: Condition = (
    "144 KiB <= smem/block < 176 KiB (A100, no double buffer)",
    lambda g, f: 144 * 1024 <= (g.smem_per_block_bytes or 0) < 176 * 1024,
)
SM90: Condition = ("sm90", lambda g, f: g.compute_capability == (9, 0))
SEQ_K_128: Condition = ("seqlen_k == 128", lambda g, f: f.seq_len_kv == 128)
SEQ_K_OTHER: Condition = ("seqlen_k != 128", lambda g, f: f.seq_len_kv != 128)


@dataclass(frozen=True)
class Rule:
    """One row of a launch table: for kHeadDim ``head_dim`` under ``when``, this tile."""

    head_dim: int
    when: Condition
    block_q: int
    block_kv: int
    warps: int
    #: backward only: (AtomLayoutMSdP, AtomLayoutNdKV, AtomLayoutMdQ), the warps along the
    #: rows of S/dP, of dV/dK and of dQ (the rest of the kNWarps split the columns); None,
    #: or a None entry, where the template argument was not checked. The forward kernels
    #: stack all warps along the query rows.
    atoms: tuple[int, int | None, int | None] | None = None

    @property
    def stats_loads(self) -> int | None:
        """Backward: how many warps load each query row's L and D, kNWarps / AtomLayoutMSdP
        (the warps that split the key columns of S each load the row statistics themselves)."""
        return self.warps // self.atoms[0] if self.atoms else None


@dataclass(frozen=True)
class Table:
    """A kernel's launch table: the head dims it is compiled for and its rules in order."""

    kernel: str          # e.g. "flash-attn 2 forward"
    source: str          # where the rules come from
    head_dims: tuple[int, ...]
    min_cc: tuple[int, int] | None
    rules: tuple[Rule, ...]
    #: registers per thread of the compiled kernel (a compiler output, not in the source):
    #: what Nsight Compute reported for PyTorch 2.11's build on an H200, None where unmeasured
    registers_per_thread: int | None = None


TABLES: dict[tuple[str, str], Table] = {
    ("fa2", "fwd"): Table(
        kernel="flash-attn 2 forward (flash_fwd_kernel)",
        source="docs/spec/kernels.md §2: csrc/flash_attn/src/flash_fwd_launch_template.h @ 0251105a",
        head_dims=(32, 64, 96, 128, 192, 256),
        min_cc=(8, 0),  # "FlashAttention only supports Ampere GPUs or newer"
        rules=(
            Rule(32, ANY, 128, 128, 4),
            Rule(64, NO_DROPOUT, 128, 128, 4),
            Rule(64, DROPOUT, 128, 64, 4),
            Rule(96, NOT_SM8X, 128, 64, 4),
            Rule(96, _all(SM8X, NON_CAUSAL), 128, 64, 4),
            Rule(96, _all(SM8X, CAUSAL), 64, 64, 4),
            Rule(128, _all(NO_DROPOUT, NOT_SM8X), 128, 64, 4),
            Rule(128, _all(NO_DROPOUT, SM8X, NON_CAUSAL), 128, 32, 4),
            Rule(128, _all(NO_DROPOUT, SM8X, CAUSAL), 64, 64, 4),
            Rule(128, DROPOUT, 128, 32, 4),
            Rule(192, NO_DROPOUT, 128, 64, 8),
            Rule(192, DROPOUT, 64, 64, 4),
            Rule(256, A100_LIKE_SMEM, 128, 64, 8),
            Rule(256, OTHER_SMEM, 64, 64, 4),
        ),
        # launch__registers_per_thread 254-255 for d = 32, 64, 128, 256
        # (docs/validation/2026-11-29-sdpa-launch/): two thread blocks per SM
        registers_per_thread=255,
    ),
    ("fa2-splitkv", "fwd"): Table(
        kernel="flash-attn 2 split-KV forward (flash_fwd_splitkv_kernel)",
        source="docs/spec/kernels.md §2.1: run_mha_fwd_splitkv_dispatch in flash_fwd_launch_template.h @ 0251105a",
        head_dims=(32, 64, 96, 128, 192, 256),
        min_cc=(8, 0),
        rules=(
            Rule(32, ANY, 64, 256, 4),
            Rule(64, ANY, 64, 256, 4),
            Rule(96, ANY, 64, 128, 4),
            Rule(128, ANY, 64, 128, 4),
            Rule(192, ANY, 64, 64, 4),
            Rule(256, ANY, 64, 64, 4),
        ),
        # launch__registers_per_thread 244-255 at d = 32, 64, 128, 256 (ncu's launch statistics,
        # docs/validation/2026-12-02-combine-cost/occupancy_ncu.csv): two thread blocks per SM
        registers_per_thread=255,
    ),
    ("fa2", "bwd"): Table(
        kernel="flash-attn 2 backward (flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel)",
        source="docs/spec/kernels.md §4: csrc/flash_attn/src/flash_bwd_launch_template.h @ 0251105a "
               "(the thread block owns B_c = kBlockN keys and walks B_r = kBlockM query rows)",
        head_dims=(32, 64, 96, 128, 192, 256),
        min_cc=(8, 0),
        rules=(
            # atoms from Flash_bwd_kernel_traits<d, M, N, warps, AtomLayoutMSdP, AtomLayoutNdKV, AtomLayoutMdQ, ..>
            # in the launch template (PyTorch's copy, namespace pytorch_flash): 32 <.., 128, 128, 8, 4, 4, 4>,
            # 64 <.., 128, 128, 8, 4, 4, 4> (below 144 KiB <.., 64, 128, 8, 2, 4, 4>), 96 <.., 64, 128, 8, 2, 4, 4>,
            # 128 <.., 64, 128, 8, 2, 4, 2> (below 144 KiB <.., 64, 64, 8, 4, 2, 2>), 192 <.., 64, 64, 8, 4, 2, 2>,
            # 256 <.., 64, 64, 8, 4, 2, 2> (below 144 KiB <.., 64, 32, 8, 4, 1, 2>). The kernel names ncu printed
            # on an H200 carry the same arguments for d = 32, 64, 96, 128, 192, 256
            # (docs/validation/2026-11-29-sdpa-launch/, 2026-12-01-sdpa-unseen/).
            Rule(32, ANY, 128, 128, 8, atoms=(4, 4, 4)),
            Rule(64, SMEM_144K, 128, 128, 8, atoms=(4, 4, 4)),
            Rule(64, SMEM_LESS_144K, 64, 128, 8, atoms=(2, 4, 4)),
            Rule(96, ANY, 64, 128, 8, atoms=(2, 4, 4)),
            Rule(128, SMEM_144K, 64, 128, 8, atoms=(2, 4, 2)),
            Rule(128, SMEM_LESS_144K, 64, 64, 8, atoms=(4, 2, 2)),
            Rule(192, ANY, 64, 64, 8, atoms=(4, 2, 2)),
            Rule(256, SMEM_176K, 64, 64, 8, atoms=(4, 2, 2)),
            Rule(256, SMEM_LESS_176K_AT_LEAST_144K, 64, 64, 8, atoms=(4, 2, 2)),
            Rule(256, SMEM_LESS_144K, 64, 32, 8, atoms=(4, 1, 2)),
        ),
        # launch__registers_per_thread 250-255 for d = 32, 64, 128, 256
        # (docs/validation/2026-11-29-sdpa-launch/): one thread block per SM
        registers_per_thread=255,
    ),
    ("fa3", "fwd"): Table(
        kernel="flash-attn 3 forward (Hopper, 16-bit inputs)",
        source="docs/spec/kernels.md §6: hopper/tile_size.h::tile_size_fwd_sm90 @ 0251105a (no paging, no local window)",
        head_dims=(64, 96, 128, 192, 256),
        min_cc=(9, 0),
        rules=(
            Rule(64, _all(SM90, NON_CAUSAL), 192, 192, 12),
            Rule(64, _all(SM90, CAUSAL), 192, 128, 12),
            Rule(96, SM90, 192, 144, 12),
            Rule(128, _all(SM90, NON_CAUSAL), 128, 176, 8),
            Rule(128, _all(SM90, CAUSAL), 128, 128, 8),
            Rule(192, SM90, 128, 128, 8),
            Rule(256, SM90, 128, 80, 8),
        ),
    ),
    ("fa1", "fwd"): Table(
        kernel="flash-attn v1.0.9 forward (fmha_fwd)",
        source="docs/spec/kernels.md §5: csrc/flash_attn/src/fmha_fwd_hdim{32,64,128}.cu @ v1.0.9 (B_r = STEP = 16)",
        head_dims=(32, 64, 128),
        min_cc=(7, 5),
        rules=(
            Rule(32, SEQ_K_128, 16, 128, 4),
            Rule(32, SEQ_K_OTHER, 16, 256, 4),
            Rule(64, SEQ_K_128, 16, 128, 4),
            Rule(64, SEQ_K_OTHER, 16, 256, 4),
            Rule(128, ANY, 16, 128, 4),
        ),
    ),
}

@dataclass(frozen=True)
class KernelTile:
    """The tile a real kernel launches with, and why."""

    block_q: int
    block_kv: int
    warps: int
    kernel: str
    kernel_head_dim: int
    rule: str            # the matching condition, e.g. "d=128: no dropout, not sm86/87/89 (A100, H100)"
    source: str
    gpu: str             # e.g. "h100-sxm (sm90)"
    atoms: tuple[int, int | None, int | None] | None = None  # backward: warp grids of its products (see Rule)
    registers: int | None = None  # per thread, as compiled (Table.registers_per_thread)
    #: (blocks an SM, step factor) measured for this kernel tile (:mod:`.coresidency`), or None.
    #: Kept when a study swaps the tile's blocks (explore): the only measurement there is
    coresident: tuple[int, float] | None = None
    #: a lone block's measured step over the model's serial sum (:func:`.coresidency.step_factor`)
    step_factor: float = 1.0

    @property
    def stats_loads(self) -> int | None:
        """Backward: warps loading each row's L and D (see :attr:`Rule.stats_loads`)."""
        return self.warps // self.atoms[0] if self.atoms else None

    @property
    def warp_grids(self) -> tuple[int, int, int] | None:
        """The backward atoms when every one was checked (the time model needs all three)."""
        return self.atoms if self.atoms and None not in self.atoms else None

    def with_blocks(self, block_q: int, block_kv: int) -> "KernelTile":
        """This tile with a study's B_r × B_c (explore's candidates), keeping what was measured for the kernel."""
        return dataclasses.replace(self, block_q=block_q, block_kv=block_kv)

    def to_dict(self) -> dict:
        return {"block_q": self.block_q, "block_kv": self.block_kv, "warps": self.warps, "kernel": self.kernel,
                "kernel_head_dim": self.kernel_head_dim, "rule": self.rule, "source": self.source, "gpu": self.gpu}


def kernel_tile(
    algorithm: str, head_dim: int, profile, *, causal: bool = False, dropout: bool = False,
    seq_len_kv: int | None = None, direction: str = "fwd",
) -> KernelTile:
    """The real kernel's (B_r, B_c) for ``algorithm`` at ``head_dim`` on ``profile``'s GPU.

    Raises :class:`NoKernelTile` with the reason when no kernel applies (a non-NVIDIA or
    pre-Ampere GPU for FA2, a head dim above the largest compiled one, no table for the
    algorithm).
    """
    table = TABLES.get((algorithm, direction))
    if table is None:
        known = ", ".join(f"{k}/{d}" for k, d in TABLES)
        raise NoKernelTile(f"no real-kernel tile table for {algorithm!r} ({direction}); tables: {known}")
    gpu = gpu_info(profile)
    if gpu.vendor.lower() != "nvidia":
        raise NoKernelTile(f"{table.kernel} is a CUDA kernel; profile {gpu.name!r} is vendor {gpu.vendor!r}")
    if table.min_cc is not None:
        if gpu.compute_capability is None:
            raise NoKernelTile(f"profile {gpu.name!r} states no compute capability, which {table.kernel} dispatches on")
        if gpu.compute_capability < table.min_cc:
            raise NoKernelTile(f"{table.kernel} needs sm{table.min_cc[0]}{table.min_cc[1]} or newer; "
                               f"{gpu.name} is {gpu.arch}")
    fitting = [h for h in table.head_dims if h >= head_dim]
    if not fitting:
        raise NoKernelTile(f"{table.kernel} supports head dims up to {max(table.head_dims)}, got {head_dim}")
    k_head_dim = fitting[0]
    features = Features(causal=causal, dropout=dropout, seq_len_kv=seq_len_kv)
    for rule in table.rules:
        text, predicate = rule.when
        if rule.head_dim == k_head_dim and predicate(gpu, features):
            key = (table.kernel, rule.block_q, rule.block_kv, rule.warps, k_head_dim)
            return KernelTile(rule.block_q, rule.block_kv, rule.warps, table.kernel, k_head_dim,
                              f"kHeadDim={k_head_dim}: {text}", table.source, f"{gpu.name} ({gpu.arch})",
                              rule.atoms, table.registers_per_thread,
                              coresident_factor(*key, even_k=head_dim == k_head_dim),
                              step_factor(*key, even_k=head_dim == k_head_dim))
    raise NoKernelTile(f"no rule of {table.kernel} matches kHeadDim={k_head_dim} on {gpu.name}")  # pragma: no cover


__all__ = ["kernel_tile", "KernelTile", "NoKernelTile", "gpu_info", "GpuInfo", "TABLES"]
