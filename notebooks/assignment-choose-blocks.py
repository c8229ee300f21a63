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
# # Assignment 3: choose FlashAttention-2's block sizes
#
# You choose the blocks (B_r, B_c) of FlashAttention-2's forward pass for three GPUs and
# shapes, return them from `choose_blocks(hw, problem)`, and justify them with numbers from
# `iosim explore`. This notebook
#
# 1. writes the starter into a folder `choose-blocks/` beside the notebook (what
#    `iosim assignment export blocks choose-blocks` does in a terminal): the assignment's
#    README and `choose_blocks.py`, the file you edit and hand in;
# 2. runs your choices through `iosim.simulate`, on the toy GPU and the other two cases;
# 3. shows how to ask `iosim explore`, on a shape that is not one of the cases;
# 4. grades your file as your instructor will: `iosim grade choose_blocks.py --assignment blocks`.
#
# It needs only an installed iosim (`pip install .`) and runs from any folder. Edit
# `choose-blocks/choose_blocks.py` (in Jupyter's editor or any other), then re-run the
# cells of steps 2 and 4: they read the file again each time.

# %%
import pathlib

from iosim.grading.notebook import iosim     # `iosim ARGS` as typed in a terminal; returns its exit code


PACK = pathlib.Path("choose-blocks")
if not PACK.exists():                        # once: later runs keep your edits
    iosim("assignment", "export", "blocks", str(PACK))
STARTER = PACK / "choose_blocks.py"

# %% [markdown]
# ## 1. The assignment and the starter

# %%
from IPython.display import Markdown, display

display(Markdown((PACK / "README.md").read_text()))

# %% [markdown]
# The starter returns FlashAttention's default, Algorithm 1's rule from the shared memory
# alone; replace it, and the `JUSTIFICATION` placeholder.

# %%
print(STARTER.read_text())

# %% [markdown]
# ## 2. Your blocks, counted
#
# `try_blocks` (`iosim.grading.notebook.try_blocks`) loads your file afresh, asks
# `choose_blocks` for each case of the README, and runs the built-in `fa2` schedule with
# those blocks: its HBM bytes beside those of the paper's blocks, and the tiles against
# shared memory and the registers (the grader's capacity check: Q_i, K_j, V_j in shared
# memory, S_ij and the fp32 O_i accumulator in registers without spilling). The toy case
# first:

# %%
from iosim import Problem
from iosim.grading import notebook


def try_blocks(hw, problem):
    notebook.try_blocks(STARTER, hw, problem)


try_blocks("toy", Problem(seq_len=1024, head_dim=32))

# %% [markdown]
# And the two other cases (counting the bytes takes milliseconds even at N = 8,192):

# %%
try_blocks("h100-sxm", Problem(seq_len=8192, head_dim=128))
try_blocks("a100-40gb", Problem(seq_len=2048, head_dim=128))

# %% [markdown]
# ## 3. Asking the explorer
#
# The grader wants your HBM bytes within 10% of the best that `iosim explore` finds for
# each case. Here is the explorer on a shape that is **not** one of the cases (the toy GPU
# at N = 512, d = 16): the best tile by bytes, and the paper's. Run it
# on each case yourself — `iosim explore --hw toy --algo fa2 -N 1024 -d 32` in a
# terminal, or `iosim("explore", "--hw", "toy", ...)` here — and read which resource
# limits B_r; `--objective time` ranks by the roofline time instead.

# %%
from iosim import explore

res = explore("toy", "fa2", Problem(seq_len=512, head_dim=16), progress=False)
for label, c in (("best", res.best), ("paper", res.paper)):
    print(f"{label:6} {c.block_q:4} × {c.block_kv:<4} {c.hbm_total_bytes:>10,} B  "
          f"{c.hbm_total_bytes / res.best.hbm_total_bytes:.2f}× the best")

# %% [markdown]
# ## 4. Grade it
#
# `iosim grade` runs your `choose_blocks` in a sandboxed process, simulates the built-in
# `fa2` with the blocks it returns for each case, and checks `loads`, `runs`, `capacity`
# and `io` (within 10% of the best bytes), each a share of the score, and your written
# `JUSTIFICATION` (read by the instructor). The unmodified starter fails `io`: the paper's
# blocks are far from the best. The sandbox needs Linux user namespaces; where they are
# off (macOS), your own file can be graded with `--no-isolation`.

# %%
from iosim.grading.isolation import isolation_available

sandbox, why_not = isolation_available()
code = iosim("grade", str(STARTER), "--assignment", "blocks", *([] if sandbox else ["--no-isolation"]))
print("exit code", code, "(0: every check passes; 1: a check fails; 2: the file could not be graded)")
