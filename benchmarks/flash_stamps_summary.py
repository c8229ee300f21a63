"""The predictions and the table of ``benchmarks/flash_stamps.py``: iosim's DRAM reads of each
config's forward, the same stream replayed in lockstep and in the order the stamps give, against
what Nsight Compute measured of the stamped, plain and PyTorch builds.

    python benchmarks/flash_stamps_summary.py --predict docs/validation/2026-12-05-flash-stamps/predictions.json
    python benchmarks/flash_stamps_summary.py --summary DIR [PREDICTIONS]
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

import flash_stamps as fs
import flash_stamps_replay as rp

#: sets a partition the replays play under ``pages`` (every k-th, l2_address_sketch.py)
SAMPLE = 256


ROWS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "docs", "validation", "2026-12-04-status", "rows")


def committed(cfg: dict) -> dict | None:
    """The committed comparison row of the config's forward (2026-12-04-status/rows/): iosim's
    prediction and PyTorch's launch as measured then, or None."""
    import glob
    keys = ("seq_len", "head_dim", "batch", "heads", "causal")
    for path in sorted(glob.glob(os.path.join(ROWS, "*.json"))):
        with open(path) as f:
            for r in json.load(f):
                if r["kernel"] == "main" and all(r[k] == cfg[k] for k in keys):
                    return {"run": os.path.basename(path)[:-5], "model": r["predicted"]["dram_read"],
                            "torch_then": r["measured"]["dram_read"]}
    return None


def replays(cfg: dict, timing, sets: bool = True) -> dict:
    """The stream played in ``timing``'s order: DRAM reads under ``pages`` and (``sets``) through
    the model's sets, and how far apart a K tile's readers come."""
    t0 = time.time()
    out = {"pages": float(rp.dram_read(cfg, fs.tile(cfg), timing, "pages", SAMPLE))}
    if sets:
        out["sets"] = float(rp.dram_read(cfg, fs.tile(cfg), timing, None))
    out["reuse_mb"], out["reuse_mb_p90"] = rp.reuse_mb(cfg, fs.tile(cfg), timing)
    return {**out, "seconds": round(time.time() - t0, 1)}


def pair_factor(cfg: dict) -> float:
    """The forward kernel's measured co-residency factor (iosim.kernels.coresidency)."""
    from iosim import load_profile
    from iosim.kernels.tile_tables import kernel_tile
    return kernel_tile("fa2", cfg["head_dim"], load_profile("h200"), causal=cfg["causal"]).coresident[1]


def predict(path: str) -> None:
    """iosim's DRAM reads of every config (as committed) and the lockstep replays, written before
    the run; the configs already in ``path`` are kept as they are."""
    out = []
    if os.path.exists(path):
        with open(path) as f:
            out = [p for p in json.load(f) if p["config"] in fs.GRID]
    for cfg in fs.GRID:
        if any(p["config"] == cfg for p in out):
            continue
        row = {"config": cfg, "name": fs.name(cfg), **(committed(cfg) or {}),
               "lockstep": replays(cfg, rp.lockstep_timing(cfg, fs.tile(cfg), 2))}
        out.append(row)
        print(json.dumps(row), flush=True)
        with open(path, "w") as f:
            json.dump(out, f, indent=1)


def _launches(path: str) -> list[dict]:
    """The launches of one ncu CSV; none where the run failed or timed out before its table."""
    from iosim.errors import IosimError
    from iosim.gpu.ncu import read_launches
    try:
        with open(path) as f:
            return read_launches(f.read())
    except (OSError, IosimError):
        return []


