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


def main(argv: list[str]) -> int:
    from . import reference, require
    from .kernels import Attention, Config

    cupy = require()
    if os.environ.get("IOSIM_NO_POOL") == "1":
        cupy.cuda.set_allocator(None)
    spec = json.loads(argv[0])
    seed = spec.pop("seed", 0)
    count = bool(spec.pop("count", False))
    cfg = Config(**spec)
    q, k, v = (cupy.asarray(x) for x in reference.make_inputs(cfg.heads_total, cfg.seq_len, cfg.head_dim,
                                                                cfg.dtype, seed))
    att = Attention(cfg, q, k, v, count=count)
    att.launch()
    cupy.cuda.Device().synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
