"""Reproduce every figure of the article "What is FlashAttention?" with iosim's own code.

Run:  python examples/seed_worked_examples.py

Each function returns the figure(s) it reproduces; ``main`` prints them beside the
article's value. tests/counts/test_seed_examples.py runs these functions and checks each one.
"""

from __future__ import annotations

import numpy as np

from iosim import Options, Problem, load_profile, paper_block_sizes, simulate, sram_elements
from iosim.engine.tensors import FORWARD_TENSORS
from iosim.models.theory import theorem2

TENSORS = {t.name: t for t in FORWARD_TENSORS}
MiB, GiB = 1 << 20, 1 << 30


def paper_a100_figures() -> dict:
    """Step 1: the paper's A100 (HBM 1.5–2.0 TB/s, 192 KB SRAM per SM, 108 SMs, ~19 TB/s)."""
    p = load_profile("fa-paper-a100")
    hbm = p.path(p.dram.name, p.scratchpad.name)[0].bandwidth_bytes_per_s
    sram = max(link.bandwidth_bytes_per_s for link in p.links)
    return {
        "sm_count": p.sm_count,
        "sram_per_sm_bytes": p.scratchpad.capacity_bytes,
        "hbm_tb_s": hbm / 1e12,
        "sram_tb_s": sram / 1e12,
        "sram_over_hbm": sram / hbm,
    }


def score_matrix_sizes() -> dict:
    """Step 1 / Worked example: one head's fp16 N×N score matrix S, in bytes."""
    def s_bytes(n: int, heads: int = 1) -> int:
        problem = Problem(seq_len=n, head_dim=128, heads=heads)
        return TENSORS["S"].elements(problem) * problem.width * heads

    return {
        "N=8192, one head": s_bytes(8192),
        "N=8192, 32 heads": s_bytes(8192, 32),
        "N=131072, one head": s_bytes(131072),
        "4x tokens -> x": s_bytes(4 * 8192) // s_bytes(8192),
    }


def online_softmax_example(value_vectors: np.ndarray | None = None) -> dict:
    """Step 2: six scores as two blocks of three, through FA2's own loop (B_c = 3).

    A single query with d = 1 and K = the scores makes S = QKᵀ/√d the six scores. The
    article does not give its value vectors; these are 6 × 2 standard-normal draws.
    """
    scores = np.array([1.0, 3.0, -2.0, 0.5, 2.5, 4.0])
    V = np.random.default_rng(1).standard_normal((6, 2)) if value_vectors is None else value_vectors
    d = V.shape[1]
    Q = np.zeros((1, 1, 1, d))
    Q[..., 0] = np.sqrt(d)              # cancels the 1/√d scaling, so S equals the scores
    K = np.zeros((1, 1, 6, d))
    K[0, 0, :, 0] = scores
    problem = Problem(seq_len_q=1, seq_len_kv=6, head_dim=d)
    r = simulate("toy", "fa2", problem, blocks=(1, 3), mode="numeric", inputs={"Q": Q, "K": K, "V": V[None, None]})
    running_sum = [float(l[0, 0]) for l in r.watches["l_i"]]
    running_max = [float(m[0, 0]) for m in r.watches["m_i"]]
    weights = np.exp(scores - scores.max())
    whole_row = weights / weights.sum() @ V        # softmax of the whole row at once
    return {
        "running_max": running_max,
        "running_sum": running_sum,
        "whole_row_sum": float(np.exp(scores - scores.max()).sum()),
        "max_abs_diff_with_values": float(np.abs(r.outputs["O"][0, 0, 0] - whole_row).max()),
    }


def paper_block_size_example() -> dict:
    """Step 3: M = 98,304 fp16 elements (192 KB), d = 128 → B_c = 192, B_r = 128."""
    p = load_profile("fa-paper-a100")
    M = sram_elements(p.scratchpad.per_block_bytes, "fp16")
    blocks = paper_block_sizes(M, 128)
    return {"M": M, "block_kv": blocks.block_kv, "block_q": blocks.block_q}


