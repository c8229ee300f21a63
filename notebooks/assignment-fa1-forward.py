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
# # Assignment 1: FlashAttention's forward pass
#
# You implement Algorithm 1 of *FlashAttention* (Dao et al. 2022) as an iosim schedule,
# `fa1_forward(ctx)`. This notebook
#
# 1. writes the starter into a folder `fa1-forward/` beside the notebook (what
#    `iosim assignment export fa1 fa1-forward` does in a terminal): the assignment's
#    README and `fa1_forward.py`, the file you edit and hand in;
# 2. runs your file on the teaching GPU `toy` with `iosim.simulate`, against the built-in
#    `fa1` schedule and a float64 reference;
# 3. grades it as your instructor will: `iosim grade fa1_forward.py --assignment fa1`.
#
# It needs only an installed iosim (`pip install .`) and runs from any folder. Edit
# `fa1-forward/fa1_forward.py` (in Jupyter's editor or any other), then re-run the cells
# of steps 2 and 3: they read the file again each time.

# %%
import pathlib

from iosim.grading.notebook import iosim     # `iosim ARGS` as typed in a terminal; returns its exit code


PACK = pathlib.Path("fa1-forward")
if not PACK.exists():                        # once: later runs keep your edits
    iosim("assignment", "export", "fa1", str(PACK))
STARTER = PACK / "fa1_forward.py"

# %% [markdown]
# ## 1. The assignment and the starter
#
# The README (the grading section names the inputs and the traffic expected):

# %%
from IPython.display import Markdown, display

display(Markdown((PACK / "README.md").read_text()))

# %% [markdown]
# The starter: the outer loop over key blocks and the loads of K_j, V_j are written; line 2
# (initialising O, ℓ, m in HBM) and the inner loop's lines 8–13 are yours (the TODOs).

# %%
print(STARTER.read_text())

# %% [markdown]
# ## 2. Run it on the toy GPU
#
# `run_locally` (`iosim.grading.notebook.try_schedule`) loads your file afresh, runs
# `fa1_forward` in numeric mode on random inputs with the registers enforced as the grader
# does (a tile that does not fit stops the run with a `CapacityError` naming it), and
# prints how far its O is from the float64 reference and its HBM bytes beside the built-in
# `fa1`'s, tensor by tensor. The toy GPU has 8 KiB of shared memory: at d = 32 Algorithm
# 1's rule gives the blocks B_r × B_c = 32 × 32.

# %%
from iosim import Problem
from iosim.grading.notebook import try_schedule


def run_locally(problem, seed=0):
    try_schedule(STARTER, "fa1_forward", "fa1", problem, seed=seed)


run_locally(Problem(seq_len=128, head_dim=32))

# %% [markdown]
# Then a causal input with N_q ≠ N_kv and a ragged last key block, as the grader runs:

# %%
run_locally(Problem(seq_len_q=70, seq_len_kv=100, head_dim=32, causal=True))

# %% [markdown]
# ## 3. Grade it
#
# `iosim grade` runs your file in a sandboxed process on eleven inputs (random, ragged,
# causal, and scores of ±10⁴ built to break shortcuts of the online softmax) and checks
# `loads`, `runs`, `exactness`, `capacity` and `io`, each a share of the score. The
# unmodified starter fails, with a hint for each failed check. The sandbox needs Linux user namespaces; where they are off (macOS), your own file
# can be graded with `--no-isolation`.

# %%
from iosim.grading.isolation import isolation_available

sandbox, why_not = isolation_available()
code = iosim("grade", str(STARTER), "--assignment", "fa1", *([] if sandbox else ["--no-isolation"]))
print("exit code", code, "(0: every check passes; 1: a check fails; 2: the file could not be graded)")
