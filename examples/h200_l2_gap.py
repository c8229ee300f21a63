"""Why Theorem 2's count is not what the HBM moves: a worked H200 example (docs/cache.md).

    python examples/h200_l2_gap.py [OUT.png]

FlashAttention-2's forward pass (the flash-attn-2 kernel's tiles, 128 × 64 at d = 128),
16 heads, fp16, N from 2,048 to 32,768. For each N it prints, in bytes:

* the paper's count (``hbm``: every global access; Theorem 2's Θ(N²d²/M) per head),
* the L2 model's DRAM reads (``dram.read_bytes``),
* Q, K and V once (the least any kernel must read),
* and, where Nsight Compute measured PyTorch's kernel on an H200 at that shape
  (docs/validation/2026-11-29-sdpa-flash-attn-2-wide/), its DRAM reads.

With OUT.png it also draws them (log-log). The cache model runs a few seconds per N.
"""

from __future__ import annotations

import os
import sys

from iosim import Options, Problem, load_profile, simulate
from iosim.gpu.sdpa import label, raw_configs

HEADS, HEAD_DIM = 16, 128
SEQ_LENS = (2048, 4096, 8192, 16384, 32768)
MEASURED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "docs", "validation", "2026-11-29-sdpa-flash-attn-2-wide")


def measured_dram_reads() -> dict:
    """N -> DRAM bytes read by PyTorch's forward kernel at (1 × 16 heads, d = 128, not causal)."""
    out = {}
    for cfg, _, launches in raw_configs(MEASURED):
        forward = launches[0]  # each config ran one forward launch, then its backward
        if cfg["head_dim"] == HEAD_DIM and cfg["batch"] * cfg["heads"] == HEADS and not cfg["causal"] \
                and label(forward["name"]) == "main":
            out[cfg["seq_len"]] = int(forward["metrics"]["dram__bytes_read.sum"])
    return out


def rows() -> list[dict]:
    profile = load_profile("h200")
    measured = measured_dram_reads()
    out = []
    for n in SEQ_LENS:
        r = simulate(profile, "fa2", Problem(seq_len=n, head_dim=HEAD_DIM, heads=HEADS), options=Options(kernel="flash-attn-2", cache=True))
        out.append({"N": n, "theorem2_count_read": r.hbm.read_bytes, "model_dram_read": r.cache.total.dram_read_bytes,
                    "qkv_once": 3 * HEADS * n * HEAD_DIM * 2, "measured_dram_read": measured.get(n),
                    "l2_hit_rate": r.cache.total.hit_rate})
    return out


def plot(table: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["N"] for r in table]
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.plot(n, [r["theorem2_count_read"] for r in table], "o-", color="black", label="paper's count (every global read)")
    ax.plot(n, [r["model_dram_read"] for r in table], "s--", color="black", mfc="none", label="iosim L2 model: DRAM reads")
    ax.plot(n, [r["qkv_once"] for r in table], ":", color="gray", label="Q, K, V once")
    pts = [(r["N"], r["measured_dram_read"]) for r in table if r["measured_dram_read"]]
    if pts:
        ax.plot(*zip(*pts), "x", color="black", ms=9, label="H200, Nsight Compute: DRAM reads")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length N")
    ax.set_ylabel("bytes read, forward pass")
    ax.set_title(f"FlashAttention-2 forward on an H200, d = {HEAD_DIM}, {HEADS} heads, fp16", fontsize=10)
    ax.grid(True, which="major", lw=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    table = rows()
    print(f"{'N':>7} {'paper count (B)':>17} {'L2 model DRAM (B)':>18} {'ncu DRAM (B)':>14} {'Q,K,V once (B)':>15} "
          f"{'count / DRAM':>12} {'L2 hit':>7}")
    for r in table:
        m = f"{r['measured_dram_read']:,}" if r["measured_dram_read"] else "-"
        print(f"{r['N']:>7,} {r['theorem2_count_read']:>17,} {r['model_dram_read']:>18,} {m:>14} {r['qkv_once']:>15,} "
              f"{r['theorem2_count_read'] / r['model_dram_read']:>12.1f} {100 * r['l2_hit_rate']:>6.1f}%")
    if len(sys.argv) > 1:
        plot(table, sys.argv[1])


if __name__ == "__main__":
    main()
