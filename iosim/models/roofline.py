"""Roofline time prediction: every resource works at its peak, the slowest sets the time.

Resources: each link of the memory hierarchy (bytes that crossed it ÷ its bandwidth),
the tensor cores (matrix-product FLOPs ÷ the dtype's dense tensor peak), the special
function units (exponentials ÷ the profile's ``exp`` rate, when it has one) and the fp32
ALUs (other element-wise operations ÷ the fp32 peak). They are assumed to overlap
perfectly and to be spread evenly over all SMs, so the prediction is a lower bound on a
real kernel's time; ``bound`` names the resource that sets it. When the L2 is modelled
(``cache=True``), the DRAM's link carries only the bytes that miss it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TimePrediction:
    predicted_s: float
    bound: str
    per_resource_s: dict

    def to_dict(self) -> dict:
        return {"predicted_s": self.predicted_s, "bound": self.bound, "per_resource_s": dict(self.per_resource_s)}


def predict_time(profile, link_bytes: dict, ops: dict, dtype: str) -> TimePrediction:
    """Per-resource times and their maximum (all counts already summed over heads)."""
    per: dict[str, float] = {}
    for key, nbytes in sorted(link_bytes.items()):
        bandwidth = profile.bandwidth(*key)
        if bandwidth and nbytes:
            per[f"link {key[0]}-{key[1]}"] = nbytes / bandwidth       # ASCII: a JSON key scripts type
    tensor_rate = profile.tensor_flops_per_s(dtype)
    if ops.get("matmul") and tensor_rate:
        per["tensor cores"] = ops["matmul"] / tensor_rate
    exp_rate = profile.compute.get("exp")
    if ops.get("exp") and exp_rate is not None:
        per["special functions (exp)"] = ops["exp"] / exp_rate.value
    fp32 = profile.compute.get("fp32")
    if ops.get("elementwise") and fp32 is not None:
        per["fp32 ALUs"] = ops["elementwise"] / fp32.value
    return _slowest(per)


def in_sequence(named: dict) -> TimePrediction:
    """Named predictions that run one after another: their times add, and so do each
    resource's; the longest names the bound ("name: its bound")."""
    per: dict[str, float] = {}
    for t in named.values():
        for k, v in t.per_resource_s.items():
            per[k] = per.get(k, 0.0) + v
    if not named:
        return TimePrediction(0.0, "nothing", per)
    longest = max(named, key=lambda k: named[k].predicted_s)
    return TimePrediction(sum(t.predicted_s for t in named.values()), f"{longest}: {named[longest].bound}", per)


def _slowest(per: dict) -> TimePrediction:
    """The roofline: the slowest resource sets the time."""
    if not per:
        return TimePrediction(0.0, "nothing", per)
    bound = max(per, key=per.get)
    return TimePrediction(per[bound], bound, per)
