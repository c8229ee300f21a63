"""One uninstrumented launch of one algorithm, for Nsight Compute to profile.

Usage (by :mod:`iosim.gpu.ncu`): ``python -m iosim.gpu.ncu_target '<Config as JSON + "seed">'``;
add ``"count": true`` for the instrumented build. Also a convenient target for
``compute-sanitizer``: with ``IOSIM_NO_POOL=1`` CuPy's memory pool is bypassed, so every
buffer is its own cudaMalloc and memcheck sees out-of-bounds accesses between buffers.
"""

from __future__ import annotations

import json
import os
import sys


def run(cfg, seed: int = 0, count: bool = False):
    """One launch of ``cfg`` (a :class:`~iosim.gpu.cupy_kernels.Config`) on N(0, 1) inputs drawn
    with ``seed``, synchronised; the :class:`~iosim.gpu.cupy_kernels.Attention` it ran is returned
    (its buffers are freed when the caller drops it)."""
    import cupy

    from . import numerics as reference
    from .cupy_kernels import Attention

    q, k, v = (cupy.asarray(x) for x in reference.make_inputs(cfg.heads_total, cfg.seq_len, cfg.head_dim,
                                                                cfg.dtype, seed))
    att = Attention(cfg, q, k, v, count=count)
    att.launch()
    cupy.cuda.Device().synchronize()
    return att


def main(argv: list[str]) -> int:
    from . import require
    from .cupy_kernels import Config

    cupy = require()
    if os.environ.get("IOSIM_NO_POOL") == "1":
        cupy.cuda.set_allocator(None)
    spec = json.loads(argv[0])
    seed = spec.pop("seed", 0)
    count = bool(spec.pop("count", False))
    run(Config(**spec), seed, count)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
