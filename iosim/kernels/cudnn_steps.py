"""cuDNN's persistent Hopper kernels' steps, measured on launches made for them (docs/gpu.md, "cuDNN's time").

``benchmarks/cudnn_steps.py`` times the fprop and bprop kernels under PyTorch's profiler on launches of exactly
132·w tiles (w = 1, 2, 8 waves) at two lengths, dense and causal, and ``benchmarks/cudnn_steps_table.py --package``
derives, per kernel, kernel head dim and dtype: a unit's step, the causal kernel's step, what a unit costs besides
its steps, and the launch's fill (:mod:`iosim.models.cudnn_time` says what each is). Each table is data of one GPU
(``cudnn_steps_*.json``, for the profiles it names); on any other GPU, head dim or dtype there is no measured step,
and the launch keeps the roofline and says why (:func:`missing_note`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

#: the tables shipped with the package, one per GPU
TABLES = ("cudnn_steps_h200.json",)


@dataclass(frozen=True)
class CudnnStep:
    """One kernel's steps at one kernel head dim and dtype on one GPU (seconds)."""

    step_s: float                 # a unit's step: a key block (fprop) or a query block (bprop)
    tile_s: float                 # what a unit costs besides its steps
    fill_s: float                 # what the launch costs besides its busiest SM's units
    causal_step_s: float | None   # the causal kernel's step, where measured
    source: str


@lru_cache(maxsize=None)
def _tables() -> tuple:
    out = []
    for name in TABLES:
        path = resources.files(__package__).joinpath(name)
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        source = f"the {data['gpu']} ({data['date']}, {data['versions']})"
        out.append((frozenset(data["profiles"]), source, data["entries"]))
    return tuple(out)


def cudnn_step(kernel: str, profile_name: str, kernel_head_dim: int, dtype: str) -> CudnnStep | None:
    """The measured steps of cuDNN's ``kernel`` ("fprop" or "bprop") at ``kernel_head_dim`` and ``dtype`` on the
    profile's GPU, or None where none were measured."""
    name = f"{kernel},{kernel_head_dim},{dtype}"
    for profiles, source, entries in _tables():
        if profile_name in profiles and name in entries:
            return CudnnStep(**entries[name], source=source)
    return None


def missing_note(kernel: str, profile_name: str, kernel_head_dim: int, dtype: str, causal: bool) -> str:
    """Why a cuDNN launch has no kernel time model: no measured steps for it."""
    what = f"{kernel} kernel at head dim {kernel_head_dim}, {dtype}" + (", causal" if causal else "")
    return (f"roofline, a lower bound: no kernel time model for cuDNN's {what} on {profile_name} "
            "(its steps were not measured there: docs/gpu.md, \"cuDNN's time\")")


__all__ = ["CudnnStep", "TABLES", "cudnn_step", "missing_note"]
