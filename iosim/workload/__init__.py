"""What is computed, independent of any GPU: the attention problem and its block sizes
(:mod:`.problem`), the block-sparsity masks (:mod:`.masks`), the problem a kernel really
runs (:mod:`.layouts`), random inputs (:mod:`.inputs`), and the float64 reference the
numeric mode is checked against (:mod:`.reference`).

Its place in the pipeline: above :mod:`iosim.hardware` and below :mod:`iosim.engine`; it
imports only :mod:`iosim.errors` and :mod:`iosim.dtypes`.
"""

from .problem import BlockSizes, Problem, paper_block_sizes, sram_elements

__all__ = ["Problem", "BlockSizes", "paper_block_sizes", "sram_elements"]
