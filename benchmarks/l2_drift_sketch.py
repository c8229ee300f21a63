"""Would thread blocks that drift out of lockstep explain the DRAM the many-head causal forwards
read beyond iosim's L2 model? A sketch, outside the model (docs/validation/2026-12-04-s29-heads.md).

iosim's L2 model plays resident thread blocks in lockstep: each issues its next request in turn.
This script builds flash-attn 2's forward request stream (Q, then K and V of each key block
from the last down, then O; chunks of 64 rows) for one shape and times it three ways before
playing it through iosim's two partitions of 16-way hashed sets (``partitions.played``):

* ``lock``: every block at the same rate (what the model does);
* ``share``: each SM's two slots share its tensor cores, a pair stepping at 1 / (2 r) of a lone
  block's rate (r: the kernel's measured pair factor, ``iosim.kernels.coresidency``), a block
  alone at 1, and each block spends ``--pre`` and ``--post`` steps' time on its prologue and
  epilogue, during which its partner runs alone;
* ``share`` with ``--jitter s``: each block's rate also times exp(s · z), z normal (seeded).

    python benchmarks/l2_drift_sketch.py 4096 128 --heads 128 --causal     # d = 128: B_r 128, B_c 64
    python benchmarks/l2_drift_sketch.py 4096 64 --heads 128 --causal --block-kv 128

It prints each play's DRAM reads and their ratio to Q, K and V once. A sketch: no spill frames,
code or LSE, and the slots' sides are the model's (SM index halves).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from iosim.models.cache import partitions  # noqa: E402

SMS, PER_SM, ROWS = 132, 2, 64
L2_BYTES = 60 * 2 ** 20


def blocks(n: int, block_q: int, block_kv: int, heads: int, causal: bool) -> tuple[list, np.ndarray]:
    """(head, query block) and key-block steps of every thread block, in launch order."""
    tc = -(-n // block_kv)
    ids = [(h, m) for h in range(heads) for m in range(-(-n // block_q))]
    steps = [min(tc, -(-min((m + 1) * block_q, n) // block_kv)) if causal else tc for _, m in ids]
    return ids, np.array(steps)


def timed(steps: np.ndarray, r: float, pre: float, post: float, lock: bool, jitter: float, dt: float = 0.02,
          per_sm: int = PER_SM):
    """(slot, the time each step starts, end) of every block, in launch order; time in a lone step's."""
    n, slots = len(steps), SMS * per_sm
    rate_of = np.exp(jitter * np.random.default_rng(1).standard_normal(n))
    g, phase, rem, prog = np.full(slots, -1), np.zeros(slots, int), np.zeros(slots), np.zeros(slots)
    slot, starts, end, nxt, t = np.zeros(n, int), [[] for _ in range(n)], np.zeros(n), 0, 0.0
    sm = np.arange(slots) % SMS

    def put(s: int) -> None:
        nonlocal nxt
        g[s] = nxt if nxt < n else -1
        if nxt < n:
            phase[s], rem[s], prog[s], slot[nxt] = 0, pre, 0.0, s
            nxt += 1

    for s in range(slots):
        put(s)
    while (g >= 0).any():
        stepping = (g >= 0) & (phase == 1)
        pair = np.bincount(sm[stepping], minlength=SMS)[sm] >= 2
        dp = np.where(stepping, np.where(pair & (not lock), 1 / (2 * r), 1.0) * rate_of[np.maximum(g, 0)] * dt, 0.0)
        for s in np.flatnonzero(stepping & (np.floor(prog + dp) > np.floor(prog))):
            starts[g[s]] += [t + dt * (j - prog[s]) / dp[s] for j in range(int(prog[s]) + 1, int(prog[s] + dp[s]) + 1)]
        prog += dp
        rem = np.where(g >= 0, rem - np.where(stepping, dp, dt), rem)
        t += dt
        for s in np.flatnonzero((g >= 0) & (rem <= 1e-9)):
            if phase[s] == 0:
                phase[s], rem[s] = 1, steps[g[s]]
                starts[g[s]].insert(0, t)
            elif phase[s] == 1:
                phase[s], rem[s] = 2, post
            else:
                end[g[s]] = t
                put(s)
    return slot, starts, end


