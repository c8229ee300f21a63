"""cuDNN's persistent kernels' steps from ``benchmarks/cudnn_steps.py``'s timings (``steps.csv``): per kernel (fprop,
bprop), head dim and dtype, a tile's step, what a tile costs besides its steps, and the launch's fill, from the dense
launches; the causal step from the causal launch at N2; and how the model of them gives back every timed launch.

A persistent thread block runs its tiles one after another; tiles go, in the scheduler's order, to the block that
is free first (the least-loaded SM: :func:`iosim.models.sm_schedule.busiest_sm`). Above d = 128 the bprop gives a
tile to two thread blocks, each walking all of it (``iosim.kernels.cudnn_preset``): there a unit is a tile's half,
u = 2 units a tile, else u = 1. A unit costs ``tile_s + steps · step_s``; a launch ``fill_s`` + its busiest SM.
Dense launches of w whole waves at N1 and N2 (u · w units an SM):

    step_s = (T(N2, 2) - T(N1, 2)) / (2u · (steps(N2) - steps(N1)))
    tile_s = (T(N1, 8) - T(N1, 2)) / 6u - steps(N1) · step_s,   fill_s = T(N1, 2) - 2u · (tile_s + steps(N1) · step_s)

and T(N1, 1) is predicted, not used. A causal tile takes ``tile_s + steps · causal_step_s``; causal_step_s is the one
that gives T(N2, 2) of the causal launch with the tiles in launch order; the causal N1 launches are predicted.

    python benchmarks/cudnn_steps_table.py RAW/steps.csv [--json OUT] [--package iosim/kernels/cudnn_steps_h200.json]
    python benchmarks/cudnn_steps_table.py --committed      # the committed H200 runs, per busiest SM's step

``--committed``: the committed H200 runs of cuDNN (:data:`COMMITTED`), each fprop and bprop launch at N_q = N_kv, a
multiple of 128 and at least 2,048, its time over its busiest SM's steps as the model above schedules them (no
figure fitted): if a step has one cost whatever the launch, these agree, up to what ``tile_s`` adds to short tiles.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from iosim.kernels.cudnn_steps import CudnnStep  # noqa: E402
from iosim.models import cudnn_time  # noqa: E402
from iosim.models.sm_schedule import busiest_sm  # noqa: E402

#: the committed H200 runs of cuDNN's Hopper kernels (docs/validation)
COMMITTED = ("2026-12-01-cudnn", "2026-12-02-cudnn-repeat", "2026-12-04-s29-cudnn", "2026-12-04-s29-cudnn-wide")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N1 = 33 * 128
SMS = 132
KERNELS = {"fprop": "flash_fprop", "bprop": "flash_bprop"}


def tile_steps(kernel: str, n: int, causal: bool) -> list[int]:
    """Each tile's steps of one head, in launch order: fprop a tile of 128 query rows over key blocks of 128
    (causal: those up to its diagonal), bprop a tile of 128 keys over query blocks of 64 (causal: from its
    diagonal on)."""
    tiles = n // 128
    if kernel == "fprop":
        return [m + 1 if causal else tiles for m in range(tiles)]
    return [2 * (tiles - j) if causal else n // 64 for j in range(tiles)]


def units(kernel: str, d: int) -> int:
    """Thread blocks a tile: two for the bprop above d = 128."""
    return 2 if kernel == "bprop" and d > 128 else 1


def launch_units(kernel: str, d: int, n: int, causal: bool) -> list[tuple[int, int]]:
    """(steps, units) of each tile of one head, in launch order."""
    return [(s, units(kernel, d)) for s in tile_steps(kernel, n, causal)]


def busiest(kernel: str, d: int, n: int, bh: int, causal: bool) -> float:
    """The busiest SM's steps, the units of each of ``bh`` heads handed in launch order to the least-loaded SM."""
    return busiest_sm(launch_units(kernel, d, n, causal), SMS, bh)


def launch_s(fit: dict, kernel: str, d: int, n: int, bh: int, causal: bool) -> float:
    """The model's seconds of one launch: fill plus the busiest SM's units, each as iosim's model times it
    (:func:`iosim.models.cudnn_time.busiest`)."""
    step = CudnnStep(fit["step_s"], fit["tile_s"], fit["fill_s"], fit.get("causal_step_s"), source="")
    return fit["fill_s"] + cudnn_time.busiest(step, launch_units(kernel, d, n, causal), bh, SMS, causal)


