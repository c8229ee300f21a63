"""Run one algorithm on the GPU: counted bytes, output check, kernel time.

A run makes two passes over the same inputs. The instrumented build (``-DIOSIM_COUNT_BYTES``)
gives the per-tensor byte counts and the output that is checked against the float64
reference; the uninstrumented build is then checked to give bit-identical output and is the
one timed, with CUDA events: ``warmup`` launches, then the median of ``repeats`` launches.
"""

from __future__ import annotations

import statistics
import subprocess
from dataclasses import dataclass

import numpy as np

from . import numerics as reference
from .cupy_kernels import Attention, Config


@dataclass(frozen=True)
class GpuRun:
    """What one algorithm did on the GPU. Bytes are summed over the grid and over B·H."""

    config: Config
    kernels: tuple[str, ...]
    counts: dict[str, tuple[int, int]]  # tensor -> (bytes read, bytes written)
    max_abs_err: float
    tolerance: float
    lse_err: float | None
    lse_tolerance: float
    checked_rows: int
    total_rows: int
    timed_matches_counted: bool | None
    time_s: float | None
    warmup: int
    repeats: int

    @property
    def output_ok(self) -> bool:
        ok = self.max_abs_err <= self.tolerance
        if self.lse_err is not None:
            ok = ok and self.lse_err <= self.lse_tolerance
        return ok and self.timed_matches_counted is not False

    @property
    def tflops(self) -> float | None:
        return self.config.flops / self.time_s / 1e12 if self.time_s else None


def time_launches(att: Attention, warmup: int, repeats: int) -> list[float]:
    """Seconds per launch of ``att`` (all of its kernels), CUDA events around each launch."""
    import cupy

    for _ in range(warmup):
        att.reset()
        att.launch()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(repeats):
        att.reset()  # FA1's O/ℓ/m initialisation happens before the start event
        start.record()
        att.launch()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return times


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def run(cfg: Config, *, seed: int = 0, time: bool = True, warmup: int = 5, repeats: int = 20,
        max_ref_elements: int = 1 << 27) -> GpuRun:
    """Run ``cfg`` on the current GPU; see the module docstring for the two passes."""
    import cupy

    qh, kh, vh = reference.make_inputs(cfg.heads_total, cfg.seq_len, cfg.head_dim, cfg.dtype, seed)
    q, k, v = (cupy.asarray(x) for x in (qh, kh, vh))

    att = Attention(cfg, q, k, v, count=True)
    kernels = tuple(ln.name for ln in att.plan)
    att.poison()
    att.launch()
    cupy.cuda.Device().synchronize()
    counts = att.counts()
    o_counted = att.out["O"].get()
    lse = att.lse()
    lse_counted = None if lse is None else lse.get()
    del att, lse
    cupy.get_default_memory_pool().free_all_blocks()

    rows = reference.check_rows(cfg.heads_total, cfg.seq_len, max_ref_elements, seed)
    err, lse_err = reference.max_errors(qh, kh, vh, o_counted, lse_counted, cfg.causal, rows)

    matches, times = None, []
    if time:
        att = Attention(cfg, q, k, v, count=False)
        att.poison()
        att.launch()
        matches = _same(att.out["O"].get(), o_counted)
        times = time_launches(att, warmup, repeats)
        del att
    del q, k, v
    cupy.get_default_memory_pool().free_all_blocks()
    return GpuRun(
        config=cfg, kernels=kernels, counts=counts, max_abs_err=err,
        tolerance=reference.OUTPUT_TOLERANCE[cfg.dtype], lse_err=lse_err,
        lse_tolerance=reference.LSE_TOLERANCE, checked_rows=int(sum(len(r) for r in rows)),
        total_rows=cfg.heads_total * cfg.seq_len, timed_matches_counted=matches,
        time_s=statistics.median(times) if times else None, warmup=warmup if time else 0,
        repeats=repeats if time else 0)


def device_info() -> dict[str, str]:
    """GPU name, compute capability, driver and CUDA versions, CuPy version."""
    import cupy

    rt = cupy.cuda.runtime
    dev = cupy.cuda.Device()
    props = rt.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])

    def ver(v: int) -> str:
        return f"{v // 1000}.{(v % 1000) // 10}"

    info = {
        "gpu": name,
        "compute_capability": f"{props['major']}.{props['minor']}",
        "multiprocessors": str(props["multiProcessorCount"]),
        "cuda_driver_api": ver(rt.driverGetVersion()),
        "cuda_runtime": ver(rt.runtimeGetVersion()),
        "cupy": cupy.__version__,
    }
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            info["driver"] = out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        from cupy.cuda import nvrtc

        major, minor = nvrtc.getVersion()
        info["nvrtc"] = f"{major}.{minor}"
    except Exception:  # noqa: BLE001 - informational only
        pass
    return info
