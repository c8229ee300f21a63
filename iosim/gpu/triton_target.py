"""iosim's Triton FA2 forward kernel, for Nsight Compute to profile.

Usage (by :mod:`iosim.gpu.triton_ncu`): ``python -m iosim.gpu.triton_target '<JSON>'``, one
config or a list of them, each an object with seq_len, head_dim, batch, heads, causal,
block_m, block_n, num_warps, num_stages, and optionally dtype (fp16, default, or bf16) and
seed. Per config: the marker kernel in a profiler range of its own, one launch outside any
range (Triton compiles the kernel there), then one launch inside a profiler range, for
``ncu --profile-from-start off``. Inputs are N(0, 1) in the kernel's (B, H, N, d) layout. A
text that is not such a config is refused with a one-line error and exit code 2, before
PyTorch or Triton is imported.
"""

from __future__ import annotations

import json
import sys

from ..errors import IosimError
from .sdpa_target import DTYPES, marker, parsed_argument, profiled_range

REQUIRED = ("seq_len", "head_dim", "batch", "heads", "causal", "block_m", "block_n", "num_warps", "num_stages")


def parse_configs(text: str) -> list[dict]:
    """The configs of a JSON text (an object or a list of objects), checked; IosimError otherwise."""
    try:
        got = json.loads(text)
    except ValueError as exc:
        raise IosimError(f"the config is not JSON ({exc})") from None
    configs = got if isinstance(got, list) else [got]
    for cfg in configs:
        if not isinstance(cfg, dict):
            raise IosimError(f"a config must be a JSON object, not {type(cfg).__name__}")
        missing = [k for k in REQUIRED if k not in cfg]
        if missing:
            raise IosimError(f"a config lacks {', '.join(missing)} (it needs {', '.join(REQUIRED)})")
        if cfg.get("dtype", "fp16") not in DTYPES:
            raise IosimError(f"unknown dtype {cfg['dtype']!r}: choose one of {', '.join(DTYPES)}")
    return configs


def run(cfg: dict) -> None:
    """The marker, one launch of ``cfg`` outside any range (compiling it), one inside a range."""
    import torch

    from .triton_attention import fa2_forward

    torch.manual_seed(cfg.get("seed", 0))
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[cfg.get("dtype", "fp16")]
    shape = (cfg["batch"], cfg["heads"], cfg["seq_len"], cfg["head_dim"])
    q, k, v = (torch.randn(shape, device="cuda", dtype=dtype) for _ in range(3))
    knobs = {name: cfg[name] for name in ("block_m", "block_n", "num_warps", "num_stages")}
    marker(torch)
    fa2_forward(q, k, v, cfg["causal"], **knobs)
    with profiled_range(torch):
        fa2_forward(q, k, v, cfg["causal"], **knobs)
    del q, k, v
    torch.cuda.empty_cache()


def main(argv: list[str]) -> int:
    configs = parsed_argument(argv, "triton_target", parse_configs)
    if configs is None:
        return 2
    for cfg in configs:
        run(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
