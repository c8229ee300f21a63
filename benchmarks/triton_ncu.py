"""iosim's Triton FA2 forward kernel under Nsight Compute, beside the ``triton-fa2`` preset
(issue 14, item 5: ``iosim validate --vendor triton``).

Device:  PYTHONPATH=$PWD python3 benchmarks/triton_ncu.py --out $OUT/triton-ncu
  For each configuration of GRID (shapes × knobs, fixed before measuring; those the preset
  says Triton cannot launch on the H200 are left out and listed), the marker kernel, one
  launch outside the profiler range (Triton compiles), one inside, under ``ncu --clock-control
  none --profile-from-start off``, in chunks of ``--chunk`` configurations (a chunk that
  fails loses its configurations only). Writes DIR/specs.json (in launch order),
  DIR/ncu_<k>.csv (raw) and DIR/env.txt.
Here:    python benchmarks/triton_ncu.py --compare DIR [--markdown]
  Each launch beside the preset (iosim.gpu.triton_ncu.compare): loads, stores, DRAM, time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from iosim import Problem, load_profile  # noqa: E402
from iosim.kernels.triton_preset import TritonConfig, triton_tile, unlaunchable  # noqa: E402

#: (seq_len, head_dim, batch, heads, causal, dtype): ragged and aligned lengths, both head
#: dims the kernel was measured at, causal and not, fp16 and bf16
SHAPES = [(1000, 64, 2, 8, False, "fp16"), (2500, 128, 1, 8, True, "fp16"), (4096, 128, 2, 16, False, "fp16"),
          (2048, 64, 4, 8, True, "bf16"), (777, 128, 1, 4, False, "bf16")]
#: (BLOCK_M, BLOCK_N, num_warps, num_stages): one and several pipeline stages, narrow and wide tiles
KNOBS = [(64, 32, 4, 1), (128, 64, 4, 2), (128, 128, 8, 3), (64, 64, 4, 3), (128, 32, 8, 2)]


def grid(profile) -> tuple[list[dict], list[str]]:
    """(the specs to measure, the configurations left out and why)."""
    from iosim.gpu.triton_ncu import spec_of

    specs, out = [], []
    for (n, d, b, h, causal, dtype), knobs in itertools.product(SHAPES, KNOBS):
        cfg = TritonConfig(*knobs)
        problem = Problem(seq_len=n, head_dim=d, batch=b, heads=h, causal=causal, dtype=dtype)
        reasons = unlaunchable(cfg, triton_tile(cfg, d, dtype, profile), profile)
        if reasons:
            out.append(f"{cfg.label()} d={d} {dtype}: {'; '.join(reasons)}")
        else:
            specs.append(spec_of(problem, cfg))
    return specs, out


def run_device(out: str, chunk: int) -> int:
    from iosim.gpu.triton_ncu import profile_raw

    os.makedirs(out, exist_ok=True)
    specs, left = grid(load_profile("h200"))
    with open(os.path.join(out, "specs.json"), "w") as f:
        json.dump({"specs": specs, "left_out": left, "chunk": chunk}, f, indent=1)
    with open(os.path.join(out, "env.txt"), "w") as f:
        f.write(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\npython: {platform.python_version()}\n")
        for cmd in (["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv"], ["ncu", "--version"],
                    [sys.executable, "-c", "import torch, triton; print('torch', torch.__version__, 'cuda', "
                     "torch.version.cuda, 'triton', triton.__version__)"]):
            f.write(subprocess.run(cmd, capture_output=True, text=True).stdout)
    for k in range(0, len(specs), chunk):
        start = time.time()
        try:
            log = profile_raw(specs[k:k + chunk])
        except Exception as exc:  # noqa: BLE001 — record and go on
            log = ""
            print(f"chunk {k // chunk}: {exc}", flush=True)
        with open(os.path.join(out, f"ncu_{k // chunk}.csv"), "w") as f:
            f.write(log)
        print(f"chunk {k // chunk}: {len(specs[k:k + chunk])} configs, {time.time() - start:.0f} s", flush=True)
    return 0


def compare_dir(path: str, markdown: bool) -> int:
    from iosim.gpu.triton_ncu import compare, launches_of

    meta = json.load(open(os.path.join(path, "specs.json")))
    specs, chunk, profile = meta["specs"], meta["chunk"], load_profile("h200")
    rows = []
    for k in range(0, len(specs), chunk):
        file = os.path.join(path, f"ncu_{k // chunk}.csv")
        text = open(file).read() if os.path.exists(file) else ""
        part = specs[k:k + chunk]
        groups = launches_of(text, len(part)) if text else [None] * len(part)
        for spec, launches in zip(part, groups):
            rows.append((spec, None if launches is None else compare(_problem(spec), _config(spec), launches,
                                                                     profile)))
    _print(rows, markdown)
    return 0 if all(r is not None and r["within_target"]["loads"] and r["within_target"]["stores"]
                    for _, r in rows) else 1


def _problem(spec: dict) -> Problem:
    return Problem(seq_len=spec["seq_len"], head_dim=spec["head_dim"], batch=spec["batch"], heads=spec["heads"],
                   causal=spec["causal"], dtype=spec["dtype"])


def _config(spec: dict) -> TritonConfig:
    return TritonConfig(spec["block_m"], spec["block_n"], spec["num_warps"], spec["num_stages"])


def _print(rows, markdown: bool) -> None:
    sep = " | " if markdown else "  "
    head = ["N", "d", "B×H", "causal", "dtype", "config", "loads iosim", "loads ncu", "stores", "DRAM ncu/iosim",
            "time ncu", "time iosim"]
    print(("| " if markdown else "") + sep.join(head) + (" |" if markdown else ""))
    if markdown:
        print("|" + "---|" * len(head))
    for spec, r in rows:
        cells = [spec["seq_len"], spec["head_dim"], spec["batch"] * spec["heads"], spec["causal"], spec["dtype"],
                 _config(spec).label()]
        if r is None:
            cells += ["not measured"] + [""] * 5
        else:
            ld, st = r["checks"]
            dram = r["predicted"]["dram_read"]
            cells += [f"{ld['predicted']:,}", f"{ld['measured']:,}" + ("" if ld["ok"] else " *"),
                      "exact" if st["ok"] else f"{st['measured']:,} vs {st['predicted']:,} *",
                      "-" if not dram else f"{r['measured']['dram_read'] / dram:.3f}",
                      f"{r['measured']['time_s'] * 1e6:.1f} µs", f"{r['predicted']['time_s'] * 1e6:.1f} µs"]
        print(("| " if markdown else "") + sep.join(map(str, cells)) + (" |" if markdown else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--chunk", type=int, default=9)
    ap.add_argument("--compare")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    if args.compare:
        return compare_dir(args.compare, args.markdown)
    if not args.out:
        ap.error("give --out DIR (on the device) or --compare DIR")
    return run_device(args.out, args.chunk)


if __name__ == "__main__":
    sys.exit(main())
