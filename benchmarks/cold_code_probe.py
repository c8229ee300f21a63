"""Is a small kernel's fixed time under Nsight Compute its code, fetched from DRAM? (issue 14,
item 2: the element-wise kernels' latency). Run on the device:

    PYTHONPATH=$PWD python3 benchmarks/cold_code_probe.py --out $OUT/cold

Why. flash-attn 2's element-wise kernels take a few µs more than the model's floor at every
size (convert_dq about 5.5 µs at a decode where the floor is 2.2 µs), and at a decode their
DRAM reads exceed their data by a fixed amount a kernel (about 8–9 KB for dot_do_o and
convert_dq, 23 KB for the split-KV combine): about the size of their code. ncu flushes the
caches before every kernel it profiles (``--cache-control all``, its default), so a
kernel's instructions come from DRAM, a chain of misses before its first loads.

What it measures, each under ``ncu --clock-control none`` with ``--cache-control all`` and
with ``--cache-control none`` (CSV per setting):

* ``sdpa``: PyTorch's flash-attn 2 forward and backward on a few small shapes (decode, and
  N = 2,048), every kernel's ``gpu__time_duration`` and DRAM bytes;
* ``code``: CuPy kernels of one thread block whose straight-line code is 1–64 KiB of
  independent FMAs, and the empty kernel: the time a cold instruction stream costs by size.

Writes DIR/{all,none}_{sdpa,code}.csv, DIR/machine.json; ``--summary DIR`` prints the table.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SHAPES = [  # (n_q, n_kv, d, batch, heads, kv_heads, causal): decodes and one short launch
    (1, 4096, 64, 1, 8, 8, False), (1, 4096, 128, 1, 8, 8, False), (1, 4096, 128, 4, 16, 16, False),
    (2048, 2048, 128, 1, 1, 1, False), (2048, 2048, 64, 1, 16, 16, False), (7, 777, 128, 1, 8, 8, False),
]
#: FMAs of straight-line code per kernel (about 8 bytes of SASS each with its operands)
CODE_FMAS = (0, 128, 512, 2048, 8192)
REPEATS = 5
METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "sm__cycles_active.max", "gpc__cycles_elapsed.max",
           "smsp__inst_executed.sum"]


def code_source(n: int) -> str:
    body = "".join(f"    x = fmaf(x, {1.0 + i * 1e-7:.9f}f, y);\n" for i in range(n))
    return (f'extern "C" __global__ void code_{n}(float* out, float y) {{\n    float x = threadIdx.x;\n'
            f"{body}    out[threadIdx.x] = x;\n}}\n")


def run_code() -> None:
    import cupy as cp
    out = cp.zeros(128, dtype=cp.float32)
    kernels = [cp.RawModule(code=code_source(n)).get_function(f"code_{n}") for n in CODE_FMAS]
    for _ in range(REPEATS):
        for k in kernels:
            k((1,), (128,), (out, cp.float32(1.0)))
    cp.cuda.Device().synchronize()


def run_sdpa() -> None:
    import torch
    from iosim.gpu.sdpa_target import run
    torch.manual_seed(0)
    for n_q, n_kv, d, b, h, h_kv, causal in SHAPES:
        cfg = {"seq_len": n_q, "seq_len_q": n_q, "seq_len_kv": n_kv, "head_dim": d, "batch": b, "heads": h,
               "causal": causal}
        if h_kv != h:
            cfg["kv_heads"] = h_kv
        if n_q == n_kv:
            del cfg["seq_len_q"], cfg["seq_len_kv"]
        for _ in range(2):
            run(cfg)


def drive(out: str) -> None:
    from iosim.gpu.ncu import find_ncu
    ncu = find_ncu()
    os.makedirs(out, exist_ok=True)
    for control in ("all", "none"):
        for what in ("sdpa", "code"):
            cmd = [ncu, "--clock-control", "none", "--cache-control", control, "--csv", "--print-units", "base",
                   "--metrics", ",".join(METRICS), sys.executable, __file__, "--target", what]
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
            with open(os.path.join(out, f"{control}_{what}.csv"), "w") as f:
                f.write(res.stdout + ("\n#STDERR\n" + res.stderr[-3000:] if res.returncode else ""))
            print(control, what, res.returncode, res.stdout.count("\n"), "lines", flush=True)


def rows(path: str) -> list[dict]:
    text = open(path).read()
    start = text.find('"ID"')
    return list(csv.DictReader(io.StringIO(text[start:]))) if start >= 0 else []


def short_name(kernel: str) -> str:
    for key in ("convert_dq", "dot_do_o", "splitkv_combine", "splitkv", "dq_dk_dv", "flash_fwd_kernel", "code_",
                "empty"):
        if key in kernel:
            return key if key != "code_" else kernel.split("(")[0].split()[-1]
    return kernel[:40]


def summary(out: str) -> None:
    """Per kernel (in launch order, by name and the launch's grid): median over its launches of
    time and DRAM reads with the caches flushed and not."""
    table = {}
    for control in ("all", "none"):
        for what in ("sdpa", "code"):
            per = {}
            for r in rows(os.path.join(out, f"{control}_{what}.csv")):
                key = (what, short_name(r["Kernel Name"]), r["Grid Size"], r["Block Size"])
                per.setdefault(key, {}).setdefault(r["ID"], {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
            for key, launches in per.items():
                for metric in ("gpu__time_duration.sum", "dram__bytes_read.sum"):
                    vals = [m[metric] for m in launches.values() if metric in m]
                    if vals:
                        table.setdefault(key, {})[(control, metric)] = statistics.median(vals)
    print("| kernel | grid | time, flushed (ns) | time, warm (ns) | difference | DRAM read flushed | DRAM read warm |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for key, v in table.items():
        t_all, t_none = v.get(("all", "gpu__time_duration.sum")), v.get(("none", "gpu__time_duration.sum"))
        d_all, d_none = v.get(("all", "dram__bytes_read.sum")), v.get(("none", "dram__bytes_read.sum"))
        diff = "" if t_all is None or t_none is None else f"{t_all - t_none:,.0f}"
        print(f"| {key[1]} | {key[2]} | {t_all or 0:,.0f} | {t_none or 0:,.0f} | {diff} | {d_all or 0:,.0f} | "
              f"{d_none or 0:,.0f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--target", choices=("sdpa", "code"))
    ap.add_argument("--summary")
    args = ap.parse_args()
    if args.target == "sdpa":
        run_sdpa()
    elif args.target == "code":
        run_code()
    elif args.summary:
        summary(args.summary)
    else:
        drive(args.out)
        with open(os.path.join(args.out, "machine.json"), "w") as f:
            json.dump({"shapes": SHAPES, "code_fmas": CODE_FMAS, "repeats": REPEATS, "metrics": METRICS}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
