"""Measure each configuration's step on the compiled Triton FA2 forward kernel (issue 14, item 3;
docs/triton.md, "Measured steps"). Run on the device:

    PYTHONPATH=$PWD python3 -u benchmarks/triton_steps.py --out $OUT/steps

A *step* is one key block of every block resident on an SM: with ``k`` blocks an SM (CUDA's
own occupancy for the compiled kernel, ``cuOccupancyMaxActiveBlocksPerMultiprocessor``),
a launch of exactly ``132·k·w`` blocks runs ``w`` full waves. Two sequence lengths with the
same waves, N1 = 33·max(128, BLOCK_M) and N2 = 2·N1 (4,224 and 8,448 up to BLOCK_M = 128, so
that BLOCK_M and BLOCK_N divide them and no block is ragged; 8,448 and 16,896 for 256 rows:
the runs of 2026-12-02 took 4,224 for those too, 16.5 blocks a head, so their launches were
not whole waves and ``steps_table.py`` leaves them out), give the step as the slope

    R = (T(N2) - T(N1)) / (w · (N2 - N1) / BLOCK_N)

and the launch's fill and drain (the first Q loads, the last O stores) as the intercept;
four times the waves at N1 give what a wave costs besides its steps once waves follow each
other. The same two lengths with exactly 132 blocks (one an SM where CUDA spreads them)
give the lone step. Causal kernels (their own compiles: the mask is applied on every step)
are timed at N1 and N2, each with many blocks and with twice as many, from which
``steps_table.py`` takes their step. None of these shapes is a shape the tile
benchmarks time.

Writes ``steps.csv`` (every timing: config, d, dtype, causal, kind, N, B·H, waves, blocks,
median/min seconds, runs; the compiled kernel's shared bytes, registers, spills, CUDA's and
iosim's occupancy) and ``machine.json``. Kernels compile on a process pool (Triton's disk
cache keeps them; set TRITON_CACHE_DIR to keep them between calls); configurations are
taken in priority order (the tile benchmark's small space first) within the time budgets.
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from triton_tiles import SMALL, SMEM_LIMIT, _compile_all, _driver, time_config   # noqa: E402

from iosim.kernels.triton_preset import TritonConfig, search_space, shared_bytes   # noqa: E402

SMS = 132
#: the two lengths of the slope up to 128 rows a block: 33·128 and 66·128 (:func:`lengths`)
N1, N2 = 4224, 8448


def lengths(block_m: int) -> tuple[int, int]:
    """(N1, N2) for a block of ``block_m`` rows: 33 and 66 blocks of max(128, BLOCK_M) rows."""
    n1 = 33 * max(128, block_m)
    return n1, 2 * n1
#: causal kernels: blocks of the smaller launch, in waves of k (enough to balance the SMs)
CAUSAL_WAVES = 4
#: configurations also timed in bf16 (a check that bf16 steps equal fp16's)
BF16_CHECK = ((128, 64, 4, 3), (64, 64, 4, 3), (128, 128, 8, 3), (64, 128, 4, 2))
FIELDS = ["block_m", "block_n", "num_warps", "num_stages", "head_dim", "dtype", "causal", "kind", "seq_len",
          "batch_heads", "waves", "blocks", "median_s", "min_s", "runs", "shared_bytes", "registers", "spills",
          "cuda_blocks_per_sm", "iosim_blocks_per_sm", "error"]


def priority(configs: list) -> list:
    """The tile benchmark's small space first, then MMA-v3-shaped configurations, then the rest."""
    def rank(c):
        small = c[0] in SMALL[0] and c[1] in SMALL[1] and c[2] in SMALL[2] and c[3] in SMALL[3]
        return (not small, not (c[0] % 64 == 0 and c[2] % 4 == 0), c)
    return sorted(configs, key=rank)


def cuda_occupancy(compiled) -> int:
    """Blocks an SM as CUDA computes it for the compiled kernel (0 where it cannot be asked)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        blocks = ctypes.c_int(0)
        function = ctypes.c_void_p(int(compiled.function))
        code = lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(blocks), function, ctypes.c_int(32 * compiled.metadata.num_warps),
            ctypes.c_size_t(compiled.metadata.shared))
        return blocks.value if code == 0 else 0
    except Exception:  # noqa: BLE001 - recorded as unknown
        return 0


def iosim_occupancy(compiled) -> int:
    """Blocks an SM by iosim's rule (the L2 model's), from the compiled kernel's footprint."""
    from iosim.models.cache import occupancy
    return occupancy(1, 228 * 1024, compiled.metadata.shared + 1024, 32 * compiled.metadata.num_warps,
                     registers_per_thread=compiled.n_regs, register_file_bytes=256 * 1024)


