"""Instructor solution: FlashAttention-2's block sizes for the three cases of the assignment.

Grade it:  iosim grade examples/assignments/instructor/blocks_solution.py

The choices come from `iosim explore --hw HW --algo fa2 -N N -d D` (objective hbm-bytes).
"""

CHOICES = {
    # (profile, N, d): (B_r, B_c)
    ("h100-sxm", 8192, 128): (480, 4),
    ("a100-40gb", 2048, 128): (448, 16),
    ("toy", 1024, 32): (112, 8),
}

JUSTIFICATION = """
FlashAttention-2 reads Q once and writes O and L once, but reads K and V once per query block, so its HBM
traffic is 2Nd + N + 2·T_r·N·d elements with T_r = ⌈N/B_r⌉: the bytes fall as B_r grows and hardly depend on
B_c. B_r is bounded by the on-chip state of one query block: Q_i (B_r × d) in shared memory and, in fp32
registers, the O_i accumulator (B_r × d) plus S_ij (B_r × B_c), so a small B_c leaves room for a taller B_r.
On h100-sxm at N = 8192, d = 128, 480 × 4 needs 257,280 B of the 262,144 B of registers, gives T_r = 18 and
moves 79,724,544 B, 0.95× the best of `iosim explore`, whose grid has tensor-core tiles only (432 × 16,
T_r = 19, 83,918,848 B), and 3.4× less than the paper's default 128 × 227 (272,662,528 B). On a100-40gb at
N = 2048, d = 128, 448 × 16 gives T_r = 5 and 6,299,648 B, equal to the best (416 × 16). On toy at N = 1024,
d = 32, 112 × 8 fills the 8 KiB of shared memory exactly (Q_i 7,168 B + K_j, V_j 1,024 B), gives T_r = 10
and 1,445,888 B, 0.92× explore's best (96 × 16, 1,576,960 B), against 4,329,472 B for the paper's 32 × 32. `iosim explore --objective time` prefers other tiles, and the real kernels use 128 × 64:
tensor-core shapes and occupancy matter for time, which this assignment does not grade.
"""


def choose_blocks(hw, problem):
    return CHOICES[(hw, problem.seq_len_q, problem.head_dim)]