def kernel_of(name: str) -> str | None:
    """"fprop" or "bprop" for cuDNN's Hopper attention kernels' names, else None."""
    return next((k for k, key in KERNELS.items() if key in name), None)


def read(path: str) -> dict:
    """{(kernel, d, dtype, causal, n, bh): median seconds} of the fprop and bprop rows (a tile split over two thread
    blocks above d = 128 is the same launch). Each launch has at most one of each, on a persistent grid of SMS
    thread blocks (else SystemExit: the model's premise does not hold there)."""
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            kernel = kernel_of(r["kernel"])
            if kernel and r["median_us"]:
                key = kernel, int(r["d"]), r["dtype"], r["causal"] == "True", int(r["n"]), int(r["bh"])
                if key in out or r["grid"] != f"{SMS}x1x1":
                    raise SystemExit(f"{path}: {key}: a second {kernel} row, or its grid {r['grid']} is not "
                                     f"{SMS} persistent thread blocks")
                out[key] = float(r["median_us"]) * 1e-6
    return out


def fit_dense(t: dict, kernel: str, d: int, dtype: str) -> dict | None:
    """step_s, tile_s, fill_s from the dense launches (module docstring); None where one is missing."""
    keys = [(kernel, d, dtype, False, n, bh) for n, bh in ((N1, 8), (2 * N1, 4), (N1, 32))]
    if not all(k in t for k in keys):
        return None
    t2, t2n, t8 = (t[k] for k in keys)
    s1, s2, u = tile_steps(kernel, N1, False)[0], tile_steps(kernel, 2 * N1, False)[0], units(kernel, d)
    step = (t2n - t2) / (2 * u * (s2 - s1))
    tile = (t8 - t2) / (6 * u) - s1 * step
    return {"step_s": step, "tile_s": tile, "fill_s": t2 - 2 * u * (tile + s1 * step)}


def fit_causal(t: dict, fit: dict, kernel: str, d: int, dtype: str) -> float | None:
    """The causal step that gives the causal launch at N2 (bisection: the launch's time rises with the step)."""
    key = (kernel, d, dtype, True, 2 * N1, 4)
    if key not in t:
        return None
    lo, hi = 0.0, 4 * fit["step_s"]
    at = (lambda step: launch_s({**fit, "causal_step_s": step}, kernel, d, 2 * N1, 4, True))   # noqa: E731
    if not at(lo) <= t[key] <= at(hi):
        print(f"{kernel} d = {d} {dtype}: no causal step in 0-4 dense steps gives the causal launch", file=sys.stderr)
        return None
    for _ in range(60):
        mid = (lo + hi) / 2
        if at(mid) < t[key]:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def table(t: dict) -> list[dict]:
    """One entry per (kernel, d, dtype): its fit and each timed launch's measured and model seconds."""
    out = []
    for kernel, d, dtype in sorted({k[:3] for k in t}):
        fit = fit_dense(t, kernel, d, dtype)
        if fit is None:
            print(f"{kernel} d = {d} {dtype}: a dense launch is missing, no fit", file=sys.stderr)
            continue
        fit["causal_step_s"] = fit_causal(t, fit, kernel, d, dtype)
        rows = [{"causal": c, "n": n, "bh": bh, "measured_s": s,
                 "model_s": launch_s(fit, kernel, d, n, bh, c) if not c or fit["causal_step_s"] is not None else None}
                for (k, dd, dt, c, n, bh), s in sorted(t.items()) if (k, dd, dt) == (kernel, d, dtype)]
        out.append({"kernel": kernel, "d": d, "dtype": dtype, **fit, "launches": rows})
    return out


def markdown(entries: list[dict]) -> str:
    lines = ["| kernel | d | dtype | step µs | causal step µs | tile µs | fill µs | launches: measured / model µs |",
             "|---|---:|---|---:|---:|---:|---:|---|"]
    us = (lambda s: "-" if s is None else f"{s * 1e6:.3f}")
    for e in entries:
        runs = "; ".join(f"{'c ' if r['causal'] else ''}{r['n']}×{r['bh']}: {r['measured_s'] * 1e6:.1f} / "
                         f"{us(r['model_s'])}" for r in e["launches"])
        lines.append(f"| {e['kernel']} | {e['d']} | {e['dtype']} | {us(e['step_s'])} | {us(e['causal_step_s'])} | "
                     f"{us(e['tile_s'])} | {us(e['fill_s'])} | {runs} |")
    return "\n".join(lines)


