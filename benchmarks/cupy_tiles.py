"""Time iosim's CuPy tensor-core FA2 kernel (``fa2_mma``, fp16) for every tile it takes,
B_r and B_c in MMA_BLOCKS (16 tiles), on benchmarks/triton_tiles.py's 12 shapes (issue 14,
item 3, second half). Run on the device:

    PYTHONPATH=$PWD python3 -u benchmarks/cupy_tiles.py --out $OUT/cupy-tiles

1. compiles the 32 (tile, d) kernels in parallel (CuPy's disk cache keeps them);
2. checks each (tile, d, causal) first on B·H = 2, N = 256 and ragged N = 200 against the
   float64 reference (iosim.gpu.numerics: |O err| <= 1e-2, |L err| <= 1e-3);
3. times every tile on each shape with triton_tiles.py's ``time_config`` (CUDA events, 2
   warm-ups, median and min of >= 10 runs, up to 50 or 0.25 s, a 256 MiB write before every
   run flushing the L2).

Shapes: triton_tiles.SHAPES, with one change fixed before any measurement: where the
work (4·N²·d·B·H, halved when causal) exceeds WORK_CAP, the batch, then the heads, are halved
until it fits (B·H never below 8), so that 16 tiles (the 16×16 tiles are slow) fit one device
call; results.csv records the B and H timed, and ``machine.json`` the original and scaled shapes.

Writes ``results.csv`` (shape, tile, threads, shared bytes, median/min time, error),
``numerics.csv`` and ``machine.json``. A tile that fails is recorded with its error and the
script goes on; ``--budget-s`` (default 120 s) caps the timing: tiles not reached (small tiles
last) are recorded as "skipped: time budget".
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from triton_tiles import CHECK_SHAPES, SHAPES as TRITON_SHAPES, _driver, time_config  # noqa: E402

from iosim.gpu.cupy_kernels import MMA_BLOCKS, launches, make_config  # noqa: E402

WORK_CAP = 1.2e12
FIELDS = ["seq_len", "head_dim", "batch", "heads", "causal", "dtype", "block_q", "block_kv", "threads",
          "shared_bytes", "median_s", "min_s", "runs", "error"]
TILES = [(br, bc) for br in MMA_BLOCKS for bc in MMA_BLOCKS]


def scaled(shape):
    """``shape`` with B, then H, halved until its work is at most WORK_CAP (B·H >= 8)."""
    n, d, b, h, causal = shape
    work = lambda b, h: 4 * n * n * d * b * h / (2 if causal else 1)   # noqa: E731
    while work(b, h) > WORK_CAP and b * h > 8:
        b, h = (b // 2, h) if b > 1 else (b, h // 2)
    return (n, d, b, h, causal)


SHAPES = [scaled(s) for s in TRITON_SHAPES]
#: the prospective check of the measured steps (session 12): triton_tiles.CHECK_SHAPES, scaled
#: by the same rule, timed only after the predictions for them were committed
SHAPE_SETS = {"first": SHAPES, "check": [scaled(s) for s in CHECK_SHAPES]}


def config(n, d, bh, causal, tile):
    return make_config("fa2", seq_len=n, head_dim=d, heads_total=bh, dtype="fp16", causal=causal,
                       block_q=tile[0], block_kv=tile[1], impl="mma")


class _Event:
    """A CuPy event with the torch.cuda.Event calls ``time_config`` makes."""

    def __init__(self, enable_timing=True):
        import cupy
        self.e = cupy.cuda.Event()

    def record(self):
        self.e.record()

    def synchronize(self):
        self.e.synchronize()

    def elapsed_time(self, end):
        import cupy
        return cupy.cuda.get_elapsed_time(self.e, end.e)


class _Flush:
    """The 256 MiB buffer ``time_config`` writes (``zero_()``) before every run."""

    def __init__(self):
        import cupy
        self.buf = cupy.empty(256 * 1024 * 1024, dtype=cupy.uint8)

    def zero_(self):
        self.buf.fill(0)


class _Shim:
    """The ``torch`` argument of ``time_config``: ``torch.cuda.Event``, on CuPy."""

    class cuda:  # noqa: N801
        Event = _Event


def _error(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def check_numerics(out: str) -> dict:
    """(tile, d, causal) -> '' or why the tile failed the float64 check."""
    import cupy
    from iosim.gpu import numerics
    from iosim.gpu.cupy_kernels import Attention
    checked, rows = {}, []
    for tile in TILES:
        for d in (64, 128):
            for causal in (False, True):
                e_o = e_l = float("nan")
                text = ""
                try:
                    for n in (256, 200):
                        qh, kh, vh = numerics.make_inputs(2, n, d, "fp16", 0)
                        att = Attention(config(n, d, 2, causal, tile), *(cupy.asarray(x) for x in (qh, kh, vh)),
                                        count=False)
                        att.poison()
                        att.launch()
                        rows_ = numerics.check_rows(2, n, 1 << 27, 0)
                        o, l_ = numerics.max_errors(qh, kh, vh, att.out["O"].get(), att.out["L"].get(), causal, rows_)
                        e_o, e_l = max(o, e_o if e_o == e_o else 0), max(l_, e_l if e_l == e_l else 0)
                    if not (e_o <= numerics.OUTPUT_TOLERANCE["fp16"] and e_l <= numerics.LSE_TOLERANCE):
                        text = f"numerics: max |O err| {e_o:.2e}, max |L err| {e_l:.2e}"
                except Exception as exc:  # noqa: BLE001 - record and go on
                    text = _error(exc)
                checked[(tile, d, causal)] = text
                rows.append([*tile, d, causal, e_o, e_l, text])
    with open(os.path.join(out, "numerics.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["block_q", "block_kv", "head_dim", "causal", "max_err_o", "max_err_l", "error"])
        w.writerows(rows)
    print(f"numerics: {len(rows)} checks, {sum(1 for r in rows if not r[-1])} pass", flush=True)
    for r in [r for r in rows if r[-1]][:10]:
        print("  ", r, flush=True)
    return checked


def time_all(checked: dict, args, shapes: list) -> None:
    import cupy
    from iosim.gpu.cupy_kernels import Attention
    flush = _Flush()
    deadline = time.perf_counter() + args.budget_s
    order = sorted(TILES, key=lambda t: -(t[0] * t[1]))   # large tiles first: small ones are slowest
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for si, (n, d, b, h, causal) in enumerate(shapes):
            shape_deadline = time.perf_counter() + (deadline - time.perf_counter()) / (len(shapes) - si)
            q, k, v = (cupy.random.standard_normal((b * h, n, d), dtype=cupy.float32).astype(cupy.float16)
                       for _ in range(3))
            done = 0
            for tile in order:
                ln = launches(config(n, d, b * h, causal, tile))[0]
                row = [n, d, b, h, causal, "fp16", *tile, ln.block, ln.smem_bytes, "", "", 0, ""]
                err = checked.get((tile, d, causal), "not checked")
                if not err and time.perf_counter() > shape_deadline:
                    err = "skipped: time budget"
                if not err:
                    try:
                        att = Attention(config(n, d, b * h, causal, tile), q, k, v, count=False)
                        med, low, runs = time_config(att.launch, flush, _Shim)
                        row[10:13] = [f"{med:.9f}", f"{low:.9f}", runs]
                        done += 1
                    except Exception as exc:  # noqa: BLE001 - record and go on
                        err = _error(exc)
                        traceback.print_exc(limit=1)
                row[13] = err
                w.writerow(row)
            f.flush()
            del q, k, v
            cupy.get_default_memory_pool().free_all_blocks()
            print(f"shape {si + 1}/{len(shapes)} N={n} d={d} B={b} H={h} causal={causal}: {done} timed, "
                  f"{time.perf_counter() - deadline + args.budget_s:.0f} s so far", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=120.0, help="seconds for the timing phase")
    ap.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 1), help="parallel compiles")
    ap.add_argument("--shapes", choices=sorted(SHAPE_SETS), default="first",
                    help="first: the 12 shapes of 2026-12-01; check: the prospective check of the measured steps")
    args = ap.parse_args()
    shapes = SHAPE_SETS[args.shapes]
    if not args.budget_s > 0 or args.jobs < 1:
        print("error: --budget-s must be > 0 and --jobs >= 1", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    from iosim.gpu.cupy_kernels import warm_configs
    from iosim.gpu.runner import device_info
    t0 = time.perf_counter()
    machine = {**device_info(), "driver": _driver(), "date": time.strftime("%Y-%m-%d %H:%M:%S"),
               "kernel": "fa2_mma (impl mma, fp16)", "tiles": TILES, "triton_shapes": TRITON_SHAPES,
               "shapes": shapes, "work_cap": WORK_CAP, "l2_flush": "256 MiB fill(0) before each run",
               "timing": "CUDA events, 2 warm-ups, median of >= 10 runs (up to 50 or 0.25 s)"}
    with open(os.path.join(args.out, "machine.json"), "w") as f:
        json.dump(machine, f, indent=2)
    print(json.dumps(machine), flush=True)
    warm_configs([config(256, d, 2, False, t) for t in TILES for d in (64, 128)], counts=(False,), workers=args.jobs)
    print(f"compiled {2 * len(TILES)} kernels in {time.perf_counter() - t0:.0f} s", flush=True)
    checked = check_numerics(args.out)
    time_all(checked, args, shapes)
    print(f"total {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
