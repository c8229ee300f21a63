"""Write again the committed comparison rows of every run in docs/validation/2026-12-04-status/rows/
(one JSON a run, named by the run's folder under docs/validation with "/" as "_"), with the model
as it is now: ``sdpa_compare.py RAW --cache --json`` for each, on ``--jobs`` processes. Run it
after a change to the model, and commit the rows with the change: tests/gpu/test_status_rows.py
plays each run's smallest config again and fails on rows the model no longer gives.

    python benchmarks/status_rows.py --jobs 2          # about 4 minutes on 2 cores
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


def write(path: str) -> str:
    """Compare one run again and write its rows over ``path``."""
    from sdpa_compare import compare
    run = ROOT / "docs" / "validation" / pathlib.Path(path).stem.replace("_", "/")
    rows = compare(str(run), cache=True)
    with open(path, "w") as f:
        json.dump(rows, f, indent=1)
    return f"{pathlib.Path(path).name}: {len(rows)} rows"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args(argv)
    paths = sorted(str(p) for p in ROWS.glob("*.json"))
    with ProcessPoolExecutor(max(1, a.jobs)) as pool:
        for line in pool.map(write, paths):
            print(line, flush=True)


if __name__ == "__main__":
    main()
