"""The ``triton-fa2`` kernel's steps, measured on the compiled kernels (docs/triton.md,
"Measured steps").

``benchmarks/triton_steps.py`` times every configuration of iosim's Triton FA2 forward
whose shared memory fits, at d = 64 and 128, on launches made for it (whole waves of ``k``
blocks an SM, two lengths, none a shape the tile benchmarks time), and
``benchmarks/triton_steps_table.py`` derives, per configuration, what a wave costs: a
step of ``k`` co-resident blocks, a lone block's step, the causal kernel's step, the rest of
a wave, with the compiled kernel's registers, spills and shared bytes and CUDA's occupancy.
The table is data of one GPU (``triton_steps_h200.json``, for the profiles it names); on
any other GPU, head dim or configuration the preset has no measured step and the time model
says so (:mod:`iosim.models.triton_time` falls back to its analytic step, named as such).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

#: the tables shipped with the package, one per GPU
TABLES = ("triton_steps_h200.json",)


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

    def round_step(self, resident: int, analytic_ratio: float) -> float:
        """A step of ``resident`` co-resident blocks: the full round's, or between the lone
        block's and the full round's in proportion to the blocks; where no lone step was
        measured, the full round's scaled by the analytic model's ``analytic_ratio``
        (its round of ``resident`` over its full round)."""
        k = self.blocks_per_sm
        if resident >= k:
            return self.step_s
        if self.lone_step_s is None:
            return self.step_s * analytic_ratio
        return self.lone_step_s + (self.step_s - self.lone_step_s) * (resident - 1) / (k - 1)


@lru_cache(maxsize=None)
def _tables() -> tuple:
    out = []
    for name in TABLES:
        data = json.loads(resources.files(__package__).joinpath(name).read_text())
        source = f"steps measured on the {data['gpu']} ({data['date']}, Triton {data['triton']})"
        out.append((frozenset(data["profiles"]), source, data["entries"]))
    return tuple(out)


def measured_step(profile_name: str, key: tuple[int, int, int, int], head_dim: int) -> MeasuredStep | None:
    """The measured steps of configuration ``key`` (BLOCK_M, BLOCK_N, num_warps, num_stages)
    at ``head_dim`` on the profile's GPU, or None where none was measured."""
    name = ",".join(map(str, (*key, head_dim)))
    for profiles, source, entries in _tables():
        if profile_name in profiles and name in entries:
            return MeasuredStep(**entries[name], source=source)
    return None


__all__ = ["MeasuredStep", "measured_step", "TABLES"]
