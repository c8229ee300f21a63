"""Compile iosim's CUDA kernels through CuPy (NVRTC), instrumented or not.

The CUDA C++ lives in ``iosim/gpu/cuda/`` as ``common.cuh``, ``generic.cu`` and ``mma.cu``.
They are concatenated into one source (so CuPy's on-disk kernel cache, keyed by the source
text, sees every change) and compiled once per template instantiation and build:

* ``count=True`` adds ``-DIOSIM_COUNT_BYTES``: every kernel counts the bytes it loads from and
  stores to global memory, per tensor (see ``common.cuh``);
* ``count=False`` is the build that gets timed; the counting code is not in it.

Nothing here imports CuPy at module import time; :func:`kernel` does, on first use.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ProcessPoolExecutor
from importlib import resources

SOURCES = ("common.cuh", "generic.cu", "mma.cu")
BASE_OPTIONS = ("-std=c++17",)
COUNT_OPTION = "-DIOSIM_COUNT_BYTES"


@functools.lru_cache(maxsize=1)
def source() -> str:
    """The kernels' CUDA source: the three files, concatenated in order."""
    folder = resources.files("iosim.gpu").joinpath("cuda")
    return "\n".join(folder.joinpath(name).read_text(encoding="utf-8") for name in SOURCES)


def options(count: bool) -> tuple[str, ...]:
    return BASE_OPTIONS + ((COUNT_OPTION,) if count else ())


@functools.lru_cache(maxsize=None)
def kernel(name_expression: str, count: bool):
    """The compiled kernel ``name_expression`` (e.g. ``"fa2_mma<128, 128, 64>"``), a RawKernel.

    One RawModule per instantiation keeps each compile small: NVRTC generates code only for
    the templates named in ``name_expressions``.
    """
    import cupy

    module = cupy.RawModule(code=source(), options=options(count), name_expressions=[name_expression])
    return module.get_function(name_expression)


def _warm_one(job: tuple[str, bool]) -> str:
    kernel(*job)
    return job[0]


def warm(jobs: list[tuple[str, bool]], workers: int | None = None) -> None:
    """Compile many instantiations in parallel processes, filling CuPy's on-disk cache.

    NVRTC compiles one program on one thread; the test grid and the benchmark need dozens of
    instantiations, so compiling them side by side saves most of the wall-clock time. The
    calling process then loads each kernel from the cache.
    """
    import multiprocessing

    jobs = sorted(set(jobs))
    if not jobs:
        return
    workers = workers or min(len(jobs), max(1, (os.cpu_count() or 2) // 2), 8)
    if workers <= 1:
        for job in jobs:
            kernel(*job)
        return
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        list(pool.map(_warm_one, jobs))


def nvcc_report(instantiations: list[str], arch: str = "sm_90", count: bool = False) -> str:
    """Compile explicit instantiations with ``nvcc -Xptxas -v``; return the resource report.

    Needs no GPU, only ``nvcc``: it catches syntax errors and shows registers, shared memory
    and spills per kernel. Each entry is a full explicit-instantiation declaration, e.g.
    ``template __global__ void fa2_mma<128,128,64>(const iosim_half*, ...);``.
    """
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc is not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "iosim_kernels.cu")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source() + "\n" + "\n".join(instantiations) + "\n")
        cmd = [nvcc, *options(count), f"-arch={arch}", "-c", path, "-o", os.path.join(tmp, "k.o"), "-Xptxas", "-v"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"nvcc failed:\n{done.stderr}")
        return done.stderr
