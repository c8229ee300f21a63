"""One forward and one backward of PyTorch's fused SDPA kernels, for Nsight Compute to profile.

Usage (by :mod:`iosim.gpu.sdpa`): ``python -m iosim.gpu.sdpa_target '<problem as JSON>'`` with
keys seq_len, head_dim, batch, heads, causal, and optionally seq_len_q / seq_len_kv (unequal
lengths; the causal mask aligned bottom-right, as flash-attn does) and dtype (fp16, default,
or bf16), kv_heads (GQA/MQA: K and V with that many heads, PyTorch's ``enable_gqa``), backend
(``flash``, default: FlashAttention-2; ``cudnn``: cuDNN's fused attention), layout (``bhnd``,
default, or ``bnhd``: LAYOUTS). Inputs are N(0, 1), shaped (B, H, N, d); only the chosen
backend is enabled, so a shape it does not take fails here rather than silently running
another kernel. With ``"ranges": true`` it runs
as benchmarks/sdpa_ncu.py measures cuDNN (:func:`run_in_ranges`): a marker kernel in a
profiler range of its own, one unprofiled run (cuDNN builds its plan there), then one run
inside a cudaProfilerStart/Stop range, for ``ncu --profile-from-start off``. A config that is
no JSON object, lacks a key or names an unknown backend is refused with a one-line error and
exit code 2, before PyTorch is imported.
"""

from __future__ import annotations

import contextlib
import json
import sys

from ..errors import IosimError

#: the config's ``backend`` -> the name of PyTorch's ``torch.nn.attention.SDPBackend`` member
BACKENDS = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION"}
REQUIRED = ("seq_len", "head_dim", "batch", "heads", "causal")
DTYPES = ("fp16", "bf16")
#: the inputs' memory layout: (B, H, N, d) contiguous (default; a head's rows contiguous), or
#: (B, N, H, d) contiguous seen through a transpose (a head's rows at a stride of H·d)
LAYOUTS = ("bhnd", "bnhd")
#: the kernel that opens each config's launches in a run in profiler ranges (torch.cuda._sleep's)
MARKER_KERNEL = "spin_kernel"


def parse_config(text: str) -> dict:
    """The config of a JSON text, checked: an object with the REQUIRED keys, a known backend
    and dtype; IosimError (one line) otherwise."""
    try:
        cfg = json.loads(text)
    except ValueError as exc:
        raise IosimError(f"the config is not JSON ({exc})") from None
    return check_config(cfg)


def check_config(cfg) -> dict:
    """``cfg`` itself where it is a config this target runs; IosimError (one line) otherwise."""
    if not isinstance(cfg, dict):
        raise IosimError(f"the config must be a JSON object, not {type(cfg).__name__}")
    missing = [k for k in REQUIRED if k not in cfg]
    if missing:
        raise IosimError(f"the config lacks {', '.join(missing)} (it needs {', '.join(REQUIRED)})")
    backend = cfg.get("backend", "flash")
    if backend not in BACKENDS:
        raise IosimError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if cfg.get("layout", "bhnd") not in LAYOUTS:
        raise IosimError(f"unknown layout {cfg['layout']!r}: choose one of {', '.join(LAYOUTS)}")
    if cfg.get("dtype", "fp16") not in DTYPES:
        raise IosimError(f"unknown dtype {cfg['dtype']!r}: choose one of {', '.join(DTYPES)}")
    return cfg


def run(cfg: dict, region=contextlib.nullcontext) -> None:
    """One forward and one backward of ``cfg`` (seq_len, head_dim, batch, heads, causal, and
    the optional keys above), inputs drawn from torch's current random state, inside the
    context ``region()`` (e.g. a profiler range: input creation stays outside it); the GPU
    memory is freed after."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    check_config(cfg)
    b, h, d = cfg["batch"], cfg["heads"], cfg["head_dim"]
    h_kv = cfg.get("kv_heads", h)
    n_q, n_kv = cfg.get("seq_len_q", cfg["seq_len"]), cfg.get("seq_len_kv", cfg["seq_len"])
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[cfg.get("dtype", "fp16")]

    def tensor(heads: int, n: int, grad: bool = True):
        if cfg.get("layout", "bhnd") == "bhnd":
            return torch.randn(b, heads, n, d, device="cuda", dtype=dtype, requires_grad=grad)
        # (B, N, H, d) in memory, seen as (B, H, N, d): a head's rows at a stride of H·d
        return torch.randn(b, n, heads, d, device="cuda", dtype=dtype).transpose(1, 2).requires_grad_(grad)

    q = tensor(h, n_q)
    k, v = tensor(h_kv, n_kv), tensor(h_kv, n_kv)
    grad = tensor(h, n_q, grad=False)
    backend = getattr(SDPBackend, BACKENDS[cfg.get("backend", "flash")])
    with region(), sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=cfg["causal"], enable_gqa=h_kv != h)
        out.backward(grad)
        torch.cuda.synchronize()
    del q, k, v, grad, out
    torch.cuda.empty_cache()


@contextlib.contextmanager
def profiled_range(torch):
    """A cudaProfilerStart/Stop range (what ``ncu --profile-from-start off`` profiles)."""
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    try:
        yield
    finally:
        with contextlib.suppress(Exception):   # a failed launch may leave an error to report
            torch.cuda.synchronize()
        torch.cuda.profiler.stop()


def marker(torch) -> None:
    """The launch that opens a config's group: MARKER_KERNEL, in a profiler range of its own."""
    with profiled_range(torch):
        torch.cuda._sleep(1000)


def run_in_ranges(cfg: dict) -> None:
    """``cfg`` as benchmarks/sdpa_ncu.py measures cuDNN: the marker, one run outside any range
    (the backend builds its plan), then one run inside a profiler range."""
    import torch

    marker(torch)
    run(cfg)
    run(cfg, region=lambda: profiled_range(torch))


def parsed_argument(argv: list[str], name: str, parse):
    """``parse`` of a target's one JSON argument, or None after a one-line error on stderr
    (``name``: the target module's, for the message)."""
    if len(argv) != 1:
        print(f"{name}: error: give the config as JSON (python -m iosim.gpu.{name} '{{...}}')", file=sys.stderr)
        return None
    try:
        return parse(argv[0])
    except IosimError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return None


def main(argv: list[str]) -> int:
    cfg = parsed_argument(argv, "sdpa_target", parse_config)
    if cfg is None:
        return 2
    import torch

    torch.manual_seed(cfg.get("seed", 0))
    (run_in_ranges if cfg.get("ranges") else run)(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
