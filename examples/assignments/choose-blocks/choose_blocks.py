"""Assignment: choose FlashAttention-2's block sizes (B_r, B_c) for a GPU and a shape.

Read README.md in this folder, replace the TODOs, then grade your work:

    iosim grade choose_blocks.py --assignment blocks

`choose_blocks(hw, problem)` is called for each case of the README (hw is a profile name
such as "h100-sxm", problem an iosim.Problem) and returns (block_q, block_kv) = (B_r, B_c).
"""

from iosim import load_profile, paper_block_sizes, sram_elements

JUSTIFICATION = """
TODO: for each case, the blocks you chose, the numbers from `iosim explore` that justify
them (HBM bytes against the best and against the paper's default), and what limits B_r.
"""


def choose_blocks(hw, problem):
    # TODO: this is FlashAttention's default rule (Algorithm 1 line 1). Run
    #   iosim explore --hw HW --algo fa2 -N N -d D
    # for each case of the README and return better blocks.
    M = sram_elements(load_profile(hw).scratchpad.per_block_bytes, problem.dtype)
    paper = paper_block_sizes(M, problem.head_dim)
    return paper.block_q, paper.block_kv
