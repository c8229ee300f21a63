"""Would placing each line by its address explain the long causal forwards' DRAM reads? A
sketch, outside the model (docs/validation/2026-12-04-l2-address.md).

iosim's L2 model has no addresses: it plays every chunk as if its lines fell on 16-way sets at
random (docs/cache.md, "Sets"). The H200's microbenchmarks say otherwise for runs of consecutive
lines: a contiguous buffer fills the sets evenly (`2026-12-04-l2-scan.md`), while pieces of 16 KiB
and less, at random or at a head's stride, fall as at random (`2026-12-03-l2-scatter.md`).

This script takes the very request stream iosim plays for one measured launch (the flash-attn 2
forward, its thread blocks in lockstep, their sides the model's), gives every chunk its address
in (B, H, N, d) tensors (each tensor at its own 2 MiB-aligned base), and plays the stream line
by line through two partitions of LRU sets, with the model's two-partition rule (a read looks up
its side's partition, then the line's home; a write is done at its home and held near its
writer), under one of three set maps:

* ``pages``: the line's set is its place in a page of one way's lines (1.875 MiB) plus an offset
  drawn for the page. A run of consecutive lines fills the sets evenly; pieces in different
  pages collide at random: what the microbenchmarks show.
* ``xor``: each set bit is a line-address bit XOR a random subset of higher bits (a linear hash:
  any aligned strided pattern also fills the sets evenly); 16,384 sets of 15 ways.
* ``lines``: every line on a set drawn at random.

Only every k-th set is played, k = sets // ``--sample`` (set sampling), and its misses are scaled
by k. (The first predictions of 2026-12-04-l2-address.md played the sets below ``--sample``
instead: a run of consecutive sets is a run of consecutive lines under ``pages``, so that
sample came in clumps and was noisy on small or partly covered pages.) A line's home is a hash
of its address (``xor``: a parity of its bits).

    python benchmarks/l2_address_sketch.py docs/validation/2026-12-03-s19-check '{"head_dim": 256, "causal": true}'
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # sdpa_grids, for --grid

LINE = 128
PART = 30 * 2 ** 20          # bytes a partition (docs/cache.md, "Sets")
MAPS = ("pages", "xor", "lines")


def mix(x) -> np.ndarray:
    """splitmix64 of each value."""
    with np.errstate(over="ignore"):
        x = np.asarray(x, np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _parity(x: np.ndarray) -> np.ndarray:
    for shift in (32, 16, 8, 4, 2, 1):
        x = x ^ (x >> np.uint64(shift))
    return (x & np.uint64(1)).astype(np.int64)


class SetMap:
    """Where a line goes: (sets, ways) of a partition, and each line's set and home."""

    def __init__(self, kind: str, seed: int = 12345):
        self.kind = kind
        self.ways = 15 if kind == "xor" else 16
        self.sets = PART // LINE // self.ways
        rng = np.random.default_rng(seed)
        self.masks = [(1 << b) | (int(rng.integers(0, 1 << 22)) << 14) for b in range(14)]
        self.home_mask = int(rng.integers(1, 1 << 36))

    def place(self, line: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(set, home partition) of each line address."""
        u = np.asarray(line, np.int64).astype(np.uint64)
        if self.kind == "xor":
            st = np.zeros(len(u), np.int64)
            for b, m in enumerate(self.masks):
                st |= _parity(u & np.uint64(m)) << b
            return st, _parity(u & np.uint64(self.home_mask))
        home = (mix(u * np.uint64(3) + np.uint64(11)) >> np.uint64(63)).astype(np.int64)
        if self.kind == "lines":
            return (mix(u * np.uint64(5) + np.uint64(3)) % np.uint64(self.sets)).astype(np.int64), home
        page, at = np.divmod(np.asarray(line, np.int64), self.sets)
        return (at + (mix(page + 1) % np.uint64(self.sets)).astype(np.int64)) % self.sets, home


def addresses(key_parts: np.ndarray, size: np.ndarray, tensors: dict, chunk_rows: int = 64) -> np.ndarray:
    """Each chunk's first byte in (B, H, N, d) tensors: its head's rows contiguous, the chunk's
    rows [first, first + rows) whole (the forward's tiles cover every column); every tensor at
    its own 2 MiB-aligned base, a random 0-7 pages of 2 MiB apart."""
    head, hi, lo = (key_parts[:, i].astype(np.int64) for i in range(3))
    tensor, col = (hi >> 26) >> 9, hi & ((1 << 26) - 1)
    first, rows = np.divmod(lo, chunk_rows + 1)
    out, base = np.zeros(len(head), np.int64), 0
    for t in sorted(set(tensor.tolist())):
        m = tensor == t
        row_bytes = int((size[m] // np.maximum(rows[m], 1)).max())
        per_head = int((first[m] + rows[m]).max()) * row_bytes
        out[m] = base + head[m] * per_head + first[m] * row_bytes + col[m]
        span = (int(head[m].max()) + 1) * per_head
        base += (-(-span // (2 << 20)) + int(mix(t + 7) % np.uint64(8))) * (2 << 20)
    return out


def sampled_lines(start: np.ndarray, size: np.ndarray, where: SetMap, sample: int) -> tuple:
    """(request, line, set, home) of every line the requests touch whose set is a multiple of
    sets // ``sample``."""
    l0, l1 = start // LINE, (start + size - 1) // LINE + 1
    n = l1 - l0
    req, line, st, home = [], [], [], []
    for lo in range(0, len(n), 50_000):          # in pieces: a long stream has 10^8 lines
        nn = n[lo:lo + 50_000]
        r = np.repeat(np.arange(lo, lo + len(nn)), nn)
        ln = l0[r] + (np.arange(int(nn.sum())) - np.repeat(np.cumsum(nn) - nn, nn))
        s, h = where.place(ln)
        keep = s % (where.sets // sample) == 0
        req.append(r[keep]), line.append(ln[keep]), st.append(s[keep]), home.append(h[keep])
    return tuple(np.concatenate(a) for a in (req, line, st, home))


def play(req, line, st, home, sides, writes, ways: int) -> int:
    """Line misses read from DRAM, through two partitions of LRU sets (the model's rule)."""
    parts = [{}, {}]

    def touch(p: int, s: int, ln: int) -> bool:
        q = parts[p].setdefault(s, [])
        if ln in q:
            q.remove(ln)
            q.append(ln)
            return True
        q.append(ln)
        if len(q) > ways:
            del q[0]
        return False

    misses = 0
    for r, ln, s, h in zip(req.tolist(), line.tolist(), st.tolist(), home.tolist()):
        side = int(sides[r])
        if writes[r]:
            touch(h, s, ln)
            touch(side, s, ln)
        elif not touch(side, s, ln) and (h == side or not touch(h, s, ln)):
            misses += 1
    return misses


def launch_stream(run, kernel: str | None = None):
    """(stream, tensors, iosim's DRAM reads) of ``kernel``'s launch (None: the first) as iosim plays
    it in ``run()``, a call of :func:`iosim.simulate` with the L2 model on."""
    from iosim.models.cache.programs import head_programs
    from iosim.models.cache.stream import stream
    from iosim.run import launches
    calls, real = [], launches.plan
    launches.plan = lambda recorded, **kw: calls.append((recorded, kw)) or real(recorded, **kw)
    try:
        res = run()
    finally:
        launches.plan = real
    for recorded, kw in calls:
        progs = head_programs(list(recorded), 64)
        name = kernel or next(iter(progs), None)
        if name in progs:
            s = stream(progs[name], kw["heads_total"], kw["concurrency"][name], kw["kv_of_q"], kw["leads_group"],
                       sides=kw["sides"])
            return s, progs[name].tensors, res.to_dict()["l2"]["per_kernel"][name]["dram_read_bytes"]
    raise SystemExit(f"no {kernel} launch")


def flash_forward(problem, passes: str = "forward"):
    """``run`` for :func:`launch_stream`: PyTorch's flash-attn 2 ``passes`` of ``problem`` on the H200."""
    from iosim import Options, load_profile, simulate
    return lambda: simulate(load_profile("h200"), "fa2", problem, passes=passes,
                            options=Options(kernel="flash-attn-2", cache=True))


def dram_read(start: np.ndarray, size: np.ndarray, sides, writes, kind: str, sample: int = 512) -> int:
    """DRAM bytes the requests (first byte ``start``, ``size`` bytes, in stream order) read under
    the set map ``kind``: the sampled sets' line misses (:func:`play`), scaled by sets // ``sample``."""
    where = SetMap(kind)
    req, line, st, home = sampled_lines(start, size, where, sample)
    return play(req, line, st, home, sides, writes, where.ways) * LINE * (where.sets // sample)


def sketch(run, maps: list, sample: int, kernel: str | None = "main") -> dict:
    """DRAM bytes read under each set map, and iosim's."""
    s, tensors, model = launch_stream(run, kernel)
    start = addresses(s.key_parts, s.size, tensors)
    out = {"model": model, "requests": len(s.size)}
    for kind in maps:
        out[kind] = dram_read(start, s.size, s.side, s.write, kind, sample)
    return out


def rough_requests(cfg: dict) -> float:
    """A rough count of the requests the forward of ``cfg`` plays (K and V tiles of 64 keys for
    each query block of 128 rows; half when causal), only to skip the longest before playing them:
    the stream's real count differs by up to about 2 × either way (other tiles, merged requests)."""
    n_q, n_kv = cfg.get("seq_len_q") or cfg["seq_len"], cfg.get("seq_len_kv") or cfg["seq_len"]
    return cfg["batch"] * cfg["heads"] * (n_q / 128 + 1) * (n_kv / 64 + 1) * 2 * (0.5 if cfg["causal"] else 1)


def measured_rows(raw: str, want: dict, maps: list, sample: int, max_requests: float, kernel: str = "main") -> list:
    """The sketch beside the measured DRAM reads of every forward (``kernel`` "dq_dk_dv": backward) of a
    run in ``raw`` whose config has the fields ``want`` ((B, H, N, d) inputs, at most ``max_requests``)."""
    from iosim.gpu import sdpa
    rows = []
    for cfg, problem, launches in sdpa.raw_configs(raw):
        if any(cfg.get(k) != v for k, v in want.items()) or cfg.get("layout", "bhnd") != "bhnd":
            continue
        main_launch = [x for x in launches if sdpa.label(x["name"]) == kernel]
        if not main_launch or rough_requests(cfg) > max_requests:
            continue
        measured = sdpa.measured_classes(main_launch[0]["metrics"])["dram_read"]
        t = time.time()
        got = sketch(flash_forward(problem, "forward+backward" if kernel == "dq_dk_dv" else "forward"), maps,
                     sample, kernel)
        rows.append({"config": cfg, "measured": measured, **got})
        cells = " | ".join(f"{got[k] / measured:.2f}" for k in ["model", *maps])
        print(f"| {json.dumps(cfg)} | {measured / 1e6:.1f} | {cells} |  ({got['requests']:,} requests, "
              f"{time.time() - t:.0f} s)", flush=True)
    return rows


def grid_rows(name: str, maps: list, sample: int, max_requests: float) -> dict:
    """The sketch of every forward of ``benchmarks/sdpa_grids.py``'s grid ``name`` whose launch has a
    main kernel, before any measurement (a prospective check's second prediction)."""
    import sdpa_grids
    from iosim.gpu.sdpa import problem_of
    rows = []
    for d in sdpa_grids.GRIDS[name]["head_dims"]:
        for cfg in sdpa_grids.grid(d, name):
            if rough_requests(cfg) > max_requests:
                continue
            try:
                rows.append({"config": cfg, **sketch(flash_forward(problem_of(cfg)), maps, sample)})
            except SystemExit:          # a split-KV forward: no main kernel
                continue
            print(json.dumps(rows[-1]), flush=True)
    return {"written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw", nargs="?", help="a benchmarks/sdpa_ncu.py run's directory")
    ap.add_argument("match", nargs="?", default="{}", help="JSON: the config fields a launch must have (default {})")
    ap.add_argument("--grid", help="instead of a run: every forward of this grid of benchmarks/sdpa_grids.py")
    ap.add_argument("--maps", default="pages,xor,lines")
    ap.add_argument("--sample", type=int, default=512, help="sets played a partition")
    ap.add_argument("--max-requests", type=float, default=float("inf"),
                    help="skip configs of more requests than this (roughly: rough_requests)")
    ap.add_argument("--json", help="write the rows here too")
    ap.add_argument("--kernel", default="main", choices=("main", "dq_dk_dv"),
                    help="the forward's main kernel (default) or the backward's")
    a = ap.parse_args(argv)
    maps = a.maps.split(",")
    if any(m not in MAPS for m in maps):
        raise SystemExit(f"--maps: one of {', '.join(MAPS)}")
    if (a.raw is None) == (a.grid is None):
        raise SystemExit("give a run's directory or --grid NAME")
    rows = grid_rows(a.grid, maps, a.sample, a.max_requests) if a.grid else \
        measured_rows(a.raw, json.loads(a.match), maps, a.sample, a.max_requests, a.kernel)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
