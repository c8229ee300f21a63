"""Write again the committed comparison rows of every run in docs/validation/2026-12-04-status/rows/
(one JSON a run, named by the run's folder under docs/validation with "/" as "_"), with the model
as it is now: ``sdpa_compare.py RAW --cache --json`` for each, on ``--jobs`` processes. Run it
after a change to the model, and commit the rows with the change: tests/gpu/test_status_rows.py
plays each run's smallest config again and fails on rows the model no longer gives.

    python benchmarks/status_rows.py --jobs 2          # about 4 minutes on 2 cores

``--h100`` writes instead the H100 runs' model rows that tests/gpu/h100_rows.py holds the H100 replays to
(``model-FOLDER.json`` beside each raw folder of :data:`H100_RUNS`, on the h100-sxm profile), and grids s38 and
s42's causal forwards played alone (``benchmarks/causal_forwards_h100.py``): about 6 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ROOT = pathlib.Path(__file__).resolve().parents[1]
ROWS = ROOT / "docs" / "validation" / "2026-12-04-status" / "rows"
#: the H100 runs whose rows the model gives now are committed (run folder, raw folder in it)
H100_RUNS = [("2026-12-05-s38-check", f) for f in ("raw-h100", "bwd-h100", "bwd2-h100", "bwd3-h100")] + \
    [("2026-12-06-s42-check", "raw-h100"), ("2026-12-06-s44-check", "raw-h100")]


def write(path: str) -> str:
    """Compare one run again and write its rows over ``path``."""
    run = ROOT / "docs" / "validation" / pathlib.Path(path).stem.replace("_", "/")
    return _write_rows(run, pathlib.Path(path), "h200")


def write_h100(run: tuple) -> str:
    """Compare one H100 run's raw folder again on the h100-sxm profile and write its model rows beside it."""
    folder = ROOT / "docs" / "validation" / run[0]
    return _write_rows(folder / run[1], folder / f"model-{run[1]}.json", "h100-sxm")


def _write_rows(raw: pathlib.Path, out: pathlib.Path, hw: str) -> str:
    """``sdpa_compare.py RAW --cache --json OUT`` on profile ``hw``."""
    from sdpa_compare import compare
    rows = compare(str(raw), cache=True, hw=hw)
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    return f"{out.relative_to(ROOT / 'docs' / 'validation')}: {len(rows)} rows"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--h100", action="store_true", help="the H100 runs' model rows (H100_RUNS) instead")
    a = ap.parse_args(argv)
    jobs = (write_h100, H100_RUNS) if a.h100 else (write, sorted(str(p) for p in ROWS.glob("*.json")))
    with ProcessPoolExecutor(max(1, a.jobs)) as pool:
        lines = pool.map(*jobs)
        alone = pool.submit(_forwards_alone) if a.h100 else None
        for line in lines:
            print(line, flush=True)
        if alone:
            print(alone.result(), flush=True)


def _forwards_alone() -> str:
    import causal_forwards_h100
    return causal_forwards_h100.write()


if __name__ == "__main__":
    main()