def theorem2_leading_terms_ratio(n: int = 8192, d: int = 128, M: int = 98_304) -> float:
    """Step 3: (N·d + N²) / (N²·d²/M) at 8,192 tokens ≈ 6.1."""
    standard = theorem2("standard", n, n, d, M)
    flash = theorem2("flash", n, n, d, M)
    return standard.value / flash.value


def statistics_bytes_per_head(n: int = 8192) -> int:
    """Step 4: FA1 keeps m and ℓ per row, fp32: 65,536 bytes per head at 8,192 tokens."""
    problem = Problem(seq_len=n, head_dim=128)
    return sum(TENSORS[t].elements(problem) * TENSORS[t].width(problem) for t in ("l", "m"))


def tiled_exactness_run(seed: int = 2) -> dict:
    """Worked example: 256 tokens, d = 16, 64-row blocks, random data, on the toy GPU.

    FA2 and standard attention both run numerically through iosim's schedules; the FA2
    score tile S_ij is 64 × 64 = 4,096 values, standard attention's S is 256² = 65,536.
    """
    problem = Problem(seq_len=256, head_dim=16)
    standard = simulate("toy", "standard", problem, mode="numeric", options=Options(seed=seed))
    tiled = simulate("toy", "fa2", problem, blocks=(64, 64), mode="numeric", options=Options(seed=seed))
    tile_scores = {name: nbytes // 4 for name, nbytes, _ in tiled.registers.peak_tiles}["S_ij"]
    return {
        "max_abs_diff": float(np.abs(tiled.outputs["O"] - standard.outputs["O"]).max()),
        "standard_scores_held": TENSORS["S"].elements(problem),
        "tiled_scores_held": tile_scores,
    }


def main() -> None:
    a100 = paper_a100_figures()
    print("Step 1 — the paper's A100 (profile fa-paper-a100)")
    print(f"  {a100['sm_count']} SMs, {a100['sram_per_sm_bytes'] // 1024} KiB SRAM per SM, "
          f"HBM {a100['hbm_tb_s']:.1f} TB/s, SRAM {a100['sram_tb_s']:.0f} TB/s "
          f"(SRAM/HBM = {a100['sram_over_hbm']:.1f}×; article: 'about ten times faster')")
    sizes = score_matrix_sizes()
    print("Score matrix S, fp16 (article: 128 MiB, 4 GiB, 32 GiB, ×16)")
    print(f"  N=8,192 one head: {sizes['N=8192, one head'] / MiB:.0f} MiB; 32 heads: "
          f"{sizes['N=8192, 32 heads'] / GiB:.0f} GiB; N=131,072: {sizes['N=131072, one head'] / GiB:.0f} GiB; "
          f"4× tokens → ×{sizes['4x tokens -> x']}")
    online = online_softmax_example()
    print("Step 2 — online softmax, scores 1.0 3.0 −2.0 | 0.5 2.5 4.0 (article: 1.1421, 1.6735, ≈5.6e-17)")
    print(f"  running max {online['running_max']}, running sum after block one "
          f"{online['running_sum'][0]:.4f}, at the end {online['running_sum'][1]:.4f} "
          f"(whole row: {online['whole_row_sum']:.4f}); output vs whole-row softmax: "
          f"{online['max_abs_diff_with_values']:.2g}")
    blocks = paper_block_size_example()
    print(f"Step 3 — M = {blocks['M']:,}, d = 128: B_c = {blocks['block_kv']}, B_r = {blocks['block_q']} "
          "(article: 192 and 128)")
    print(f"  (N·d + N²)/(N²·d²/M) at N = 8,192: {theorem2_leading_terms_ratio():.2f} (article: about 6.1)")
    print(f"Step 4 — m and ℓ at N = 8,192, fp32: {statistics_bytes_per_head():,} bytes per head (article: 65,536)")
    run = tiled_exactness_run()
    print(f"Worked example — 256 tokens, d = 16, 64-row blocks: FA2 vs standard {run['max_abs_diff']:.2g} "
          f"(article: ≈5.6e-16); scores held {run['tiled_scores_held']:,} vs {run['standard_scores_held']:,} "
          "(article: 4,096 vs 65,536)")


if __name__ == "__main__":
    main()
