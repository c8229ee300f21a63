"""Which kernels cuDNN's fused attention launches, by shape: the query length below which PyTorch's
cuDNN backend leaves the sm90 flash kernels (device machine only; the table runs anywhere).

The prospective cuDNN grid of session 29 (docs/validation/2026-12-04-s29-cudnn.md) found a decode
(N_q = 1) forward running ``…sdpa_sm80_flash_fprop_wmma…`` and ``cudnn::lean_reduction_kernel``, which
the ``cudnn`` preset does not model. This sweeps N_q (and N_kv, d, GQA, causal where N_q = N_kv)
through one forward and backward each under ``torch.profiler`` and records the CUDA kernels' names.

    PYTHONPATH=$PWD python3 benchmarks/cudnn_paths.py --out DIR        # on the H200: DIR/paths.json
    python benchmarks/cudnn_paths.py --table DIR/paths.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os

N_Q = (1, 2, 4, 8, 16, 17, 32, 63, 64, 65, 96, 127, 128, 129, 192, 256, 512)
CASES = [dict(n_q=q, n_kv=kv, d=d, heads=8, kv_heads=kvh, causal=False)
         for q, kv, d, kvh in itertools.product(N_Q, (1024, 8192), (64, 128), (8, 2))]


def family(name: str) -> str:
    """A kernel's short family: fprop_sm90, fprop_sm80, bprop_sm90, lean_reduction, dot_do_o, ..."""
    for key, short in (("sm90_flash_fprop", "fprop_sm90"), ("sm80_flash_fprop", "fprop_sm80"),
                       ("sm90_flash_bprop", "bprop_sm90"), ("sm80_flash_bprop", "bprop_sm80"),
                       ("lean_reduction", "lean_reduction"), ("dot_do_o", "dot_do_o"),
                       ("convert_dq", "convert_dq"), ("reduce_head", "reduce_head")):
        if key in name:
            return short
    return name.split("(")[0][-40:]


def run(out_dir: str) -> None:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import ProfilerActivity, profile

    rows = []
    for c in CASES:
        q = torch.randn(1, c["heads"], c["n_q"], c["d"], device="cuda", dtype=torch.float16, requires_grad=True)
        k, v = (torch.randn(1, c["kv_heads"], c["n_kv"], c["d"], device="cuda", dtype=torch.float16,
                            requires_grad=True) for _ in range(2))
        try:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION), profile(activities=[ProfilerActivity.CUDA]) as prof:
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=c["causal"],
                                                                       enable_gqa=c["kv_heads"] != c["heads"])
                out.backward(torch.randn_like(out))
                torch.cuda.synchronize()
            names = [e.name for e in prof.events() if e.device_type.name == "CUDA"]
            rows.append({**c, "kernels": [family(n) for n in names if "elementwise" not in n and "fill" not in n.lower()]})
        except Exception as exc:     # the backend refuses the shape: recorded, not fatal
            rows.append({**c, "error": str(exc).splitlines()[0][:200]})
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "paths.json"), "w") as f:
        json.dump({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "rows": rows}, f, indent=1)


def table(path: str) -> str:
    with open(path) as f:
        rows = json.load(f)["rows"]
    lines = ["| N_q | N_kv | d | H / H_kv | kernels |", "|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r['n_q']} | {r['n_kv']} | {r['d']} | {r['heads']} / {r['kv_heads']} | "
                     f"{r.get('error') or ', '.join(r['kernels'])} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--table")
    a = ap.parse_args()
    if a.out:
        run(a.out)
    elif a.table:
        print(table(a.table))
    else:
        ap.error("give --out DIR or --table JSON")


if __name__ == "__main__":
    main()
