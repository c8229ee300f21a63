"""iosim's L2 model beside a same-launch run's measured DRAM reads: for each config of a
``flash_stamps_same.py`` table (its ``same.json``), the flash-attn-2 preset's forward on a
profile, its main kernel's DRAM reads over the least and most the GPU read, with the profile's
L2 as it is and as one LRU of the same size (no partitions, no sets).

    python benchmarks/same_launch_model.py docs/validation/2026-12-05-same-launch-h100/same.json --hw h100-sxm
        [--skip d64_n262144_b1h1_causal]        # the longest takes about 11 min a variant on one core

The configs are ``flash_stamps.GRID``'s, found by their names (``flash_stamps.name``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flash_stamps as fs  # noqa: E402

from iosim import Options, Problem, load_profile, simulate  # noqa: E402

#: a same-launch config's name -> its problem
PROBLEMS = {fs.name(cfg): Problem(**cfg) for cfg in fs.GRID}


def one_lru(profile):
    """``profile`` with its L2 as one LRU of the same capacity (no partitions, no sets)."""
    l2 = profile.cache
    return dataclasses.replace(profile, levels={**profile.levels, l2.name: dataclasses.replace(l2, partitions=1,
                                                                                                   ways=None)})


def dram_read(profile, name: str) -> int:
    res = simulate(profile, "fa2", PROBLEMS[name], passes="forward",
                   options=Options(kernel="flash-attn-2", cache=True))
    return res.cache.kernels["main"].dram_read_bytes


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("table", help="a same.json of flash_stamps_same.py")
    ap.add_argument("--hw", required=True, help="built-in profile name or YAML path")
    ap.add_argument("--skip", default="", help="config names to leave out, comma-separated")
    a = ap.parse_args(argv)
    measured: dict = {}
    for launch in json.load(open(a.table))["launches"]:
        measured.setdefault(launch["name"], []).append(launch["dram_read"])
    profile = load_profile(a.hw)
    variants = {f"{a.hw} as it is": profile, "one LRU": one_lru(profile)}
    print(f"| config | measured (MB) | {' | '.join(variants)} |")
    print("|---|---:|" + "---|" * len(variants))
    for name, ms in measured.items():
        if name in a.skip.split(","):
            continue
        cells = []
        for prof in variants.values():
            got = dram_read(prof, name)
            cells.append(f"{got / 1e6:,.1f} MB: {got / max(ms):.2f}–{got / min(ms):.2f}")
        print(f"| {name} | {min(ms) / 1e6:,.1f}–{max(ms) / 1e6:,.1f} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