#: the GPU names nvidia-smi gives -> the profiles a table of that GPU serves
PROFILES = {"NVIDIA H200": ["h200"], "NVIDIA H100 80GB HBM3": ["h100-sxm"]}
DTYPES = {"float16": "fp16", "bfloat16": "bf16"}


def package(entries: list[dict], machine: dict, source: str) -> dict:
    """The table :mod:`iosim.kernels.cudnn_steps` reads: {"kernel,kernel head dim,dtype": its four figures}, with
    the GPU, the profiles it serves (SystemExit for a GPU of no known profile), the date and the versions."""
    gpu, driver = (x.strip() for x in machine["gpu"].splitlines()[0].split(",")[:2])    # the first GPU's line
    if gpu not in PROFILES or machine.get("sms") != SMS:
        raise SystemExit(f"{gpu} ({machine.get('sms')} SMs): no profile is known to be this GPU")
    figures = ("step_s", "tile_s", "fill_s", "causal_step_s")
    negative = [f"{e['kernel']} d = {e['d']} {k}" for e in entries for k in figures[:3] if e[k] < 0]
    if negative:          # a fit that gives back no physical cost: the launches did not follow the model
        raise SystemExit(f"negative figures, no table written: {', '.join(negative)}")
    return {"gpu": gpu, "profiles": PROFILES[gpu], "date": machine["when"][:10],
            "versions": f"driver {driver}, PyTorch {machine['torch']}, "
                        f"CUDA {machine['cuda']}, cuDNN {machine['cudnn']}",
            "source": source, "entries": {f"{e['kernel']},{e['d']},{DTYPES[e['dtype']]}": {k: e[k] for k in figures}
                                          for e in entries}}


def committed(least: int = 2048) -> dict:
    """{(kernel, kernel head dim): [(µs per busiest SM's step, d, dtype, N, B·H, H_kv, causal), ...]} of the committed
    runs' launches (module docstring), one a distinct shape (the median over its repeats)."""
    from cudnn_compare import records
    from iosim.kernels.cudnn_preset import kernel_head_dim
    shapes: dict = {}
    for run in COMMITTED:
        for rec in records(os.path.join(ROOT, "docs", "validation", run)):
            c = rec["config"]
            n, causal, bh = c["seq_len"], bool(c.get("causal")), c["batch"] * c["heads"]
            if c.get("seq_len_q", n) != c.get("seq_len_kv", n) or n % 128 or n < least:
                continue
            for row in rec["rows"]:
                kernel = kernel_of(row["kernel"])
                if kernel:
                    shape = (c["head_dim"], c.get("dtype", "fp16"), n, bh, c.get("kv_heads", c["heads"]), causal)
                    shapes.setdefault((kernel, kernel_head_dim(c["head_dim"])), {}).setdefault(shape, []).append(
                        row["time_us"] / busiest(kernel, c["head_dim"], n, bh, causal))
    return {key: [(statistics.median(us), *shape) for shape, us in sorted(by.items())] for key, by in shapes.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="?")
    ap.add_argument("--json")
    ap.add_argument("--package", help="write the table iosim ships (the csv's folder has machine.json)")
    ap.add_argument("--committed", action="store_true")
    a = ap.parse_args(argv)
    if a.committed or not a.csv:
        for (kernel, kd), rows in sorted(committed().items()):
            us = [r[0] for r in rows]
            print(f"{kernel} {kd}: {len(rows)} shapes, {min(us):.3f}-{max(us):.3f} µs a step")
        return 0
    entries = table(read(a.csv))
    print(markdown(entries))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(entries, f, indent=1)
    if a.package:
        with open(os.path.join(os.path.dirname(a.csv), "machine.json")) as f:
            machine = json.load(f)
        with open(a.package, "w") as f:
            json.dump(package(entries, machine, os.path.relpath(a.csv, ROOT)), f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
