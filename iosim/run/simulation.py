"""The function the CLI and every study call: prepare a run once, count its launches, model.

>>> from iosim import Problem, simulate
>>> r = simulate("fa-paper-a100", "fa2", Problem(seq_len=8192, head_dim=128))
>>> (r.blocks.block_q, r.blocks.block_kv)          # the paper's B_r = min(⌈M/4d⌉, d), B_c = ⌈M/4d⌉
(128, 192)
>>> r.hbm.total_elements                           # docs/spec/algorithms.md §9.1: FA2 forward
136323072
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np

from ..engine.context import MODES
from ..errors import require_choice
from ..hardware import HardwareProfile
from ..workload.problem import Problem
from .launches import run_launches
from .options import Options
from .result import Result
from .setup import Blocks, prepare


def simulate(hw: str | os.PathLike | HardwareProfile, algorithm: str | Callable, problem: Problem, *,
             passes: str = "forward", blocks: Blocks = None, options: Options | None = None,
             mode: str = "count", inputs: dict[str, np.ndarray] | None = None) -> Result:
    """Run ``algorithm`` on ``problem`` under ``hw`` and return every count.

    ``algorithm``: a built-in name (:data:`iosim.SCHEDULES`) or a schedule function
    ``f(ctx, **kwargs)``. ``passes``: ``"forward"``, ``"backward"`` or
    ``"forward+backward"``. ``blocks``: B_r × B_c (a :class:`~iosim.BlockSizes` or a pair;
    None, or None in the pair, takes Algorithm 1's rule from M). ``options``: the
    conventions, schedule options, block mask, real-kernel preset and cache model
    (:class:`~iosim.Options`). ``mode``: ``"count"`` (fast, shapes only), ``"trace"``
    (every iteration one by one) or ``"numeric"`` (float64 NumPy on ``inputs``, or random
    ones from ``options.seed``; the result's ``outputs`` hold O and the statistics, shaped
    (B, H, N, ·); a backward-only run first computes the forward outputs it reads, uncounted).
    """
    require_choice("mode", mode, MODES)
    setup = prepare(hw, algorithm, problem, passes=passes, blocks=blocks, options=options)
    return run_launches(setup, mode, inputs)


__all__ = ["simulate"]
