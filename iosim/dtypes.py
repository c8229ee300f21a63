"""Element widths of the data types iosim counts in.

Convention C2 of the spec (docs/spec/conventions.md): Q, K, V, O, S and P take the chosen dtype;
the row statistics ℓ, m and the logsumexp L are fp32, as the real kernels keep them
(``ElementAccum = float``). Bytes are always elements × width, computed at the end.
"""

from __future__ import annotations

from .errors import require_choice

#: Bytes per element of each supported dtype.
WIDTH_BYTES: dict[str, int] = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}

#: The dtype of the row statistics (ℓ, m, L) and of on-chip accumulators.
ACCUM_DTYPE = "fp32"


def width(dtype: str) -> int:
    """Bytes per element of ``dtype``; a clear error for an unknown name."""
    try:
        return WIDTH_BYTES[dtype]
    except (KeyError, TypeError):
        return WIDTH_BYTES[require_choice("dtype", dtype, WIDTH_BYTES)]
