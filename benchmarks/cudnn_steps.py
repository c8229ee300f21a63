"""Time cuDNN's fused attention kernels (PyTorch's ``SDPBackend.CUDNN_ATTENTION``) on launches made for measuring
their steps, the data a kernel time model of the ``cudnn`` preset would stand on (issue 14, items 2 and 4;
docs/validation/2026-12-07-s58-check.md, "Prepared in session 58"). Run on the device:

    PYTHONPATH=$PWD python3 -u benchmarks/cudnn_steps.py --out $OUT/cudnn-steps

cuDNN's Hopper fprop and bprop are persistent: min(tiles, #SMs) thread blocks take tiles from an atomic counter
(``iosim.kernels.cudnn_preset``). A forward tile is 128 query rows of one head, walking its visible key blocks of
128; a backward tile is 128 keys of one head, walking its query blocks of 64. Lengths N1 = 33·128 = 4,224 and
N2 = 2·N1 give 33 and 66 tiles a head, none ragged, so B·H = 4·w makes exactly 132·w tiles:

* dense, N1 at w = 1, 2 and 8, N2 at w = 2: a tile's step (the slope in N at two waves), what a tile costs besides
  its steps, and the launch's fill (the intercepts over the waves);
* causal, the same launches: how the scheduler's order and the masked diagonal steps show in the time.

Each config runs forward and backward ``--repeats`` times under PyTorch's profiler (the L2 zeroed over before each
run), and every kernel's duration is read from the profiler's trace. Writes ``steps.csv`` (one row per config and
kernel: d, dtype, causal, N, B·H, tiles, waves, kernel, grid, block, median/min µs, runs) and ``machine.json``
(GPU, driver, PyTorch, CUDA, cuDNN). None of these shapes is one of the committed cuDNN runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import tempfile
import time

N1 = 33 * 128
#: (head dim, dtype, causal): every kernel head dim of the Hopper kernels, fp16; bf16 at 128
CONFIGS = [(d, "float16", causal) for d in (64, 128, 192, 256) for causal in (False, True)] + \
    [(128, "bfloat16", False), (128, "bfloat16", True)]
#: (N, waves): B·H = 4 · waves heads at N1 = 33 tiles a head, 2 · waves at N2
LAUNCHES = [(N1, 1), (N1, 2), (N1, 8), (2 * N1, 2)]
FIELDS = ["d", "dtype", "causal", "n", "bh", "tiles", "waves", "kernel", "grid", "block", "median_us", "min_us",
          "runs"]


def launches() -> list[tuple]:
    """(d, dtype, causal, N, B·H, waves) of every timed launch, in the order they run."""
    return [(d, dt, causal, n, 4 * w * N1 // n, w) for d, dt, causal in CONFIGS for n, w in LAUNCHES]


def kernel_times(trace_path: str) -> dict:
    """{(kernel name, grid, block): [duration µs, ...]} of every GPU kernel in a profiler's Chrome trace."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    out: dict = {}
    for e in events:
        if e.get("cat") == "kernel":
            args = e.get("args", {})
            key = (e["name"], "x".join(map(str, args.get("grid", []))), "x".join(map(str, args.get("block", []))))
            out.setdefault(key, []).append(float(e["dur"]))
    return out


def time_launch(torch, flush, launch: tuple, repeats: int) -> dict:
    """Every kernel's durations over ``repeats`` forward and backward runs of one launch."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa
    from torch.profiler import ProfilerActivity, profile
    d, dtype, causal, n, bh, _ = launch
    g = torch.Generator(device="cuda").manual_seed(3)
    q, k, v = (torch.randn(1, bh, n, d, device="cuda", dtype=getattr(torch, dtype), generator=g).requires_grad_()
               for _ in range(3))
    grad = torch.randn(1, bh, n, d, device="cuda", dtype=getattr(torch, dtype), generator=g)

    def run():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            out = sdpa(q, k, v, is_causal=causal)
        out.backward(grad)
    for _ in range(2):
        run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(repeats):
            flush.zero_()
            run()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        return kernel_times(path)


def write_machine(out: str, torch) -> None:
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    info = {"gpu": smi, "sms": torch.cuda.get_device_properties(0).multi_processor_count, "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with open(os.path.join(out, "machine.json"), "w") as f:
        json.dump(info, f, indent=1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="the folder to write (required but with --list)")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--list", action="store_true", help="print the launches and stop (no GPU needed)")
    a = ap.parse_args()
    if a.list:
        for launch in launches():
            print(*launch)
        return 0
    if not a.out:
        ap.error("--out is required")
    import torch
    os.makedirs(a.out, exist_ok=True)
    write_machine(a.out, torch)
    flush = torch.empty(256 * 2 ** 20, dtype=torch.uint8, device="cuda")
    t0 = time.time()
    with open(os.path.join(a.out, "steps.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for launch in launches():
            if time.time() - t0 > a.budget_s:
                print("budget spent at", launch, flush=True)
                break
            d, dtype, causal, n, bh, waves = launch
            try:
                times = time_launch(torch, flush, launch, a.repeats)
            except Exception as exc:  # noqa: BLE001 - record and go on
                w.writerow([d, dtype, causal, n, bh, bh * n // 128, waves, f"error: {type(exc).__name__}: "
                            f"{str(exc)[:200]}", "", "", "", "", 0])
                f.flush()
                continue
            for (name, grid, block), durations in sorted(times.items()):
                w.writerow([d, dtype, causal, n, bh, bh * n // 128, waves, name, grid, block,
                            f"{statistics.median(durations):.3f}", f"{min(durations):.3f}", len(durations)])
            f.flush()
            print(f"{launch}: {len(times)} kernels, {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