def measured(raw_dir: str, cfg: dict) -> dict:
    """What one config's stamps and ncu runs say (absent parts left out)."""
    bm = fs.tile(cfg)[0]
    _, steps = rp.blocks_of(cfg, fs.tile(cfg))
    row = {"name": fs.name(cfg), "config": cfg}
    for kind in ("plain", "stamps"):
        launches = _launches(os.path.join(raw_dir, "ncu", f"{fs.name(cfg)}_{kind}.csv"))
        if launches:
            row[kind] = launches[0]["metrics"]
    grid = f"({-(-cfg['seq_len'] // bm)}, {cfg['batch']}, {cfg['heads']})"
    torch = {x["grid"]: x["metrics"] for x in _launches(os.path.join(raw_dir, "ncu", "torch.csv"))}
    if grid in torch:
        row["torch"] = torch[grid]
    path = os.path.join(raw_dir, "stamps", fs.name(cfg) + ".bin")
    path = path if os.path.exists(path) else path + ".gz"
    if os.path.exists(path):
        runs = rp.read_stamps(path, len(steps))
        row["spread"] = [rp.spread(s, e, steps) for _, s, e, _ in runs]
        row["sm_spread"] = [rp.sm_spread(s, e, steps, sm) for _, s, e, sm in runs]
        row["per_sm"] = [rp.per_sm(s, sm) for _, s, _, sm in runs]
        row["launch_ns"] = [t for t, _, _, _ in runs]
        _, s, e, sm = runs[0]
        row["replay"] = replays(cfg, rp.measured_timing(s, e, sm, steps))
        row["replay_paired"] = replays(cfg, rp.measured_timing(s, e, sm, steps, pair_factor(cfg)), sets=False)
    return row


def _mb(m: dict | None, key: str = "dram__bytes_read.sum") -> str:
    return f"{m[key] / 1e6:,.1f}" if m and key in m else "—"


def line(row: dict, pred: dict | None) -> str:
    """One config's row of the table."""
    cfg, got = row["config"], (row.get("stamps") or {}).get("dram__bytes_read.sum")
    ratio = (lambda x, of=got: f"{x / of:.2f}" if of and x is not None else "—")  # noqa: E731
    torch_got = (row.get("torch") or {}).get("dram__bytes_read.sum")
    lock, rep, paired = (pred or {}).get("lockstep", {}), row.get("replay", {}), row.get("replay_paired", {})
    time_us = " / ".join(f"{m['gpu__time_duration.sum'] / 1e3:,.0f}" if m else "—"
                         for m in (row.get("torch"), row.get("plain"), row.get("stamps")))
    spread = [x for x in row.get("spread", []) if x is not None]
    by_sm = [x for x in row.get("sm_spread", []) if x is not None]
    reuse = " / ".join(f"{d['reuse_mb']:.1f}" if "reuse_mb" in d else "—" for d in (lock, rep))
    return (f"| {cfg['head_dim']} | {cfg['seq_len']:,} | {cfg['batch']} × {cfg['heads']} | "
            f"{'y' if cfg['causal'] else ''} | {_mb(row.get('torch'))} / {_mb(row.get('plain'))} / "
            f"{_mb(row.get('stamps'))} | {ratio((pred or {}).get('model'), torch_got)} | {ratio(lock.get('sets'))} / "
            f"{ratio(lock.get('pages'))} | {ratio(rep.get('sets'))} / {ratio(rep.get('pages'))} / "
            f"{ratio(paired.get('pages'))} | {reuse} | {f'{max(spread):.3f}' if spread else '—'} / "
            f"{f'{max(by_sm):.3f}' if by_sm else '—'} | {time_us} |")


HEADER = ("| d | N | B × H | causal | DRAM read, MB: torch / plain / stamped | iosim | lockstep: sets / pages "
          "| stamped order: sets / pages / pages paced by the SM's company "
          "| K tile's readers apart, MB: lockstep / stamped | step spread: blocks / SMs | time, µs: torch / plain / stamped |\n"
          "|---:|---:|---|:---:|---|---:|---|---|---|---:|---|")


def summary(raw_dir: str, predictions: str | None = None) -> str:
    """The table (iosim's DRAM reads over PyTorch's launch, the replays' over the stamped build's);
    writes raw_dir/summary.json."""
    pred = {}
    if predictions:
        with open(predictions) as f:
            pred = {p["name"]: p for p in json.load(f)}
    rows = [measured(raw_dir, cfg) for cfg in fs.GRID]
    with open(os.path.join(raw_dir, "summary.json"), "w") as f:
        json.dump(rows, f, indent=1, default=lambda x: float(x) if isinstance(x, np.floating) else str(x))
    return "\n".join([HEADER] + [line(r, pred.get(r["name"])) for r in rows])


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--predict"] and len(argv) == 2:
        predict(argv[1])
    elif argv[:1] == ["--summary"] and len(argv) in (2, 3):
        print(summary(*argv[1:]))
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        raise SystemExit(2)


if __name__ == "__main__":
    main()