def waves_for(k: int, block_m: int, n: int) -> int:
    """The fewest waves for which ``SMS·k·w`` blocks are whole heads at length ``n``."""
    w = 1
    while (SMS * k * w * block_m) % n:
        w += 1
    return w


#: the short blocks' key steps (at least: N rounds up to whole blocks of both sizes) and their
#: least waves, for a round's fixed cost besides its steps (docs/validation/2026-12-02-triton-short.md)
SHORT_STEPS, SHORT_WAVES = (4, 16), 4


def short_launches(cfg: tuple, k: int) -> list:
    """(kind, causal, N, B·H, waves) of the two short launches: blocks of about 4 and 16 key
    steps, N whole blocks of BLOCK_M and BLOCK_N, at least 4 whole waves."""
    bm, bn = cfg[0], cfg[1]
    unit = bm * bn // math.gcd(bm, bn)
    out = []
    for steps in SHORT_STEPS:
        n = -(-steps * bn // unit) * unit
        if out:                                    # the longer at least 4 times the shorter
            n = max(n, 4 * out[-1][2])
        w = waves_for(k, bm, n)
        w *= -(-SHORT_WAVES // w)
        out.append(("short", False, n, SMS * k * w * bm // n, w))
    return out


def launches(cfg: tuple, k: int, only_short: bool = False) -> list:
    """(kind, causal, N, B·H, waves) of every timing of one configuration (``only_short``: the
    short launches alone)."""
    if only_short:
        return short_launches(cfg, k)
    bm = cfg[0]
    n1, n2 = lengths(bm)
    out = []
    w = max(waves_for(k, bm, n1), waves_for(k, bm, n2))
    for n in (n1, n2):
        out.append(("full", False, n, SMS * k * w * bm // n, w))
    out.append(("waves", False, n1, 4 * SMS * k * w * bm // n1, 4 * w))     # the cost between waves
    lone = max(waves_for(1, bm, n1), waves_for(1, bm, n2))
    if lone == 1 and k > 1:            # (with one block an SM the full launches are lone)
        for n in (n1, n2):
            out.append(("lone", False, n, SMS * bm // n, 1))
    for n in (n1, n2):                 # the causal kernel at both lengths, B·H and 2·B·H
        base = SMS * k * max(CAUSAL_WAVES, waves_for(k, bm, n)) * bm // n
        for factor in (1, 2):
            out.append(("causal", True, n, base * factor, 0))
    return out + short_launches(cfg, k)


def measure(cfg, d, dtype_name, errors, writer, torch, fa2_forward, flush, only_short=False) -> int:
    """Time one (configuration, d, dtype); returns the timings written."""
    dtype = getattr(torch, dtype_name)
    q = torch.randn(1, 1, 256, d, device="cuda", dtype=dtype)
    _, _, compiled = fa2_forward(q, q, q, False, *cfg)
    k = cuda_occupancy(compiled) or iosim_occupancy(compiled)
    common = [compiled.metadata.shared, compiled.n_regs, compiled.n_spills, cuda_occupancy(compiled),
              iosim_occupancy(compiled)]
    written = 0
    for kind, causal, n, bh, waves in launches(cfg, k, only_short):
        row = [*cfg, d, dtype_name, causal, kind, n, bh, waves, bh * (n // cfg[0])]
        err = errors.get((cfg, d, causal), "not compiled")
        if err:
            writer.writerow(row + ["", "", 0, *common, err])
            continue
        try:
            g = torch.Generator(device="cuda").manual_seed(2)
            q, kk, v = (torch.randn(1, bh, n, d, device="cuda", dtype=dtype, generator=g) for _ in range(3))
            med, low, runs = time_config(lambda: fa2_forward(q, kk, v, causal, *cfg), flush, torch,
                                         min_runs=5, max_runs=20, target_s=0.05)
            writer.writerow(row + [f"{med:.9f}", f"{low:.9f}", runs, *common, ""])
            written += 1
        except Exception as exc:  # noqa: BLE001 - record and go on
            writer.writerow(row + ["", "", 0, *common, f"{type(exc).__name__}: {str(exc)[:160]}"])
    return written


def parse_args() -> argparse.Namespace:
    """The command line: output folder, compile pool and budgets, and which configurations."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=min(14, os.cpu_count() or 1))
    ap.add_argument("--compile-budget-s", type=float, default=300.0)
    ap.add_argument("--budget-s", type=float, default=200.0, help="seconds for the timings")
    ap.add_argument("--space", choices=("small", "full"), default="full")
    ap.add_argument("--block-m", type=int, action="append",
                    help="only configurations of these BLOCK_M (repeatable; default: all)")
    ap.add_argument("--short-only", action="store_true",
                    help="only the short launches (a round's fixed cost), fp16, the dense kernels")
    return ap.parse_args()


def select_configs(space: str, block_m: list | None) -> list:
    """The configurations that fit the shared memory at d = 64 or 128, filtered, in priority order."""
    configs = [c.key() for c in search_space()
               if min(shared_bytes(c, 64, "fp16"), shared_bytes(c, 128, "fp16")) <= SMEM_LIMIT]
    if space == "small":
        configs = [c for c in configs if c[0] in SMALL[0] and c[1] in SMALL[1] and c[2] in SMALL[2]
                   and c[3] in SMALL[3]]
    if block_m:
        configs = [c for c in configs if c[0] in block_m]
    return priority(configs)


def write_machine(out: str, torch, triton) -> None:
    """Write ``machine.json``: the device, the software versions and how the timings are taken."""
    props = torch.cuda.get_device_properties(0)
    machine = {"gpu": props.name, "sm_count": props.multi_processor_count, "torch": torch.__version__,
               "triton": triton.__version__, "cuda": torch.version.cuda, "driver": _driver(),
               "date": time.strftime("%Y-%m-%d %H:%M:%S"), "lengths": "33 and 66 blocks of max(128, BLOCK_M) rows",
               "causal_waves": CAUSAL_WAVES,
               "timing": "CUDA events, 2 warm-ups, median of >= 5 runs (up to 20 or 0.05 s), 256 MiB L2 flush each"}
    with open(os.path.join(out, "machine.json"), "w") as f:
        json.dump(machine, f, indent=2)


def work_list(configs: list, short_only: bool) -> list:
    """(config, d, dtype) to time: fp16 at every d that fits, then the bf16 checks (unless short only)."""
    todo = [(c, d, "float16") for c in configs for d in (64, 128)
            if shared_bytes(TritonConfig(*c), d, "fp16") <= SMEM_LIMIT]
    if not short_only:
        todo += [(c, 128, "bfloat16") for c in BF16_CHECK]
    return todo


def measure_or_record(cfg, d, dtype_name, errs, writer, torch, fa2_forward, flush, only_short) -> int:
    """:func:`measure`, or a ``compile`` error row where the kernel fails its first run; returns the timings."""
    try:
        return measure(cfg, d, dtype_name, errs, writer, torch, fa2_forward, flush, only_short)
    except Exception as exc:  # noqa: BLE001 - a kernel that fails its first run
        writer.writerow([*cfg, d, dtype_name, "", "compile", "", "", "", "", "", "", 0, "", "", "", "",
                         "", f"{type(exc).__name__}: {str(exc)[:160]}"])
        return 0


def measure_all(todo, errors, path, deadline, t0, torch, fa2_forward, flush, only_short) -> int:
    """Time the work list into ``steps.csv`` until the deadline, reporting progress; returns the timings."""
    done = 0
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(FIELDS)
        for i, (cfg, d, dtype_name) in enumerate(todo):
            if time.perf_counter() > deadline:
                print(f"time budget: {len(todo) - i} of {len(todo)} (config, d) left", flush=True)
                break
            errs = errors if dtype_name == "float16" else {(cfg, d, c): "" for c in (False, True)}
            if errs.get((cfg, d, False), "not compiled"):    # no dense kernel: nothing to measure it with
                continue
            done += measure_or_record(cfg, d, dtype_name, errs, writer, torch, fa2_forward, flush, only_short)
            f.flush()
            if i % 40 == 39:
                print(f"{i + 1}/{len(todo)} (config, d) measured, {done} timings, "
                      f"{time.perf_counter() - t0:.0f} s", flush=True)
    return done


def main() -> int:
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    import triton
    from iosim.gpu.triton_attention import fa2_forward
    configs = select_configs(args.space, args.block_m)
    write_machine(args.out, torch, triton)
    t0 = time.perf_counter()
    errors = _compile_all(configs, args.jobs, args.compile_budget_s, (False,) if args.short_only else (False, True))
    print(f"compile phase {time.perf_counter() - t0:.0f} s", flush=True)
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    deadline = time.perf_counter() + args.budget_s
    todo = work_list(configs, args.short_only)
    done = measure_all(todo, errors, os.path.join(args.out, "steps.csv"), deadline, t0, torch, fa2_forward, flush,
                       args.short_only)
    print(f"done: {done} timings in {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