def requests(ids: list, steps: np.ndarray, timing, block_q: int, block_kv: int,
             side_of: np.ndarray | None = None) -> tuple:
    """The stream in time order: (keys (head, tensor: 0 Q, 1 K, 2 V, 3 O, chunk), writes, sides); a
    block's side is its SM's in ``side_of`` (indexed by SM), or by default the SM's index half."""
    slot, starts, end = timing
    if side_of is None:
        side_of = partitions.sides(np.arange(SMS), SMS)
    kv_chunks, q_chunks = max(1, block_kv // ROWS), block_q // ROWS
    key, when, write, side = [], [], [], []
    for b, (h, m) in enumerate(ids):
        s, at = int(side_of[slot[b] % SMS]), starts[b]
        reqs = [((h, 0, m * q_chunks + c), at[0] - 1e-6, 0) for c in range(q_chunks)]
        for k in range(steps[b]):
            j = steps[b] - 1 - k                              # flash-attn walks the key blocks down
            reqs += [((h, t, j * kv_chunks + c), at[k] + 1e-7 * t, 0) for c in range(kv_chunks) for t in (1, 2)]
        reqs += [((h, 3, m * q_chunks + c), end[b] - 1e-6, 1) for c in range(q_chunks)]
        for k_, w_, wr in reqs:
            key.append(k_), when.append(w_), write.append(wr), side.append(s)
    order = np.argsort(np.array(when), kind="stable")
    return np.array(key)[order], np.array(write)[order], np.array(side)[order]


def dram_read(ids: list, steps: np.ndarray, timing, d: int, block_q: int, block_kv: int,
              placement: str | None = None) -> float:
    """The stream's DRAM reads (bytes) through iosim's two partitions of 16-way sets, or, given a
    ``placement`` (a set map of :mod:`l2_address_sketch`), line by line with (H, N, d) addresses."""
    k, write, side = requests(ids, steps, timing, block_q, block_kv)
    return played_bytes(k, write, side, d, placement)


def played_bytes(k: np.ndarray, write, side, d: int, placement: str | None = None, sample: int = 512,
                 heads: int | None = None) -> float:
    """DRAM bytes of a stream of :func:`requests`' keys (head, tensor, chunk): through iosim's two
    partitions of 16-way sets, or line by line at (H, N, d) addresses on the set map ``placement``
    (``heads``: the heads the addresses lay out, by default those the stream names)."""
    size = np.full(len(k), ROWS * d * 2)
    if placement is not None:
        import l2_address_sketch as sk
        chunks = int(k[:, 2].max()) + 1
        heads = heads or int(k[:, 0].max()) + 1
        start = (k[:, 1] * (heads * chunks + 64) + k[:, 0] * chunks + k[:, 2]) * ROWS * d * 2
        return sk.dram_read(start, size, side, write, placement, sample)
    ids_ = k[:, 0] * 10 ** 8 + k[:, 1] * 10 ** 7 + k[:, 2]
    parts = np.stack([k[:, 0], k[:, 1] * 10 ** 6 + k[:, 2], np.zeros(len(k), np.int64)], 1)
    played = partitions.played(parts, ids_, size, write, side, L2_BYTES, ways=16)
    return played.stats.dram_read_bytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int)
    ap.add_argument("d", type=int)
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--block-q", type=int, default=128)
    ap.add_argument("--block-kv", type=int, default=64)
    ap.add_argument("--pair", type=float, default=0.798, help="pair factor r (d = 128's, coresidency.FACTORS)")
    ap.add_argument("--pre", type=float, default=0.5)
    ap.add_argument("--post", type=float, default=0.3)
    ap.add_argument("--jitter", type=float, nargs="*", default=[0.03, 0.06, 0.12])
    ap.add_argument("--placement", choices=["pages", "xor", "lines"],
                    help="play lines at (H, N, d) addresses on this set map (l2_address_sketch.py)")
    ap.add_argument("--per-sm", type=int, default=PER_SM, help="blocks an SM (flash-attn's forward: 2)")
    a = ap.parse_args()
    ids, steps = blocks(a.n, a.block_q, a.block_kv, a.heads, a.causal)
    once = 3 * a.n * a.d * 2 * a.heads
    for label, lock, jitter in [("lock", True, 0.0), ("share", False, 0.0)] + [("share", False, s) for s in a.jitter]:
        timing = timed(steps, a.pair, a.pre, a.post, lock, jitter, per_sm=a.per_sm)
        got = dram_read(ids, steps, timing, a.d, a.block_q, a.block_kv, a.placement)
        print(f"{label:5s} jitter {jitter:.2f}: {got / 1e6:8.1f} MB  {got / once:.3f} x Q, K, V once", flush=True)


if __name__ == "__main__":
    main()
