"""flash-attn 2's dot_do_o and convert_dq: a lone block's measured duration as their floor.

Both kernels' blocks wait dependent round trips the read-then-write floor does not hold
(:mod:`iosim.kernels.elementwise_chains`), so a launch takes at least one block's measured
duration. How that duration meets the bytes was read off the same controlled runs
(docs/validation/2026-12-04-small-cost.md, 126 launches a kernel):

* **convert_dq** loads its fp32 tile, converts it, waits at a barrier and stores: the lone
  block's duration replaces the floor and the memory times add to it (median error 5.6 %,
  against 11.6 % for the larger of the two);
* **dot_do_o** streams its loads and stores one float a row: the launch takes the larger of
  the lone block and the memory-bound prediction (median error 6.1 %).

Only where the rates are the H200's measured ones (the durations were measured there);
elsewhere both keep the memory-bound model.
"""

from __future__ import annotations

from ..kernels.elementwise_chains import lone_block_s
from .roofline import TimePrediction

#: the per-resource key of a lone block's measured duration
LONE = "a lone block, measured"
#: the kernels this model times
KERNELS = ("dot_do_o", "convert_dq")


def predict(base: TimePrediction, kernel: str, *, kernel_head_dim: int, rows: int,
            block_rows: int) -> TimePrediction:
    """``base`` (the memory-bound prediction of a dot_do_o or convert_dq launch) with its lone
    block's measured duration; ``rows`` the valid query rows of a block of ``block_rows``."""
    lone = lone_block_s(kernel, kernel_head_dim, rows, block_rows)
    if lone is None:
        return base
    per = {**base.per_resource_s, LONE: lone}
    if kernel == "convert_dq":     # the lone block in place of the floor, the rest added
        rest = base.predicted_s - base.per_resource_s["launch"]
        return TimePrediction(lone + rest, LONE if lone >= rest else base.bound, per)
    if lone > base.predicted_s:
        return TimePrediction(lone, LONE, per)
    return TimePrediction(base.predicted_s, base.bound, per)


__all__ = ["KERNELS", "LONE", "predict"]
