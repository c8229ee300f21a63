"""cuDNN's decode forward (one query row): which kernels run and with what grids, swept wide
without Nsight Compute (PyTorch's profiler records every launch's grid), to find how many
splits of the keys cuDNN runs (docs/validation/2026-12-05-cudnn-decode.md: ten shapes gave
1, 4, 8, 16 and 64, no rule).

The sweep varies one thing at a time around fixed points: N_kv (B · H_kv = 1, 4, 16), B · H_kv
(N_kv = 16,384 and 1,000), as batches or as K/V heads, the group size H / H_kv, the head dim
and the dtype. Forward only; each config is run twice (the first builds cuDNN's plan), the
second one traced.

Run (a GPU with PyTorch and cuDNN):

    PYTHONPATH=$PWD python3 benchmarks/cudnn_splits_probe.py --out DIR [--budget-s 150] [--set boundary]

or checks the rule below against recorded sweeps (exit 1 on a config it does not give):

    python benchmarks/cudnn_splits_probe.py --check docs/validation/2026-12-06-cudnn-splits/*.jsonl

It writes DIR/sweep.jsonl (``--set boundary``: DIR/boundary.jsonl), one line per config: its fields, then ``launches``: [name, grid,
block] of each kernel the traced forward made, in order.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from iosim.kernels.cudnn_preset import decode_halves, decode_splits  # noqa: E402

#: key lengths swept at B · H_kv = 1, 4 and 16
N_KVS = (64, 100, 128, 192, 200, 255, 256, 257, 300, 384, 448, 500, 511, 512, 513, 640, 768, 1000, 1023, 1024,
         1025, 1536, 2000, 2048, 3000, 4096, 6000, 8192, 12345, 16384, 32768, 65536, 131072)
#: B · H_kv swept at N_kv = 16,384 and 1,000
PAIRS = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 33, 48, 64, 66, 96, 127, 128, 132, 192, 256, 264, 512)


def configs() -> list[dict]:
    """The sweep, in order: (N_kv, B, H, H_kv, d, dtype) around the fixed points above."""
    out = []

    def add(n_kv, b, h, h_kv, d=64, dtype="fp16"):
        out.append(dict(seq_len_kv=n_kv, batch=b, heads=h, kv_heads=h_kv, head_dim=d, dtype=dtype))
    for pairs in (1, 4, 16):
        for n_kv in N_KVS:
            add(n_kv, 1, pairs, pairs)                   # as K/V heads
    for n_kv in (16384, 1000):
        for pairs in PAIRS:
            add(n_kv, pairs, 1, 1)                       # as batches
            add(n_kv, 1, pairs, pairs)                   # as heads
    for group in (2, 4, 8, 16):                          # the group: more query heads a K/V head
        for h_kv in (1, 4, 16):
            add(16384, 1, h_kv * group, h_kv)
            add(1000, 1, h_kv * group, h_kv)
    for d in (32, 80, 96, 128, 192, 256):
        for n_kv, pairs in ((16384, 1), (4096, 16), (1000, 4), (300, 9)):
            add(n_kv, 1, pairs, pairs, d=d)
    for n_kv, pairs in ((16384, 1), (4096, 16), (1000, 4)):
        add(n_kv, 1, pairs, pairs, dtype="bf16")
    return out


def splits(n_kv: int, pairs: int) -> int:
    """The key splits of cuDNN's decode forward for N_kv keys and ``pairs`` = B · H_kv: the rule read
    from the sweep (H100 and H200, 132 SMs each), as the ``cudnn`` preset runs it
    (:func:`iosim.kernels.cudnn_preset.decode_splits`)."""
    return decode_splits(n_kv, pairs)


def expected(cfg: dict) -> tuple[list, list | None]:
    """(the decode kernel's grid, the reduction's or None) by :func:`splits`: (splits · ⌈d / 128⌉,
    H_kv, B), and (1, H, B) where there is more than one split."""
    s = splits(cfg["seq_len_kv"], cfg["batch"] * cfg["kv_heads"])
    return [s * decode_halves(cfg["head_dim"]), cfg["kv_heads"], cfg["batch"]], \
        [1, cfg["heads"], cfg["batch"]] if s > 1 else None


def check(paths: list[str]) -> int:
    """Print every config whose launches the rule does not give; the count of those."""
    misses = total = 0
    for path in paths:
        with open(path) as f:
            for line in f:
                cfg = json.loads(line)
                if "error" in cfg:
                    print(f"{path}: cuDNN refused {cfg}")
                    misses += 1
                    continue
                decode = [l[1] for l in cfg["launches"] if "fprop" in l[0]]
                reduce = [l[1] for l in cfg["launches"] if "reduction" in l[0]]
                got = (decode[0] if decode else None, reduce[0] if reduce else None)
                total += 1
                if got != expected(cfg):
                    misses += 1
                    print(f"{path}: {cfg['seq_len_kv']} keys, B {cfg['batch']}, H {cfg['heads']} "
                          f"(H_kv {cfg['kv_heads']}), d {cfg['head_dim']}: ran {got}, the rule says {expected(cfg)}")
    print(f"{total - misses} of {total} configs as the rule says")
    return misses


def boundary() -> list[dict]:
    """Where the sweep left the rule open: B · H_kv from 67 to 95 (66 split, 96 did not), at
    N_kv = 16,384 and 1,000, as batches."""
    return [dict(seq_len_kv=n_kv, batch=pairs, heads=1, kv_heads=1, head_dim=64, dtype="fp16")
            for n_kv in (16384, 1000) for pairs in range(67, 96)]


def _kernels(trace: str) -> list[list]:
    """[name, grid, block] of every CUDA kernel in a chrome trace, in launch order."""
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    kernels.sort(key=lambda e: e["ts"])
    return [[e["name"], e["args"].get("grid"), e["args"].get("block")] for e in kernels]


def probe(cfg: dict, torch, F, sdpa_kernel, backend) -> list[list]:
    """The traced forward's kernels of ``cfg``."""
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[cfg["dtype"]]
    b, h, h_kv, d = cfg["batch"], cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    q = torch.randn(b, h, 1, d, device="cuda", dtype=dtype)
    k = torch.randn(b, h_kv, cfg["seq_len_kv"], d, device="cuda", dtype=dtype)
    v = torch.randn_like(k)
    with sdpa_kernel(backend):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=h != h_kv)          # builds the plan
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            F.scaled_dot_product_attention(q, k, v, enable_gqa=h != h_kv)
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        return _kernels(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    parser.add_argument("--check", nargs="+", metavar="JSONL", help="check the rule against recorded sweeps")
    parser.add_argument("--budget-s", type=float, default=150.0)
    parser.add_argument("--set", choices=("sweep", "boundary"), default="sweep")
    args = parser.parse_args()
    if args.check:
        raise SystemExit(1 if check(args.check) else 0)
    if not args.out:
        parser.error("--out DIR is required")
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    os.makedirs(args.out, exist_ok=True)
    start, todo = time.time(), configs() if args.set == "sweep" else boundary()
    with open(os.path.join(args.out, f"{args.set}.jsonl"), "w") as log:
        for k, cfg in enumerate(todo):
            if time.time() - start > args.budget_s:
                print(f"budget spent: {k} of {len(todo)} configs", flush=True)
                break
            try:
                cfg["launches"] = probe(cfg, torch, F, sdpa_kernel, SDPBackend.CUDNN_ATTENTION)
            except Exception as exc:  # noqa: BLE001 - record what cuDNN refused, go on
                cfg["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            log.write(json.dumps(cfg) + "\n")
            log.flush()
    print(f"{len(todo)} configs in {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
