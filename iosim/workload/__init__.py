"""What is computed, independent of any GPU: the attention problem and its block sizes, the
block-sparsity masks, the problem a kernel really runs, random inputs, and the float64
reference the numeric mode is checked against."""

from .problem import BlockSizes, Problem, paper_block_sizes, sram_elements

__all__ = ["Problem", "BlockSizes", "paper_block_sizes", "sram_elements"]
