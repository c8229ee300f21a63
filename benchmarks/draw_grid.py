"""Draw a prospective SDPA grid at random over issue 14's ranges, so that no one chooses its shapes.

Each draw: a head dim in 40..256 (three in four a multiple of 8, the rest any integer, which
PyTorch pads to the next multiple of 8); a kind of lengths: decode (one in four; N_q in
1..16 over N_kv log-uniform in 256..65,536), unequal (one in four; N_q, N_kv each log-uniform
in 128..65,536) or square (one in two; N log-uniform in 256..65,536); B · H log-uniform in
1..1,024, split into B (log-uniform in 1..B·H) and H = ⌊B·H / B⌋ (so B · H may come out below
the draw); a GQA ratio among 1, 1, 2, 4, 8 and H (MQA) where it divides H; causal by coin
where N_q = N_kv (PyTorch's flash backend refuses a causal mask with unequal lengths); fp16 or
bf16 by coin. A draw whose N_q · N_kv · B · H · d (halved if causal) passes ``--work``
(default 2.5e12, which keeps ncu's replays of a 16-shape grid near two minutes) is drawn
again; a bound no shape can meet is an error (exit 2).

Run:  python benchmarks/draw_grid.py --seed 2026120537 [--count 16]
prints the grid's ``configs`` as ``benchmarks/sdpa_grids_drawn.py`` writes them:
(N_q, N_kv, B, H, H_kv, causal, dtype) per head dim.
"""

from __future__ import annotations

import argparse
import math
import random
import sys


#: draws tried before giving up on a work bound too small for ``count`` shapes
MAX_TRIES = 1_000_000


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def _lengths(rng: random.Random) -> tuple[int, int]:
    kind = rng.choice(("decode", "unequal", "square", "square"))
    if kind == "decode":
        return rng.randint(1, 16), _log_uniform(rng, 256, 65536)
    if kind == "unequal":
        return _log_uniform(rng, 128, 65536), _log_uniform(rng, 128, 65536)
    n = _log_uniform(rng, 256, 65536)
    return n, n


def draw_one(rng: random.Random) -> tuple:
    """One configuration: (d, N_q, N_kv, B, H, H_kv, causal, dtype)."""
    d = rng.randrange(40, 257, 8) if rng.random() < 0.75 else rng.randint(40, 256)
    n_q, n_kv = _lengths(rng)
    bh = _log_uniform(rng, 1, 1024)
    b = max(1, min(bh, _log_uniform(rng, 1, bh)))
    h = max(1, bh // b)
    ratio = rng.choice((1, 1, 2, 4, 8, h))
    h_kv = h // ratio if h % ratio == 0 else h
    causal = n_q == n_kv and rng.random() < 0.5
    return d, n_q, n_kv, b, h, h_kv, causal, rng.choice(("fp16", "bf16"))


def draw(seed: int, count: int = 16, work: float = 2.5e12) -> dict[int, list[tuple]]:
    """``count`` draws within ``work``, grouped by head dim (ascending), in the order drawn."""
    rng = random.Random(seed)
    out: dict[int, list[tuple]] = {}
    drawn = tries = 0
    while drawn < count:
        if tries == MAX_TRIES:
            raise ValueError(f"{drawn} of {count} shapes within work {work:g} after {MAX_TRIES:,} draws; raise --work")
        tries += 1
        d, n_q, n_kv, b, h, h_kv, causal, dtype = draw_one(rng)
        if n_q * n_kv * b * h * d * (0.5 if causal else 1) <= work:
            out.setdefault(d, []).append((n_q, n_kv, b, h, h_kv, causal, dtype))
            drawn += 1
    return dict(sorted(out.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, default=16)
    ap.add_argument("--work", type=float, default=2.5e12)
    args = ap.parse_args()
    try:
        configs = draw(args.seed, args.count, args.work)
    except ValueError as exc:
        print(f"draw_grid.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
    print(f"head_dims={tuple(configs)}, configs={{")
    for d, rows in configs.items():
        print(f"    {d}: {tuple(rows)!r},")
    print("}")


if __name__ == "__main__":
    main()
