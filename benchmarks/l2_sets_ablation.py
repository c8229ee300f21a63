"""The committed SDPA grids' DRAM bytes with the H200 profile's L2 played three ways: as
shipped (two partitions of 30 MiB, each 16-way sets on hashed lines), without the sets
(two 30 MiB LRUs) and as the model was before the sets (two 25 MB LRUs).

It plays every grid configuration the way ``iosim.gpu.sdpa.compare`` does (flash-attn-2
preset, forward+backward, L2 model on), counts the main kernels (``main``, ``dq_dk_dv``)
whose DRAM reads and writes are within 10 % of ncu's, and prints the ratios' range. The
variants are the shipped profile with its L2 level replaced (``dataclasses.replace``);
nothing in the model is patched. docs/cache.md (Sets) records its output.

Run:  python benchmarks/l2_sets_ablation.py [--json rows.json] GRID_DIR ...
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from iosim import Options, load_profile, simulate
from iosim.gpu import sdpa

MAIN = ("main", "dq_dk_dv")


def variants() -> dict:
    """The shipped profile and the two without sets, by name."""
    shipped = load_profile("h200")
    l2 = shipped.cache

    def with_l2(**changes):
        return dataclasses.replace(shipped, levels={**shipped.levels, l2.name: dataclasses.replace(l2, **changes)})
    return {"sets 60 MiB": shipped, "LRU 60 MiB": with_l2(ways=None), "LRU 50 MB": with_l2(ways=None, capacity_bytes=50_000_000)}


def rows(profile, grids: list[str], head_dims: tuple | None = None) -> list[dict]:
    """One row per main-kernel launch of the grids (of ``head_dims`` only, where given):
    modelled and measured DRAM bytes."""
    out = []
    for grid in grids:
        for cfg, problem, launches in sdpa.raw_configs(grid):
            if head_dims is not None and cfg["head_dim"] not in head_dims:
                continue
            r = simulate(profile, "fa2", problem, passes="forward+backward", options=Options(kernel="flash-attn-2", cache=True))
            for launch in launches:
                kernel = sdpa.label(launch["name"])
                if kernel not in MAIN:
                    continue
                measured, s = sdpa.measured_classes(launch["metrics"]), r.cache.kernels[kernel]
                out.append({"grid": grid, "config": cfg, "kernel": kernel,
                            "dram_read": s.dram_read_bytes, "measured_read": measured["dram_read"],
                            "dram_write": s.dram_write_bytes, "measured_write": measured["dram_write"]})
    return out


def summary(name: str, played: list[dict]) -> list[str]:
    """Markdown rows: per kernel, launches within 10 % (reads, writes) and the reads' ratio range."""
    lines = []
    for kernel in MAIN:
        mine = [r for r in played if r["kernel"] == kernel]
        if not mine:
            continue
        near = {c: sum(sdpa.within(r[f"dram_{c}"], r[f"measured_{c}"], 0.10) if r[f"measured_{c}"] else r[f"dram_{c}"] == 0
                       for r in mine) for c in ("read", "write")}
        ratios = [r["dram_read"] / r["measured_read"] for r in mine if r["measured_read"]]
        lines.append(f"| {name} | {kernel} | {len(mine)} | {near['read']} | {near['write']} | "
                     f"{min(ratios):.2f}–{max(ratios):.2f} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grids", nargs="+")
    ap.add_argument("--json", help="write every variant's rows here")
    args = ap.parse_args()
    print("| L2 | kernel | launches | reads within 10 % | writes within 10 % | reads, min–max |")
    print("|---|---|---:|---:|---:|---|")
    every = {}
    for name, profile in variants().items():
        every[name] = rows(profile, args.grids)
        print("\n".join(summary(name, every[name])), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(every, f, indent=1)


if __name__ == "__main__":
    main()
