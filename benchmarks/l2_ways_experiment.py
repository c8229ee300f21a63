"""A CPU experiment: the committed SDPA grids' DRAM bytes with the L2's partitions played as
the H200's measured sets instead of the shipped model's 25 MB LRUs.

docs/validation/2026-12-03-l2-scatter.md measures a partition as 16-way sets of 128-byte
lines on hashed sets, 30 MiB (half the 60 MiB the driver reports): a line whose window
holds D distinct bytes hits with probability F(D) = P(Poisson(16 D / P) < 16). This plays
every grid configuration (``iosim.gpu.sdpa.compare``'s simulation: flash-attn-2 preset,
forward+backward, L2 model on) with the profile's L2 at 60 MiB and each request of a
partition hitting when its window's distinct bytes plus its own are at most P·F⁻¹(u), u a
hash of the chunk and of how many times it was requested before (a draw per request, the
same in every run); with ``--near``, a write also leaves a clean copy in its writer's
partition (measured: docs/validation/2026-12-03-l2-write-near.md). It replaces
``stack.play`` and ``partitions._partition`` in this process only, so the model's other
paths (copies of heads, samples, windows) are played as usual; the shipped model is not
changed. Windowed or sampled kernels keep their estimates (``model`` in the rows).

Run:  python benchmarks/l2_ways_experiment.py --out rows.json [--near] GRID_DIR ...
      python benchmarks/l2_ways_experiment.py --compare rows.json   (against the shipped model)
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import numpy as np

from iosim import Options, load_profile, simulate
from iosim.gpu import sdpa
from iosim.models.cache import partitions, stack

WAYS, L2_BYTES = 16, 62_914_560
_X = np.linspace(0, 4, 8001)


def _hit_probability(x: np.ndarray) -> np.ndarray:
    """F(x) = P(Poisson(WAYS x) < WAYS): a line hits when fewer than WAYS of the x × capacity
    bytes of its window share its set."""
    term = np.exp(-WAYS * x)
    total = term.copy()
    for k in range(1, WAYS):
        term = term * WAYS * x / k
        total += term
    return total


_F = _hit_probability(_X)


def _draws(keys: np.ndarray, occurrence: np.ndarray) -> np.ndarray:
    """A uniform number in [0, 1) per request, from its key and its occurrence."""
    h = keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) ^ occurrence.astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(31)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(29)
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def set_play(keys, sizes, writes, capacity, cuts=(), groups=None, hits=False, order=None):
    """stack.play with a capacity drawn per request (writes: 3 = a clean copy, no DRAM read)."""
    keys, sizes, writes = (np.asarray(a, np.int64) for a in (keys, sizes, writes))
    n = len(keys)
    if n == 0:
        return stack.play(keys, sizes, writes, capacity, cuts, groups, hits)
    order = np.argsort(keys, kind="stable") if order is None else order
    same, prev, nxt = stack.links(keys, order)
    first = np.maximum.accumulate(np.where(np.concatenate([[True], ~same]), np.arange(n), 0))
    occurrence = np.empty(n, np.int64)
    occurrence[order] = np.arange(n) - first
    cap = capacity * np.interp(_draws(keys, occurrence), _F[::-1], _X[::-1])
    total = np.concatenate([[0], np.cumsum(sizes)])
    again = np.flatnonzero(prev >= 0)
    start = prev[again]
    fits = total[again] - total[start + 1] + sizes[start] <= cap[again]
    need = stack._need(again[~fits], start[~fits], 1 << 62, again=again, prev=prev, nxt=np.where(nxt < 0, n, nxt),
                       sizes=sizes, total=total, band=None)
    fits[~fits] = need <= cap[again][~fits]
    hit = np.zeros(n, bool)
    hit[again] = fits
    return stack.counted(order, prev, nxt, sizes, np.where(writes == 3, 1, writes), hit, cuts,
                         capacity * np.interp(_draws(keys, occurrence + 1), _F[::-1], _X[::-1]), groups, hits,
                         dirtying=(writes == 1) | (writes == 2))


def near_partition(writers: dict):
    """partitions._partition with a written chunk's clean copy in its writer's partition."""
    def play_partition(p, keys, sizes, writes, sides, homes, looked, half, cuts, groups, order):
        near = (writes > 0) & (writers["sides"] == p) & (homes != p)
        mask = (sides == p) | (looked & (homes == p)) | near
        seen = np.flatnonzero(mask)
        w = np.where(sides[seen] == p, writes[seen], 0)
        w[near[seen]] = 3
        got = stack.play(keys[seen], sizes[seen], w, half, np.searchsorted(seen, list(cuts)),
                         None if groups is None else np.asarray(groups)[seen], hits=True,
                         order=(np.cumsum(mask) - 1)[order[mask[order]]])
        hit = np.zeros(len(keys), bool)
        hit[seen] = got.hits
        hit[near] = False
        return got, hit, seen
    return play_partition


def run(grids: list[str], near: bool) -> list[dict]:
    stack.play = set_play
    if near:
        writers, shipped = {}, partitions.play

        def play(keys, sizes, writes, sides, *args, **kw):
            writers["sides"] = np.asarray(sides, np.int64)
            return shipped(keys, sizes, writes, sides, *args, **kw)
        partitions.play, partitions._partition = play, near_partition(writers)
    profile = load_profile("h200")
    l2 = profile.cache
    profile = dataclasses.replace(profile, levels={**profile.levels, l2.name: dataclasses.replace(l2, capacity_bytes=L2_BYTES)})
    rows = []
    for grid in grids:
        for cfg, problem, launches in sdpa.raw_configs(grid):
            r = simulate(profile, "fa2", problem, passes="forward+backward", options=Options(kernel="flash-attn-2", cache=True))
            for launch in launches:
                kernel, measured = sdpa.label(launch["name"]), sdpa.measured_classes(launch["metrics"])
                s = r.cache.kernels[kernel]
                rows.append({"grid": grid, "config": cfg, "kernel": kernel, "dram_read": s.dram_read_bytes,
                             "dram_write": s.dram_write_bytes, "measured_read": measured["dram_read"],
                             "measured_write": measured["dram_write"],
                             "model": r.cache.sampled[kernel].model if kernel in (r.cache.sampled or {}) else "exact"})
    return rows


def compare(rows: list[dict]) -> None:
    """Main kernels' DRAM bytes within 10 % of ncu's: the experiment against the shipped model."""
    shipped = load_profile("h200")
    out = {}
    for grid in dict.fromkeys(r["grid"] for r in rows):
        mine = [r for r in rows if r["grid"] == grid]
        now = {}
        for cfg, problem, launches in sdpa.raw_configs(grid):
            res = simulate(shipped, "fa2", problem, passes="forward+backward", options=Options(kernel="flash-attn-2", cache=True))
            for launch in launches:
                k = sdpa.label(launch["name"])
                now[(json.dumps(cfg, sort_keys=True), k)] = res.cache.kernels[k]
        for r in mine:
            if r["kernel"] not in ("main", "dq_dk_dv"):
                continue
            s = now[(json.dumps(r["config"], sort_keys=True), r["kernel"])]
            t = out.setdefault(r["kernel"], [0, 0, 0, 0, 0, []])
            near = [v == m if not m else sdpa.within(v, m, 0.10) for v, m in ((s.dram_read_bytes, r["measured_read"]), (r["dram_read"], r["measured_read"]),
                                                            (s.dram_write_bytes, r["measured_write"]), (r["dram_write"], r["measured_write"]))]
            t[0] += 1
            for i, ok in enumerate(near):
                t[1 + i] += ok
            t[5].append((s.dram_read_bytes / r["measured_read"], r["dram_read"] / r["measured_read"]))
    print("| kernel | launches | reads within 10 %: shipped | sets | writes within 10 %: shipped | sets | reads, min–max: shipped | sets |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for k, (n, r0, r1, w0, w1, ratios) in out.items():
        a, b = zip(*ratios)
        print(f"| {k} | {n} | {r0} | {r1} | {w0} | {w1} | {min(a):.2f}–{max(a):.2f} | {min(b):.2f}–{max(b):.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grids", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--near", action="store_true")
    ap.add_argument("--compare")
    args = ap.parse_args()
    if args.compare:
        return compare(json.load(open(args.compare)))
    rows = run(args.grids, args.near)
    json.dump(rows, open(args.out, "w"), indent=1)
    print(f"{len(rows)} launches -> {args.out}")


if __name__ == "__main__":
    main()
