"""Write tests/golden/golden.json: every configuration of configs.py, run, id -> output.

    python tests/golden/make_golden.py           # (re)write golden.json
    python tests/golden/make_golden.py --check   # compare with golden.json, write nothing

Run from anywhere; the iosim imported is this checkout's. The file is written with
``json.dumps(..., sort_keys=True, indent=1)`` so that diffs of it read well. A configuration
whose outcome disagrees with its ``expect_error`` (an error where none is expected, or the
wrong error, or none where one is expected) stops the script before anything is written.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE)]

from configs import configurations, dumps, normalise, run  # noqa: E402

GOLDEN = HERE / "golden.json"


def outputs() -> dict:
    """id -> normalised output of every configuration; raises if an outcome is unexpected."""
    result, unexpected = {}, []
    for cfg in configurations():
        out = normalise(run(cfg))
        if out.get("error") != cfg.get("expect_error"):
            unexpected.append(f"  {cfg['id']}: expected {cfg.get('expect_error') or 'no error'}, "
                              f"got {out.get('error') or 'no error'} {out.get('message', '')[:200]!r}")
        result[cfg["id"]] = out
    if unexpected:
        raise SystemExit("configurations with an unexpected outcome (nothing written):\n" + "\n".join(unexpected))
    return result


def text(data: dict) -> str:
    return json.dumps(data, sort_keys=True, indent=1) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with golden.json instead of writing it")
    args = parser.parse_args(argv)
    data = outputs()
    if args.check:
        golden = json.loads(GOLDEN.read_text())
        differ = sorted(i for i in data.keys() & golden.keys() if dumps(data[i]) != dumps(golden[i]))
        missing, extra = sorted(data.keys() - golden.keys()), sorted(golden.keys() - data.keys())
        for label, ids in (("differ", differ), ("not in golden.json", missing), ("only in golden.json", extra)):
            for i in ids:
                print(f"{label}: {i}")
        print(f"{len(data)} configurations: {len(differ)} differ, {len(missing)} new, {len(extra)} gone")
        return 1 if differ or missing or extra else 0
    GOLDEN.write_text(text(data))
    errors = sum("error" in v for v in data.values())
    print(f"wrote {GOLDEN.relative_to(ROOT)}: {len(data)} configurations ({len(data) - errors} ok, {errors} errors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
