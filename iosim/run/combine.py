"""Several kernel launches run one after another, reported as one result (the real-kernel
presets: a forward and a backward launch, or split + combine)."""

from __future__ import annotations

import dataclasses

from ..models.cache import CacheReport
from ..models.roofline import TimePrediction, in_sequence
from .result import HbmTraffic, Result, TensorTraffic


def combine_results(results: list[Result], **fields) -> Result:
    """Several kernel launches run one after another, reported as one result.

    Traffic and operations add up; on-chip peaks are the largest of the launches; each
    resource's time adds up, and so does the predicted time (the launches run in
    sequence). ``fields`` override the first result's (algorithm, blocks, options...).
    """
    first = results[0]
    tensors: dict[str, TensorTraffic] = {}
    for r in results:
        for name, t in r.tensors.items():
            if name in tensors:
                u = tensors[name]
                t = TensorTraffic(t.dtype, u.read_elements + t.read_elements, u.write_elements + t.write_elements,
                                  u.read_bytes + t.read_bytes, u.write_bytes + t.write_bytes)
            tensors[name] = t
    hbm = HbmTraffic(*(sum(getattr(r.hbm, f) for r in results)
                       for f in ("read_bytes", "write_bytes", "read_elements", "write_elements")))
    ops: dict[str, int] = {}
    for r in results:
        for k, v in r.ops.items():
            ops[k] = ops.get(k, 0) + v
    outputs: dict = {}
    kernels: dict = {}
    kernel_ops: dict = {}
    cta_work: dict = {}
    kernel_times: dict = {}
    for r in results:
        outputs.update(r.outputs)
        for name, traffic in r.kernels.items():
            key = name if name not in kernels else f"{name} ({r.passes})"
            kernels[key] = traffic
            kernel_ops[key] = r.kernel_ops.get(name, {})
            if name in r.cta_work:
                cta_work[key] = r.cta_work[name]
            if name in r.kernel_times:
                kernel_times[key] = r.kernel_times[name]
    seq = in_sequence(dict(enumerate(r.time for r in results)))
    if kernel_times:  # the kernel time model: the longest kernel launch names the bound
        bound = in_sequence(kernel_times).bound
    else:             # rooflines: the resource busiest over all launches
        bound = max(seq.per_resource_s, key=seq.per_resource_s.get) if seq.per_resource_s else "nothing"
    time = TimePrediction(seq.predicted_s, bound, seq.per_resource_s)
    caches = [r.cache for r in results if r.cache is not None]
    cache = _combined_caches(caches) if caches else None
    return dataclasses.replace(
        first, tensors=tensors, hbm=hbm, ops=ops, time=time, outputs=outputs, kernels=kernels, cache=cache,
        kernel_ops=kernel_ops, cta_work=cta_work, kernel_times=kernel_times,
        sram=_largest(results, "sram"), registers=_largest(results, "registers"),
        **fields,
    )


def _largest(results: list[Result], level: str):
    """The launches' largest peak of one ``level`` ("sram", "registers"), with every launch's own
    peaks (a name two launches share is told apart by its pass, as in :attr:`Result.kernels`)."""
    by_kernel: dict = {}
    for r in results:
        for name, peak in getattr(r, level).by_kernel:
            by_kernel[name if name not in by_kernel else f"{name} ({r.passes})"] = peak
    largest = max((getattr(r, level) for r in results), key=lambda o: o.peak_bytes)
    return dataclasses.replace(largest, by_kernel=tuple(by_kernel.items()))


def _combined_caches(caches: list[CacheReport]) -> CacheReport:
    """The launches' L2 reports as one (their kernels are distinct)."""
    def merged(name):
        return {k: v for c in caches for k, v in (getattr(c, name) or {}).items()} or None

    return CacheReport(merged("kernels"), merged("concurrency"), merged("outer"), merged("near") or {},
                       merged("sampled"), caches[0].partitions, tuple(k for c in caches for k in c.as_chunks),
                       merged("frames"), merged("code"))


__all__ = ["combine_results"]
