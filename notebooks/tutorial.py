# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Tutorial: FlashAttention from first principles, counted in bytes
#
# This notebook walks through the article *What is FlashAttention?* (the seed of iosim)
# with iosim: why standard attention is memory-bound, the online softmax, tiling,
# exactness, grading a schedule of your own, choosing block sizes and the backward pass.
# Every number quoted below is printed by the cell next to it.
#
# It needs only an installed iosim (`pip install .` in the repository, the README's first
# command) and Jupyter; it runs from any folder, reads no file of the repository, and
# writes one file (`my_fa2.py`, section 5) into the folder it runs in. The same path,
# with the `assert`s that keep its prose honest, is `docs/tutorial.md` in the repository.

# %%
import numpy as np

from iosim import Options, Problem, load_profile, paper_block_sizes, reference_attention, simulate, sram_elements
from iosim.models.theory import theorem2

MiB = 1 << 20

# %% [markdown]
# ## 1. Standard attention is memory-bound
#
# The article's running example is one attention head with N = 8,192 tokens and head
# dimension d = 128 in fp16, on the FlashAttention paper's A100 (the built-in profile
# `fa-paper-a100`: 192 KiB of SRAM per SM). Standard attention (the paper's Algorithm 0)
# writes the N × N score matrix S to HBM, reads it back for the softmax, writes P and
# reads it again for PV. Counting these bytes takes milliseconds: no N × N matrix is made.

# %%
problem = Problem(seq_len=8192, head_dim=128)
standard = simulate("fa-paper-a100", "standard", problem)
fa1 = simulate("fa-paper-a100", "fa1", problem)
fa2 = simulate("fa-paper-a100", "fa2", problem)

