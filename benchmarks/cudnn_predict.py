"""The ``cudnn`` preset's predictions for a cuDNN grid, written before the grid runs, and checked
after against what Nsight Compute measured (the frozen file, not a fresh run of the preset).

    python benchmarks/cudnn_predict.py --grid s42-cudnn-decode --out PRED.json     # before the run
    python benchmarks/cudnn_predict.py --check PRED.json RAW_DIR                    # after it

A prediction is every launch the preset says PyTorch's cuDNN backend makes for the config (forward
and backward), each with its byte counts, the ncu metric each is compared with
(:func:`iosim.gpu.cudnn.predicted_launches`), and the L2 model's DRAM reads (the profile's: h200 by
default). ``--check`` prints one line a count that is not as predicted, the DRAM reads of the forward's
launches beside the prediction, and exits 1 if a load or store count of a launch is off (the bprop's
crossbar loads: more than 0.05 %, the run's own spread, docs/validation/2026-12-02-cudnn-repeat.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cudnn_decode_table import configs_and_launches  # noqa: E402
from sdpa_grids import GRIDS, grid  # noqa: E402

from iosim import IosimError, load_profile  # noqa: E402
from iosim.gpu.cudnn import label, predict, predicted_launches  # noqa: E402
from iosim.gpu.sdpa import problem_of  # noqa: E402

#: the bprop's crossbar loads: measured within this fraction of the prediction (the run's spread)
BPROP_SPREAD = 0.0005


def predictions(grid_name: str, hw: str) -> list[dict]:
    """One entry a config of the grid, in its order: the config, and the predicted launches (or why none)."""
    profile = load_profile(hw)
    out = []
    for d in GRIDS[grid_name]["head_dims"]:
        for cfg in grid(d, grid_name, "cudnn"):
            try:
                result, _ = predict(problem_of(cfg), profile, cache=True)
            except IosimError as exc:
                out.append({"config": cfg, "refused": str(exc)})
                continue
            dram = {k: s.dram_read_bytes for k, s in (result.cache.kernels if result.cache else {}).items()}
            out.append({"config": cfg, "launches": [
                {"kernel": p["kernel"], "pass": p["pass"], "dram_read": dram.get(p["iosim"]),
                 "checks": [[q, kind, metric, int(v)] for q, kind, metric, v in p["checks"]]}
                for p in predicted_launches(result, profile)]})
    return out


def check(path: str, raw: str) -> int:
    """Measured against the frozen predictions: the count of load or store counts that are off."""
    with open(path) as f:
        frozen = json.load(f)["configs"]
    key = lambda c: json.dumps({k: v for k, v in c.items() if k != "expected"}, sort_keys=True)  # noqa: E731
    predicted = {key(p["config"]): p for p in frozen}
    measured = list(configs_and_launches(raw, measured_only=True))
    print(f"{len(measured)} of the {len(frozen)} predicted configs were measured")
    counts = off = 0
    for cfg, launches in measured:
        pred = predicted[key(cfg)]
        name = f"d {cfg['head_dim']} N {cfg.get('seq_len_q', cfg['seq_len'])} x {cfg.get('seq_len_kv', cfg['seq_len'])} " \
               f"B {cfg['batch']} H {cfg['heads']} " \
               f"H_kv {cfg.get('kv_heads', cfg['heads'])} {cfg.get('dtype', 'fp16')}"
        if "refused" in pred:
            print(f"{name}: refused ({pred['refused'][:80]}…)")
            continue
        got = [label(x["name"]) for x in launches]
        if got != [p["kernel"].split()[0] for p in pred["launches"]]:
            print(f"{name}: launched {got}, predicted {[p['kernel'] for p in pred['launches']]}")
            off += 1
            continue
        for p, x in zip(pred["launches"], launches):
            m = x["metrics"]
            for quantity, _, metric, value in p["checks"]:
                counts += 1
                got_v = int(m.get(metric, -1))
                spread = BPROP_SPREAD * value if (p["kernel"], quantity) == ("bprop", "loads") else 0
                if abs(got_v - value) > spread:
                    off += 1
                    print(f"{name}: {p['kernel']} {quantity}: measured {got_v:,}, predicted {value:,}")
            if p["pass"] == "forward" and p["dram_read"]:
                print(f"{name}: {p['kernel']} DRAM read {m.get('dram__bytes_read.sum', 0) / p['dram_read']:.3f} "
                      "x the prediction")
    print(f"{counts - off} of {counts} counts as predicted")
    return 1 if off else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grid", choices=list(GRIDS))
    parser.add_argument("--out")
    parser.add_argument("--hw", default="h200")
    parser.add_argument("--check", nargs=2, metavar=("PRED", "RAW"))
    args = parser.parse_args(argv)
    if args.check:
        return check(*args.check)
    if not (args.grid and args.out):
        parser.error("give --grid and --out, or --check PRED RAW")
    with open(args.out, "w") as f:
        json.dump({"grid": args.grid, "hw": args.hw, "configs": predictions(args.grid, args.hw)}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
