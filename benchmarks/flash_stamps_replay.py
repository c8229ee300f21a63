"""flash-attn 2's forward, block by block, from the stamps of ``flash_stamps/stamped_fwd.cu``: each
block's start, end and SM, its key-block steps spread over its span, and the L2 played in the
order the GPU ran them (benchmarks/flash_stamps.py drives the measurement;
docs/validation/2026-12-05-flash-stamps.md).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SMS = 132
WAVE_NS = 2_000          # blocks that start within 2 µs of the launch's first are its first wave


def read_stamps(path: str, blocks: int) -> list[tuple[float, np.ndarray, np.ndarray, np.ndarray]]:
    """Every run in a stamps file: (the launch's time, ns; each block's start and end, ns from the
    first block's start; each block's SM), blocks in launch order. A file ending .gz is read
    through gzip (the committed stamps are)."""
    if path.endswith(".gz"):
        import gzip
        with gzip.open(path, "rb") as f:
            raw = np.frombuffer(f.read(), dtype=np.uint64)
    else:
        raw = np.fromfile(path, dtype=np.uint64)
    per = 1 + 3 * blocks
    if raw.size == 0 or raw.size % per:
        raise SystemExit(f"{path}: {raw.size} words, not runs of {per} for {blocks} blocks")
    out = []
    for run in raw.reshape(-1, per):
        start, end = run[1::3].astype(np.int64), run[2::3].astype(np.int64)
        t0 = start.min()
        out.append((float(run[0]), (start - t0).astype(np.float64), (end - t0).astype(np.float64),
                    run[3::3].astype(np.int64)))
    return out


def blocks_of(cfg: dict, tile: tuple[int, int]) -> tuple[list, np.ndarray]:
    """((launch index over B·H, query block) of every thread block in launch order, its key-block
    steps): flash's grid (ceil(N / kBlockM), B, H), x fastest; a causal block walks
    min(ceil(N / kBlockN), ceil((m + 1) · kBlockM / kBlockN)) key blocks."""
    from l2_drift_sketch import blocks
    return blocks(cfg["seq_len"], tile[0], tile[1], cfg["batch"] * cfg["heads"], cfg["causal"])


def per_sm(start: np.ndarray, sm: np.ndarray) -> int:
    """Blocks an SM: the most that start on one SM in the launch's first wave."""
    first = start < WAVE_NS
    return int(np.bincount(sm[first]).max()) if first.any() else 1


def dispatch_order(start: np.ndarray, sm: np.ndarray) -> np.ndarray:
    """The SM of each first-wave slot in the order the GPU filled them: the SMs of the first
    per_sm · SMS blocks in launch order, not in order of their stamped starts: the global timer
    steps by 32 ns, and the H200 dispatches a whole first wave within about 8 of its steps."""
    first = sm[:per_sm(start, sm) * SMS]
    if np.bincount(first, minlength=SMS).min() != len(first) // SMS:
        raise SystemExit("the first wave's blocks in launch order do not fill every SM alike")
    return first


def step_times(start: np.ndarray, end: np.ndarray, steps: np.ndarray, pre: float = 0.5,
               post: float = 0.3) -> list[list[float]]:
    """When each block starts each of its key-block steps: evenly over its span, after a prologue
    of ``pre`` and before an epilogue of ``post`` steps' time (l2_drift_sketch's defaults)."""
    out = []
    for s, e, k in zip(start.tolist(), end.tolist(), steps.tolist()):
        step = max(e - s, 1.0) / (k + pre + post)
        out.append([s + (pre + j) * step for j in range(k + 1)])
    return out


def paired_step_times(start: np.ndarray, end: np.ndarray, sm: np.ndarray, steps: np.ndarray, pair: float,
                      pre: float = 0.5, post: float = 0.3) -> list[list[float]]:
    """As :func:`step_times`, but each block's progress over its span weighted by how many blocks
    its SM holds at each moment (from the stamps): 1 alone, 1 / (c · ``pair``) among c, ``pair``
    being the kernel's measured co-residency factor (iosim.kernels.coresidency; two blocks each
    step at 1 / (2 · pair) of a lone block's rate)."""
    out: list[list[float]] = [[] for _ in range(len(start))]
    for s in np.unique(sm):
        mine = np.flatnonzero(sm == s)
        cuts = np.unique(np.r_[start[mine], end[mine]])
        mid = (cuts[:-1] + cuts[1:]) / 2
        held = ((start[mine][:, None] <= mid) & (mid < end[mine][:, None])).sum(0)
        rate = np.where(held <= 1, 1.0, 1.0 / (np.maximum(held, 1) * pair))
        weight = np.r_[0.0, np.cumsum(rate * np.diff(cuts))]          # progress at each cut
        for b in mine:
            w0, w1 = np.interp([start[b], end[b]], cuts, weight)
            k = int(steps[b])
            at = w0 + (w1 - w0) * (pre + np.arange(k + 1)) / (k + pre + post)
            out[b] = np.interp(at, weight, cuts).tolist()
    return out


