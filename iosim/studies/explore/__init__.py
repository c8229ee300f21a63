"""Choose block sizes for one GPU and one attention shape (``iosim explore``).

Every (B_r, B_c) of a grid (:mod:`.tile_grid`; by default the multiples of 16 that fit
the per-block shared memory) is *run* through the algorithm's schedule, exactly as
:func:`iosim.simulate` runs it (:mod:`.measure`), then judged (:mod:`.candidate`):

* **feasible** when the tiles the schedule keeps in shared memory fit the profile's
  per-block shared memory (the paper's M); the register file is checked the same way
  (S_ij and the O_i accumulator in fp32 registers), and a tile that would spill is not
  chosen unless ``allow_spill``.
* scored by the **objective**: ``time`` (the time ``iosim simulate`` predicts for the
  tile: the roofline, with the L2 model for a profile with a cache, or a real kernel's
  time model with ``kernel=``), ``bytes`` (HBM bytes requested, summed over batch ×
  heads) or ``dram`` (the bytes the L2 model sends to DRAM).
* ranked (:mod:`.ties`): the best, the near-ties within a tolerance of it, and the
  practical choice among those.

The paper's default (Algorithm 1 line 1) and the real kernel's tile
(:mod:`iosim.kernels.tile_tables`) are always evaluated too. For ``standard`` the
blocks only matter when its matrix products are tiled, so explore runs it with
``gemm="tiled"``.

>>> from iosim import Problem
>>> res = explore("h100-sxm", "fa2", Problem(seq_len=4096, head_dim=128), block_q=[64, 128], block_kv=[64, 128],
...               objective="time", cache=False)
>>> (res.best.block_q, res.best.block_kv), (res.kernel.block_q, res.kernel.block_kv), res.time_model
((128, 64), (128, 64), 'roofline without the L2 model')
"""

from .candidate import OBJECTIVES, OBJECTIVE_ALIASES, Candidate, canonical_objective
from .exploration import ExploreResult, describe_model, explore
from .points import explore_points
from .tile_grid import GRIDS, default_grid
from .ties import DEFAULT_REPLAYS, DEFAULT_TIE, PRACTICAL_RULE, Ranking

__all__ = ["explore", "explore_points", "ExploreResult", "Candidate", "Ranking", "default_grid", "describe_model",
           "OBJECTIVES", "OBJECTIVE_ALIASES", "GRIDS", "PRACTICAL_RULE", "DEFAULT_TIE", "DEFAULT_REPLAYS",
           "canonical_objective"]
