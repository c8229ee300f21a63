"""iosim's own kernels' steps, measured on the compiled kernels (docs/triton.md, "Measured
steps"; docs/gpu.md): the Triton FA2 forward (``triton-fa2``) and the CuPy tensor-core FA2
kernel (``cupy-fa2-mma``).

``benchmarks/triton_steps.py`` (``benchmarks/cupy_steps.py``) times every configuration
whose shared memory fits, at d = 64 and 128, on launches made for it (whole waves of ``k``
blocks an SM, two lengths, none a shape the tile benchmarks time), and
``benchmarks/steps_table.py`` derives, per configuration, what a wave costs: a step of ``k``
co-resident blocks, a lone block's step, the causal kernel's step, the launch's fill and a
wave's other costs, with the compiled kernel's registers, spills and shared bytes and CUDA's
occupancy. Each table is data of one GPU (``*_h200.json``, for the profiles it names); on
any other GPU, head dim or configuration there is no measured step and the time model says
so (:mod:`iosim.models.triton_time` falls back to its analytic step, ``cupy_kernels.model_time``
to its warp layout's model, each named as such).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

#: the tables shipped with the package: kernel -> its tables, one per GPU
TABLES = {"triton-fa2": ("triton_steps_h200.json",), "cupy-fa2-mma": ("cupy_fa2_steps_h200.json",)}


@dataclass(frozen=True)
class MeasuredStep:
    """One configuration's steps on one GPU (seconds)."""

    blocks_per_sm: int
    step_s: float                 # a step of a full round (``blocks_per_sm`` blocks an SM)
    wave_s: float                 # what a wave costs besides its steps, between waves
    fill_s: float                 # the launch's own fill and drain: the first Q loads, the last O stores
    lone_step_s: float | None     # a step of one block alone on its SM, where measured
    causal_step_s: float | None   # the causal kernel's step of a full round
    registers: int
    spills: int
    shared_bytes: int
    source: str
    #: a round's fixed cost besides its steps, and its step, from blocks of about 4 and 16 key
    #: steps (run4: docs/validation/2026-12-02-triton-short.md); None where not measured
    round_s: float | None = None
    short_step_s: float | None = None

    def round_step(self, resident: int, ratio: float) -> float:
        """A step of ``resident`` co-resident blocks: the full round's, or between the lone
        block's and the full round's in proportion to the blocks; where no lone step was
        measured, the full round's times ``ratio`` (the caller's model of a round of
        ``resident`` over a full round: triton-fa2's analytic rounds, else ``resident/k``)."""
        k = self.blocks_per_sm
        if resident >= k:
            return self.step_s
        if self.lone_step_s is None:
            return self.step_s * ratio
        return self.lone_step_s + (self.step_s - self.lone_step_s) * (resident - 1) / (k - 1)


@lru_cache(maxsize=None)
def _tables(kernel: str) -> tuple:
    out = []
    for name in TABLES[kernel]:
        data = json.loads(resources.files(__package__).joinpath(name).read_text())
        source = f"steps measured on the {data['gpu']} ({data['date']}, {data['toolkit']})"
        out.append((frozenset(data["profiles"]), source, data["entries"]))
    return tuple(out)


def measured_step(kernel: str, profile_name: str, key: tuple[int, int, int, int],
                  head_dim: int) -> MeasuredStep | None:
    """The measured steps of ``kernel``'s configuration ``key`` (rows and keys of a block,
    warps, pipeline stages) at ``head_dim`` on the profile's GPU, or None where none was
    measured."""
    name = ",".join(map(str, (*key, head_dim)))
    for profiles, source, entries in _tables(kernel):
        if profile_name in profiles and name in entries:
            return MeasuredStep(**entries[name], source=source)
    return None


def covers(kernel: str, profile_name: str, head_dim: int) -> bool:
    """Whether some configuration of ``kernel`` was measured at ``head_dim`` on the profile's
    GPU (then a configuration that was not has no time comparable with theirs)."""
    suffix = f",{head_dim}"
    return any(profile_name in profiles and any(k.endswith(suffix) for k in entries)
               for profiles, _, entries in _tables(kernel))


__all__ = ["MeasuredStep", "measured_step", "covers", "TABLES"]