def spread(start: np.ndarray, end: np.ndarray, steps: np.ndarray, least: int = 64) -> float | None:
    """How far blocks part in pace: the 90th less the 10th percentile of a step's time over its
    median, among blocks of ``least`` steps or more past the first wave (None if too few)."""
    keep = (steps >= least) & (start >= WAVE_NS)
    if keep.sum() < 20:
        return None
    rate = (end[keep] - start[keep]) / steps[keep]
    p10, p50, p90 = np.percentile(rate, [10, 50, 90])
    return float((p90 - p10) / p50)


def memory_head(launch_head: np.ndarray, cfg: dict) -> np.ndarray:
    """A block's head in memory, b · H + h, from its place in launch order over (B, H), h · B + b
    (flash's grid (m, b, h), x fastest)."""
    return (launch_head % cfg["batch"]) * cfg["heads"] + launch_head // cfg["batch"]


def sm_spread(start: np.ndarray, end: np.ndarray, steps: np.ndarray, sm: np.ndarray, least: int = 64,
              blocks: int = 3) -> float | None:
    """How far SMs part in pace: the spread (90th less 10th percentile over the median) of each SM's
    median step time, over its blocks of ``least`` steps or more past the first wave, counting only
    SMs with ``blocks`` such blocks or more (an SM's median of one block is that block's pace). Where
    it is near :func:`spread`, the drift is the SMs' own (their clocks, their distance from the data);
    where it is far below, it is the blocks'. None if fewer than 20 SMs count."""
    keep = (steps >= least) & (start >= WAVE_NS)
    rate = (end - start) / np.maximum(steps, 1)
    counts = np.bincount(sm[keep], minlength=int(sm.max()) + 1)
    per = [np.median(rate[keep & (sm == s)]) for s in np.flatnonzero(counts >= blocks)]
    if len(per) < 20:
        return None
    p10, p50, p90 = np.percentile(per, [10, 50, 90])
    return float((p90 - p10) / p50)


def dram_read(cfg: dict, tile: tuple[int, int], timing, placement: str | None, sample: int = 512,
              side_of: np.ndarray | None = None) -> float:
    """DRAM bytes the forward reads played in the order ``timing`` gives ((slot, step times, end)
    of each block; slot < SMS: the SM, whose half is its side), through iosim's two partitions of
    16-way sets at random (``placement`` None) or, line by line, at (B, H, N, d) addresses on the set
    map ``placement`` (l2_address_sketch.py). The stream is Q, K and V tiles and O; no code, LSE
    or spill frames. ``side_of``: each SM's partition (by default its index half)."""
    from l2_drift_sketch import played_bytes, requests
    ids, steps = blocks_of(cfg, tile)
    k, write, side = requests(ids, steps, timing, tile[0], tile[1], side_of)
    k[:, 0] = memory_head(k[:, 0], cfg)
    return played_bytes(k, write, side, cfg["head_dim"], placement, sample, heads=cfg["batch"] * cfg["heads"])


def measured_timing(start: np.ndarray, end: np.ndarray, sm: np.ndarray, steps: np.ndarray,
                    pair: float | None = None) -> tuple:
    """(slot, step times, end) of every block as the stamps have them, for :func:`dram_read`: the
    steps even over each block's span, or, given ``pair``, paced by its SM's company
    (:func:`paired_step_times`)."""
    times = step_times(start, end, steps) if pair is None else paired_step_times(start, end, sm, steps, pair)
    return sm, times, end


def lockstep_timing(cfg: dict, tile: tuple[int, int], slots: int, dispatch=None) -> tuple:
    """The same launch with every block at one rate, taking the first slot to free (the model's
    play), for :func:`dram_read`: slot s on SM s mod SMS, or, given ``dispatch`` (the SM of each
    first-wave slot in the order the GPU filled them), on SM dispatch[s]."""
    from l2_drift_sketch import timed
    _, steps = blocks_of(cfg, tile)
    slot, starts, end = timed(steps, 1.0, 0.5, 0.3, True, 0.0, per_sm=slots)
    return (slot % SMS if dispatch is None else np.asarray(dispatch)[slot]), starts, end


def reuse_mb(cfg: dict, tile: tuple[int, int], timing) -> tuple[float, float]:
    """How far apart in traffic a K tile's consecutive readers come: the median and 90th
    percentile, MB, of the time between two blocks' reads of one K tile times the launch's mean
    rate of K and V tile reads (bytes over span). In lockstep a head's blocks read a tile within a
    few steps of each other; drift spreads them."""
    ids, steps = blocks_of(cfg, tile)
    slot, starts, end = timing
    tile_bytes = 2 * tile[1] * cfg["head_dim"] * 2
    head, key, when = [], [], []
    for b, (h, _) in enumerate(ids):
        k = int(steps[b])
        head.append(np.full(k, h)), key.append(np.arange(k - 1, -1, -1)), when.append(np.asarray(starts[b][:k]))
    head, key, when = np.concatenate(head), np.concatenate(key), np.concatenate(when)
    order = np.lexsort((when, key, head))
    same = (np.diff(head[order]) == 0) & (np.diff(key[order]) == 0)
    gaps = np.diff(when[order])[same]
    rate = len(when) * tile_bytes / max(float(np.max(end) - np.min(when)), 1.0)
    if gaps.size == 0:
        return 0.0, 0.0
    return float(np.median(gaps) * rate / 1e6), float(np.percentile(gaps, 90) * rate / 1e6)
