"""The count-equality table of docs/validation/: kernels vs simulator over a grid of shapes.

    PYTHONPATH=. python3 benchmarks/gpu_validation_report.py --out results/

For each configuration it runs `iosim validate`'s comparison (instrumented counts per tensor
vs the simulator's, output vs the float64 reference, uninstrumented kernel time vs the
simulator's predicted time) and prints one line per algorithm; a failure in one case is
reported and the others still run. Writes gpu_validation.json (every tensor of every case);
the table is what it prints.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (N, d, B_r, B_c, batch, heads)
GRID = [
    (777, 32, 64, 32, 2, 2),
    (1000, 64, 64, 64, 1, 4),
    (4096, 128, 128, 64, 1, 2),
    (8192, 64, 64, 128, 1, 1),
    (8192, 128, 128, 64, 1, 4),
]


#: the header of the printed table, one column per field of :func:`case_line`
HEADER = (f"{'algo':8s} {'impl':7s} {'N':>5s} {'d':>3s} {'BrxBc':>7s} {'BxH':>4s} {'dtype':5s} {'mask':6s} "
          f"{'counts':>6s} {'gpu bytes':>14s} {'sim bytes':>14s} {'max err':>8s} {'tol':>6s} "
          f"{'measured':>10s} {'predicted':>10s}")


def parse_args() -> argparse.Namespace:
    """The command line: output folder, hardware profile, repeats and the ncu switch."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--hw", default="h200")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ncu", action="store_true", help="also run ncu on one configuration per algorithm")
    return ap.parse_args()


def all_cases() -> list:
    """(N, d, B_r, B_c, batch, heads, dtype, causal, algo) for every shape of GRID."""
    return [(n, d, br, bc, b, h, dtype, causal, algo)
            for n, d, br, bc, b, h in GRID for dtype in ("fp16", "fp32") for causal in (False, True)
            for algo in ("standard", "fa1", "fa2")]


def case_row(r: dict, n, d, br, bc, b, h, dtype, causal, algo) -> dict:
    """The JSON row of one validated case from ``validate_one``'s result."""
    gt, st, t = r["gpu_total"], r["sim_total"], r["time"]
    return {"algo": algo, "impl": r["impl"], "N": n, "d": d, "block_q": br, "block_kv": bc, "batch": b,
            "heads": h, "dtype": dtype, "causal": causal, "counts_equal": r["counts_equal"],
            "gpu_bytes": gt["read_bytes"] + gt["write_bytes"], "sim_bytes": st["read_bytes"] + st["write_bytes"],
            "max_abs_err": r["output"]["max_abs_err"], "tolerance": r["output"]["tolerance"],
            "lse_err": r["output"]["lse_max_abs_err"], "checked_rows": r["output"]["checked_rows"],
            "total_rows": r["output"]["total_rows"], "output_ok": r["output"]["ok"],
            "measured_s": t["measured_s"], "predicted_s": t["predicted_s"], "tensors": r["tensors"]}


def case_line(r: dict, row: dict, good: bool, n, d, br, bc, b, h, dtype, causal, algo) -> str:
    """The printed table line of one validated case (``<-- FAIL`` where it is not good)."""
    t = r["time"]
    return (f"{algo:8s} {r['impl']:7s} {n:5d} {d:3d} {br:>3d}x{bc:<3d} {b}x{h:<2d} {dtype:5s} "
            f"{'causal' if causal else 'dense':6s} {'EQUAL' if r['counts_equal'] else 'DIFF':>6s} "
            f"{row['gpu_bytes']:14,d} {row['sim_bytes']:14,d} {row['max_abs_err']:8.1e} {row['tolerance']:6.0e} "
            f"{t['measured_s'] * 1e3:8.3f}ms {t['predicted_s'] * 1e3:8.3f}ms{'' if good else '  <-- FAIL'}")


def run_case(case: tuple, args, rows: list, validate_one, Problem) -> bool:
    """Validate one case, append its row and print its line; whether counts and output were good."""
    n, d, br, bc, b, h, dtype, causal, algo = case
    ns = argparse.Namespace(hw=args.hw, block_q=br, block_kv=bc, impl="auto", seed=0, warmup=2,
                            repeats=args.repeats, ncu=False)
    problem = Problem(seq_len=n, head_dim=d, batch=b, heads=h, dtype=dtype, causal=causal)
    try:
        r = validate_one(algo, ns, problem)
    except Exception as exc:  # noqa: BLE001 - report and carry on
        print(f"{algo:8s} N={n} d={d} {dtype} causal={causal}: ERROR {exc!r}", flush=True)
        traceback.print_exc()
        rows.append({"algo": algo, "N": n, "d": d, "dtype": dtype, "causal": causal, "error": repr(exc)})
        return False
    good = r["counts_equal"] and r["output"]["ok"]
    row = case_row(r, *case)
    rows.append(row)
    print(case_line(r, row, good, *case), flush=True)
    return good


def ncu_runs(hw: str, validate_one, Problem) -> list:
    """Validate one configuration per algorithm under ncu; a row each (its error where it fails)."""
    ncu_rows = []
    for algo in ("standard", "fa1", "fa2"):
        n, d, br, bc, b, h = 4096, 128, 128, 64, 1, 2
        ns = argparse.Namespace(hw=hw, block_q=br, block_kv=bc, impl="auto", seed=0, warmup=1, repeats=3,
                                ncu=True)
        try:
            r = validate_one(algo, ns, Problem(seq_len=n, head_dim=d, batch=b, heads=h, dtype="fp16"))
            ncu_rows.append({"algo": algo, "impl": r["impl"], "N": n, "d": d, "batch": b, "heads": h,
                             "block_q": br, "block_kv": bc, "gpu_total": r["gpu_total"],
                             "sim_total": r["sim_total"], "ncu": r["ncu"]})
            print(f"ncu {algo}: counted {r['gpu_total']}  sim {r['sim_total']}  ncu {r['ncu']}", flush=True)
        except Exception as exc:  # noqa: BLE001
            print(f"ncu {algo}: ERROR {exc!r}", flush=True)
            ncu_rows.append({"algo": algo, "error": repr(exc)})
    return ncu_rows


def main() -> int:
    args = parse_args()

    from iosim import Problem
    from iosim.cli.validate_command import validate_one
    from iosim.gpu import cupy_kernels, require
    from iosim.gpu.cupy_kernels import make_config
    from iosim.gpu.runner import device_info

    require()
    cases = all_cases()
    cupy_kernels.warm_configs([make_config(algo, seq_len=n, head_dim=d, heads_total=b * h, dtype=dtype, causal=causal,
                                     block_q=br, block_kv=bc) for n, d, br, bc, b, h, dtype, causal, algo in cases])

    rows, ok = [], True
    print(HEADER, flush=True)
    for case in cases:
        good = run_case(case, args, rows, validate_one, Problem)
        ok = ok and good

    ncu_rows = ncu_runs(args.hw, validate_one, Problem) if args.ncu else []

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gpu_validation.json"), "w") as f:
        json.dump({"device": device_info(), "rows": rows, "ncu": ncu_rows, "ok": ok}, f, indent=2)
    print("ALL EQUAL AND WITHIN TOLERANCE" if ok else "SOME CASES FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
