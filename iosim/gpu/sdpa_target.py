"""One forward and one backward of PyTorch's flash SDPA kernels, for Nsight Compute to profile.

Usage (by :mod:`iosim.gpu.sdpa`): ``python -m iosim.gpu.sdpa_target '<problem as JSON>'`` with
keys seq_len, head_dim, batch, heads, causal, and optionally seq_len_q / seq_len_kv (unequal
lengths; the causal mask aligned bottom-right, as flash-attn does) and dtype (fp16, default,
or bf16), kv_heads (GQA/MQA: K and V with that many heads, PyTorch's ``enable_gqa``). Inputs are N(0, 1) in PyTorch's (B, H, N, d) layout; only the flash backend is enabled, so a shape it does not take fails here rather than
silently running another kernel.
"""

from __future__ import annotations

import json
import sys


def run(cfg: dict) -> None:
    """One forward and one backward of ``cfg`` (seq_len, head_dim, batch, heads, causal),
    inputs drawn from torch's current random state; the GPU memory is freed after."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    b, h, d = cfg["batch"], cfg["heads"], cfg["head_dim"]
    h_kv = cfg.get("kv_heads", h)
    n_q, n_kv = cfg.get("seq_len_q", cfg["seq_len"]), cfg.get("seq_len_kv", cfg["seq_len"])
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[cfg.get("dtype", "fp16")]
    q = torch.randn(b, h, n_q, d, device="cuda", dtype=dtype, requires_grad=True)
    k, v = (torch.randn(b, h_kv, n_kv, d, device="cuda", dtype=dtype, requires_grad=True) for _ in range(2))
    grad = torch.randn(b, h, n_q, d, device="cuda", dtype=dtype)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=cfg["causal"], enable_gqa=h_kv != h)
        out.backward(grad)
    torch.cuda.synchronize()
    del q, k, v, grad, out
    torch.cuda.empty_cache()


def main(argv: list[str]) -> int:
    import torch

    cfg = json.loads(argv[0])
    torch.manual_seed(cfg.get("seed", 0))
    run(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