S = standard.tensors["S"]
print(S.write_bytes // MiB, "MiB of scores written, and", S.read_bytes // MiB, "MiB read back")
print(f"standard {standard.hbm.total_bytes:,} B, FA1 {fa1.hbm.total_bytes:,} B, FA2 {fa2.hbm.total_bytes:,} B")
print("the bound:", standard.time.bound)

# %% [markdown]
# S and P are 128 MiB each per head (the article's "128 MiB for one head"), and they
# account for 512 of the 520 MiB — 545,259,520 bytes — that standard attention moves;
# Q, K, V and O are 2 MiB each. FlashAttention never writes S or P: FA1 moves
# 280,363,008 bytes and FA2 272,662,528. The roofline names the HBM link as what bounds
# standard attention's time: memory traffic, not arithmetic.
#
# ## 2. The online softmax keeps a tiled softmax exact
#
# The article takes six scores, 1.0, 3.0, −2.0, 0.5, 2.5 and 4.0, as two blocks of three.
# iosim runs them through FlashAttention-2's own loop: one query, six keys, B_c = 3. With
# d = 2, a query of (√2, 0) and keys whose first coordinate is the score, S = QKᵀ/√d is
# exactly the six scores. The schedule records the running maximum m and sum ℓ after each
# block (`r.watches`).

# %%
scores = np.array([1.0, 3.0, -2.0, 0.5, 2.5, 4.0])
V = np.random.default_rng(1).standard_normal((6, 2))       # the article's value vectors are not given
Q = np.array([np.sqrt(2.0), 0.0]).reshape(1, 1, 1, 2)
K = np.zeros((1, 1, 6, 2))
K[0, 0, :, 0] = scores
six = Problem(seq_len_q=1, seq_len_kv=6, head_dim=2)
r = simulate("toy", "fa2", six, blocks=(1, 3), mode="numeric", inputs={"Q": Q, "K": K, "V": V[None, None]})

running_max = [float(m[0, 0]) for m in r.watches["m_i"]]
running_sum = [round(float(l[0, 0]), 4) for l in r.watches["l_i"]]
weights = np.exp(scores - scores.max())
whole_row = weights / weights.sum() @ V                      # the softmax of the whole row at once
error = float(np.abs(r.outputs["O"][0, 0, 0] - whole_row).max())
print("running maximum", running_max, "running sum", running_sum)
print(f"the whole row's sum {weights.sum():.4f}; output off by {error:.1e}")

# %% [markdown]
# After block one the maximum is 3.0 and the sum 1.1421. Block two raises the maximum to
# 4.0, so the old sum is multiplied by e^{3−4} before the new block's terms are added:
# 1.1421 · e^{−1} + 1.2533 = 1.6735, the sum of the whole row. The output differs from
# the softmax of the whole row by rounding only.
#
# Drop that rescaling and the answer is wrong: the sum becomes 1.1421 + 1.2533 = 2.3954.

# %%
block_one, block_two = scores[:3], scores[3:]
l_one = np.exp(block_one - block_one.max()).sum()      # ℓ after block one, at its maximum 3.0
terms_two = np.exp(block_two - 4.0).sum()               # block two's terms, at the new maximum 4.0
print(f"with the rescaling {l_one * np.exp(3.0 - 4.0) + terms_two:.4f}, without it {l_one + terms_two:.4f}")

# %% [markdown]
# `iosim grade` catches a schedule that forgets it: among its inputs are scores of
# ±10⁴, whose rows peak in a later key block.
#
# ## 3. Tiling keeps every block in SRAM
#
# FlashAttention's Algorithm 1 sets B_c = ⌈M/4d⌉ and B_r = min(⌈M/4d⌉, d), M the SRAM in
# elements. The paper's A100 has 192 KiB per SM, M = 98,304 fp16 elements:

# %%
M = sram_elements(load_profile("fa-paper-a100").scratchpad.per_block_bytes, "fp16")
blocks = paper_block_sizes(M, 128)
ratio = theorem2("standard", 8192, 8192, 128, M).value / theorem2("flash", 8192, 8192, 128, M).value
print(f"M = {M:,} elements; B_r × B_c = {blocks.block_q} × {blocks.block_kv}; Theorem 2's ratio {ratio:.1f}")

# %% [markdown]
# The rule gives the article's blocks: B_r × B_c = 128 × 192 (128 query rows, 192 keys).
# Theorem 2 puts standard attention at Θ(Nd + N²) HBM accesses and FlashAttention at
# Θ(N²d²/M); at 8,192 tokens the ratio of the two leading terms is 6.1. The exact counts
# of section 1 differ by a factor of 2 only, because constants matter: which tensors are
# re-read, and how often, depends on the loop order.

# %%
for run in (fa1, fa2):
    moved = {name: t.read_bytes + t.write_bytes for name, t in run.tensors.items()}
    print(run.algorithm, {name: f"{b / MiB:.1f} MiB" for name, b in moved.items()})
print("T_c =", fa1.blocks.num_kv_blocks(problem), "key blocks; T_r =", fa2.blocks.num_q_blocks(problem), "query blocks")

# %% [markdown]
# FA1 keeps K_j, V_j on chip in its outer loop, so the query-side tensors Q and O (and ℓ,
# m) cross HBM once per key block: T_c = 43 times. FA2 swaps the loops: Q_i and the
# running O_i stay on chip, O is written once, and K and V are re-read T_r = 64 times.
#
# ## 4. The worked example: exact, with small tiles
#
# The article's exactness check: 256 tokens, head dimension 16, 64-row blocks, random
# data. iosim runs standard attention and FlashAttention-2 on the same numbers.

# %%
small = Problem(seq_len=256, head_dim=16)
plain = simulate("toy", "standard", small, mode="numeric", options=Options(seed=2))
tiled = simulate("toy", "fa2", small, blocks=(64, 64), mode="numeric", options=Options(seed=2))
difference = float(np.abs(tiled.outputs["O"] - plain.outputs["O"]).max())
score_tile = dict((name, nbytes // 4) for name, nbytes, _ in tiled.registers.peak_tiles)["S_ij"]
print(f"outputs differ by {difference:.0e}; the largest score tile holds {score_tile:,} values, "
      f"standard attention's S {256 * 256:,}")

# %% [markdown]
# The outputs agree to rounding (a few 1e-16), while the largest score tile held is
# 64 × 64 = 4,096 values against standard attention's 65,536.
#
# ## 5. A loop order of your own, and a grade for it
#
# A schedule is a plain function of `ctx` (the repository's `docs/simulator.md` explains
# the API). Here is FlashAttention-2 written from the paper; `simulate` counts it like a
# built-in one, and runs it on numbers:

# %%
import math

from iosim.engine.tiles import maximum


def fa2_forward(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
        l_i = ctx.fill("l_i", i, 0.0, role="stats")
        m_i = ctx.fill("m_i", i, -math.inf, role="stats")
        for j in ctx.kv_blocks(visible_to=i):
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)
            S = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
            m_new = maximum(m_i, S.rowmax())
            P = ctx.keep("S_ij", (S - m_new.inf_as_zero().col()).exp(), role="scores")
            scale = (m_i - m_new.inf_as_zero()).exp()
            l_i = ctx.keep("l_i", scale * l_i + P.rowsum(), role="stats")
            O_i = ctx.keep("O_i", scale.col() * O_i + P @ V_j, role="output")
            m_i = ctx.keep("m_i", m_new, role="stats")
        ctx.store("O", i, ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output"))
        ctx.store("L", i, ctx.keep("L_i", m_i + l_i.log(), role="stats"))


# %%
from iosim import random_inputs

causal = Problem(seq_len=100, head_dim=32, causal=True)
inputs = random_inputs(causal, seed=0)
mine = simulate("toy", fa2_forward, causal, mode="numeric", inputs=inputs)
builtin = simulate("toy", "fa2", causal)
error = np.abs(mine.outputs["O"] - reference_attention(inputs["Q"], inputs["K"], inputs["V"], causal=True)).max()
print(f"{mine.hbm.total_bytes:,} B like the built-in's {builtin.hbm.total_bytes:,} B; error {error:.0e}")

# %% [markdown]
# On a causal problem of 100 tokens at d = 32 the schedule moves 50,576 bytes, exactly as
# many as the built-in `fa2`, and its output equals the float64 reference to rounding.
#
# `iosim grade` turns this into an assignment. It runs a file in a separate, sandboxed
# process (time and memory limits) on eleven inputs — ragged N, causal, N_q ≠ N_kv, scores
# large enough to overflow a naive softmax — and checks exactness against the float64
# reference, the tiles against shared memory and registers, and the HBM traffic against
# the built-in algorithm, tensor by tensor. It grades a file, so the cell below writes the
# function above into `my_fa2.py`, then grades it, as `iosim grade my_fa2.py` would in a
# terminal. (The sandbox needs Linux user namespaces; where they are off, as on macOS,
# your own file can be graded without it.)

# %%
import inspect
import pathlib

from iosim import grade
from iosim.grading.isolation import isolation_available

pathlib.Path("my_fa2.py").write_text(
    "import math\n\nfrom iosim.engine.tiles import maximum\n\n\n" + inspect.getsource(fa2_forward))
sandbox, why_not = isolation_available()
report = grade("my_fa2.py", "fa2", seed=0, isolation=sandbox)
print(report.render())
print("scored checks:", {c.name: c.status for c in report.checks if c.name != "answer"}, "score", report.score)

# %% [markdown]
# The five scored checks pass: a score of 100. The `answer` check fails because the file
# has no written answer: assignment 2 (`iosim assignment export fa2 DIR`, and the
# notebook `assignment-fa2-forward.ipynb` beside this one) asks for two sentences on why
# FA2 moves fewer bytes than FA1, which the instructor reads. A schedule that computes the
# right output but reloads Q_i for every key block passes `exactness` and fails `io`:
# only the byte count gives it away.
#
# ## 6. Choosing the blocks
#
# The paper's rule depends on M and d only. `iosim explore` runs the schedule over a grid
# of (B_r, B_c), drops those whose tiles do not fit shared memory or would spill
# registers, and ranks the rest — by HBM bytes, or by the roofline time (in a terminal:
# `iosim explore --hw h100-sxm --algo fa2 -N 8192 -d 128`):

# %%
from iosim import explore

res = explore("h100-sxm", "fa2", problem, progress=False)
for label, c in (("best", res.best), ("paper", res.paper), ("real kernel", res.kernel)):
    print(f"{label:12} {c.block_q:4} × {c.block_kv:<4} {c.hbm_total_bytes:>13,} B  "
          f"{c.hbm_total_bytes / res.best.hbm_total_bytes:.2f}× the best")
by_time = explore("h100-sxm", "fa2", problem, objective="time", progress=False).best
print("by time:", by_time.block_q, "×", by_time.block_kv, by_time.bound)
print(f"standard attention moves {standard.hbm.total_bytes / res.best.hbm_total_bytes:.1f}× the best")

# %% [markdown]
# FA2 reads K and V once per query block, so its bytes fall as B_r grows: the
# byte-optimal tile on the default grid (multiples of 16, the tensor cores' granularity)
# is 432 × 16, limited by the B_r × d fp32 accumulator (and S_ij) in the 256 KiB register
# file; it moves 3.25× less than the paper's 128 × 227 and than the real kernel's
# 128 × 64. Against standard attention it moves 6.5× less — the 6.1 of Theorem 2, with the
# constants that matter. The real kernel's choice answers other costs (tensor-core
# shapes, occupancy, time); `objective="time"` ranks by the roofline instead and picks
# 400 × 32 here, bound by the tensor cores. Assignment 3 (`choose-blocks`) asks for
# blocks within 10% of the best bytes on three GPUs, with a justification.
#
# ## 7. The backward pass recomputes instead of storing
#
# For training FlashAttention stores only O and the row statistics, and recomputes the
# score tiles in the backward pass. iosim counts both sides of the trade:

# %%
from iosim.engine.tensors import FORWARD_TENSORS

back_std = simulate("fa-paper-a100", "standard", problem, passes="backward")
back_fa2 = simulate("fa-paper-a100", "fa2", problem, passes="backward")
print(f"HBM: standard {back_std.hbm.total_bytes:,} B, FA2 {back_fa2.hbm.total_bytes:,} B")
print(f"matmul FLOPs: standard {back_std.ops['matmul']:,}, FA2 {back_fa2.ops['matmul']:,} "
      f"({back_fa2.ops['matmul'] / back_std.ops['matmul']:.2f}×)")
stats = {t.name: t for t in FORWARD_TENSORS}
extra = sum(stats[n].elements(problem) * stats[n].width(problem) for n in ("l", "m"))
print(f"m and ℓ: {extra:,} bytes per head")

# %% [markdown]
# The FA2 backward pass does a quarter more matrix-product FLOPs (it recomputes
# S = QKᵀ) and moves less than half the bytes. What it keeps besides the inputs and the
# output is linear in N: m and ℓ in fp32, 65,536 bytes per head at 8,192 tokens (FA2
# keeps their combination L = m + log ℓ, half that).
#
# ## Where next
#
# - The assignments, one notebook each beside this one: `assignment-fa1-forward.ipynb`,
#   `assignment-fa2-forward.ipynb`, `assignment-choose-blocks.ipynb`.
# - In the repository: `docs/simulator.md` (how counting works, the conventions, what
#   sits where on chip) and `docs/bounds-and-explore.md` (Theorem 2 against the counts,
#   and the block explorer).
