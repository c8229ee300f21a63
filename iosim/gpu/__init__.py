"""iosim on a real GPU: CUDA kernels (through CuPy) that run the simulator's loop orders.

Optional: ``pip install "iosim[gpu]"`` and an NVIDIA GPU. Importing this package does not
import CuPy; :func:`require` does, and raises :class:`~iosim.errors.DependencyError` saying
what is missing. The modules:

* ``cuda/*.cu``  — the kernels (standard, FA1, FA2; a generic CUDA-core path for fp32/fp16
  and a tensor-core fp16 path), with per-tensor byte counters behind ``-DIOSIM_COUNT_BYTES``;
* ``build``      — compiles them with NVRTC (instrumented or not);
* ``cupy_kernels`` — buffers, grids and launches for one problem;
* ``numerics``   — the float64 NumPy reference and the tolerances;
* ``runner``     — one run: counts, output check, CUDA-event timing;
* ``ncu``, ``ncu_target`` — Nsight Compute measurements of the same kernels (the target
  is the process it profiles);
* ``sdpa``, ``sdpa_target`` — PyTorch's FlashAttention-2 SDPA kernels under Nsight
  Compute, beside the ``flash-attn-2`` preset's predictions (``--vendor torch-sdpa``);
* ``cudnn``      — PyTorch's cuDNN SDPA kernels under Nsight Compute, beside the ``cudnn``
  preset's predictions (``--vendor cudnn``); ``cudnn_lsu`` what the LSU counts of its decode
  forward's kernels beyond the preset's tensors.

Its place in the pipeline: beside :mod:`iosim.grading`, below only :mod:`iosim.cli`; it
gets the counts it compares with from :func:`iosim.simulate`, like any user.
"""

from __future__ import annotations

from ..errors import DependencyError

INSTALL_HINT = 'pip install "iosim[gpu]" (it pulls a CuPy wheel; pick the cupy-cudaXXx that matches your CUDA)'


def require():
    """Import CuPy and check that it sees a GPU; return the ``cupy`` module.

    Raises DependencyError naming what is missing: CuPy itself, or a usable NVIDIA GPU.
    """
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001 - ImportError, or a CuPy that cannot load CUDA
        raise DependencyError(
            f"CuPy is not installed (or failed to import: {exc}); the GPU kernels of `iosim validate` "
            f"run through CuPy. Install it with {INSTALL_HINT}, on a machine with an NVIDIA GPU."
        ) from None
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # noqa: BLE001 - CUDARuntimeError: no driver, no device
        raise DependencyError(
            f"CuPy is installed but found no usable NVIDIA GPU ({exc}); `iosim validate` needs an "
            "NVIDIA GPU with a working driver."
        ) from None
    if count < 1:
        raise DependencyError(
            "CuPy is installed but no NVIDIA GPU is visible (device count 0); `iosim validate` needs "
            "an NVIDIA GPU with a working driver."
        )
    return cupy
