"""Where a long causal forward re-reads K and V near the L2's room, do its lines fall on the sets
at random or evenly? iosim's own kernel, whose blocks keep step (2026-12-04-drift-probe.md),
measured with Nsight Compute (device machine; the predictions and the summary run anywhere).
docs/validation/2026-12-04-l2-address.md says why.

``fa2_mma`` (fp16, (H, N, d) inputs: a head's rows contiguous) walks 128 × 64 tiles downwards as
flash-attn 2's d = 128 forward does, one block an SM, or 64 × 64 upwards, two. At N = 32,768 to
131,072 a block's next reader of a K/V tile comes many steps later, 10-70 MB of traffic apart:
where 16-way sets with lines at random (iosim's model) and sets filled evenly by runs of
consecutive lines (what the microbenchmarks show of contiguous buffers) part.

    python benchmarks/placement_probe.py --predict docs/validation/2026-12-04-l2-address/predictions.json
    PYTHONPATH=$PWD python3 benchmarks/placement_probe.py --out DIR       # on the H200
    python benchmarks/placement_probe.py --summary DIR PREDICTIONS

with ``PLACEMENT_GRID=strides`` in the environment for the second grid (``GRIDS``).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _down(n: int, h: int) -> dict:
    return dict(seq_len=n, head_dim=128, heads_total=h, causal=True, block_q=128, block_kv=64, descending=True)


#: the configs of each grid (``PLACEMENT_GRID``, default ``long``): ``long`` the first run, ``strides``
#: two heads whose K and V lie 2^24, 63 · 2^18 and 3 · 2^22 bytes apart, and the first run's two
#: configs again
GRIDS = {"long": [_down(32768, 1), _down(65536, 1), _down(65536, 2), _down(131072, 1),
                  dict(seq_len=65536, head_dim=128, heads_total=1, causal=True, block_q=64, block_kv=64,
                       descending=False)],
         "strides": [_down(65536, 2), _down(64512, 2), _down(49152, 2), _down(65536, 1)]}
CONFIGS = GRIDS[os.environ.get("PLACEMENT_GRID", "long")]
MAPS = ["pages", "lines"]
REPEATS = 2


def run_target() -> None:
    import cupy

    from drift_probe import launcher
    for spec in CONFIGS:
        launch, _, _ = launcher(spec, stamps=False)
        launch()
        cupy.get_default_memory_pool().free_all_blocks()


def predict(path: str) -> None:
    """The model's and the sketch's DRAM reads of every config, written before the run."""
    from drift_probe import simulation
    from l2_address_sketch import sketch
    out = []
    for spec in CONFIGS:
        got = sketch(simulation(spec), MAPS, 512, kernel=None)
        out.append({"config": spec, **{k: float(v) for k, v in got.items()}})
        print(json.dumps(out[-1]), flush=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


def step_spread(a: np.ndarray, spec: dict) -> float:
    """How far the blocks of a launch part in pace: the spread (90th less 10th percentile) of the
    time a key-block step takes, over its median, among blocks of 64 steps or more."""
    from drift_probe import steps
    s = steps(spec)
    rate = (a[:, 1].astype(np.float64) - a[:, 0]) / np.maximum(s, 1)
    p10, p50, p90 = np.percentile(rate[s >= 64], [10, 50, 90])
    return float((p90 - p10) / p50)


def summary(raw_dir: str, predictions: str) -> str:
    from drift_probe import drift_table, walk_label
    from iosim.gpu.ncu import read_launches
    with open(os.path.join(raw_dir, "placement.csv")) as f:
        launches = read_launches(f.read())
    with open(predictions) as f:
        pred = json.load(f)
    stamps = np.load(os.path.join(raw_dir, "stamps.npz"))
    lines = ["| N | heads | tile, walk | DRAM read (MB) | iosim (sets at random) | pages | lines | time (µs) "
             "| step spread | start inversions | blocks at once |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for i, (p, launch) in enumerate(zip(pred, launches)):
        tabs = [drift_table(stamps[f"c{i}_r{r}"], p["config"]) for r in range(REPEATS)]
        spread = max(step_spread(stamps[f"c{i}_r{r}"], p["config"]) for r in range(REPEATS))
        spec, got = p["config"], launch["metrics"]["dram__bytes_read.sum"]
        walk = walk_label(spec)
        cells = " | ".join(f"{p[k] / got:.2f}" for k in ["model", *MAPS])
        lines.append(f"| {spec['seq_len']:,} | {spec['heads_total']} | {walk} | {got / 1e6:.1f} | {cells} "
                     f"| {launch['metrics']['gpu__time_duration.sum'] / 1e3:.0f} "
                     f"| {spread:.3f} | {max(t['start_inversions'] for t in tabs):.4f} "
                     f"| {max(t['at_once'] for t in tabs)} |")
    return "\n".join(lines)


def main() -> None:
    if sys.argv[1:2] == ["--predict"]:
        predict(sys.argv[2])
        return
    if sys.argv[1:2] == ["--summary"]:
        print(summary(sys.argv[2], sys.argv[3]))
        return
    from drift_probe import METRICS, measure_stamps
    from ncu_self_profile import self_profile
    if "--target" not in sys.argv:
        os.makedirs(sys.argv[sys.argv.index("--out") + 1], exist_ok=True)
    self_profile(__file__, __doc__, run_target, "regex:fa2_mma", METRICS, "placement.csv", "configs.json",
                 {"configs": CONFIGS, "repeats": REPEATS})
    if "--target" not in sys.argv:
        measure_stamps(sys.argv[sys.argv.index("--out") + 1], CONFIGS, REPEATS)


if __name__ == "__main__":
    main()
