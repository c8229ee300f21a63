"""The 256 kernel's forward step, alone and two an SM, measured on the compiled kernel (device machine).

``iosim.kernels.coresidency`` holds, for flash-attn 2's forward tiles, the measured ratio of a
lone block's step to the model's serial sum and the pair factor r (two blocks an SM), both from
``sdpa_block_cost.py``'s slopes at 132 and 264 blocks. The 256 kernel (tile 64 × 64, 4 warps)
had neither: with 132 blocks PyTorch's split heuristic runs the split-KV kernel instead
(docs/spec/kernels.md §3), so r stayed an emulation (0.793), and its uneven instantiation
(d = 200 … 248, ``Is_even_K = false``) borrowed it.

flash-attn's variable-length entry (``mha_varlen_fwd``) applies the split only to decodes, so
with cumulative sequence lengths the main kernel runs 132 blocks, one an SM. That entry runs
the ``Is_even_MN = false`` instantiation (row-predicated loads); the study measures it at 264
blocks too, beside the padded (``Is_even_MN = true``) SDPA launch, and at d = 64 and 128 where
the padded kernel's lone slope is known (docs/validation/2026-12-02-block-cost.md), to show
what the row predication costs.

Studies (fp16, B = 1, 128 query rows a head, N_kv = 256·s for s = 1 … 32; slope per 1,024 keys):

* ``sdpa``: PyTorch's SDPA, 264 blocks (two an SM), d = 200, 224, 240, 256;
* ``varlen``: ``aten._flash_attention_forward`` with ``cum_seq_q``/``cum_seq_k``, 132 and 264
  blocks, d = 64, 128, 224, 256.

Run (device):  python3 benchmarks/sdpa_wide_cost.py --out DIR     (ncu; writes DIR/wide_cost.json)
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_block_cost import cli, durations, save_timed, sdpa_calls  # noqa: E402

REPEATS = 3
SMS = 132
ROWS = 128
STEPS = (1, 2, 4, 8, 16, 32)
#: K/V heads (``WIDE_KV_HEADS``, inherited by ncu's target process): unset, each query head its own;
#: 1 (session 27): the keys stay in the L2 (docs/validation/2026-12-04-block-kv.md)
KV_HEADS = int(os.environ["WIDE_KV_HEADS"]) if os.environ.get("WIDE_KV_HEADS") else None
#: kHeadDim -> query rows a block of the forward kernel (docs/spec/kernels.md §2)
BLOCK_Q = {64: 128, 128: 128, 256: 64}


def _block_q(d: int) -> int:
    return BLOCK_Q[next(k for k in sorted(BLOCK_Q) if k >= d)]


def configs() -> list[dict]:
    """(study, d, blocks, heads, n_q, n_kv) in launch order."""
    out = []
    for d in (200, 224, 240, 256):
        out += [{"study": "sdpa", "d": d, "blocks": 2 * SMS} for _ in STEPS]
    for d in (64, 128, 224, 256):
        for blocks in (SMS, 2 * SMS):
            out += [{"study": "varlen", "d": d, "blocks": blocks} for _ in STEPS]
    for cfg, s in zip(out, STEPS * (len(out) // len(STEPS))):
        cfg.update(heads=cfg["blocks"] * _block_q(cfg["d"]) // ROWS, n_q=ROWS, n_kv=256 * s)
        if KV_HEADS:
            cfg["kv_heads"] = KV_HEADS
    return out


def varlen_calls(d: int, heads: int, n_q: int, n_kv: int, calls: int, kv_heads: int | None = None) -> None:
    """``calls`` calls of flash-attn's variable-length forward (one sequence, fp16), as PyTorch
    exposes it: (total, heads, d) tensors and int32 cumulative lengths; ``kv_heads`` K/V heads."""
    import torch

    q = torch.randn(n_q, heads, d, device="cuda", dtype=torch.float16)
    k, v = (torch.randn(n_kv, kv_heads or heads, d, device="cuda", dtype=torch.float16) for _ in range(2))
    cq, ck = (torch.tensor([0, n], device="cuda", dtype=torch.int32) for n in (n_q, n_kv))
    for _ in range(calls):
        torch.ops.aten._flash_attention_forward(q, k, v, cq, ck, n_q, n_kv, 0.0, False, False)
    torch.cuda.synchronize()


def target() -> None:
    for cfg in configs():
        call = sdpa_calls if cfg["study"] == "sdpa" else varlen_calls
        call(cfg["d"], cfg["heads"], cfg["n_q"], cfg["n_kv"], REPEATS, kv_heads=cfg.get("kv_heads"))


def summarise(text: str, out: str, machine: dict) -> None:
    """Per configuration, its launches' grids and times and their median, in launch order."""
    launches = [ln for ln in durations(text) if "combine" not in ln[0]]   # a call is one forward launch
    save_timed(out, "wide_cost.json", machine, configs(), launches, REPEATS,
               extra=lambda got: {"kernels": sorted({n.split("<")[0] for n, _, _ in got})})


def main() -> None:
    cli(__doc__, target, summarise, "wide_cost.json", "regex:flash_fwd", __file__)


if __name__ == "__main__":
    main()
