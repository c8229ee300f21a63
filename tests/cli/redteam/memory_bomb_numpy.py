"""Memory bomb with numpy: ask for a 16 TiB array, then touch 100 GiB page by page.

Must fail runs on memory; the grader survives.
"""

import numpy as np


def fa2_forward(ctx):
    try:
        big = np.ones(1 << 41)
    except MemoryError:
        big = None
    hog = []
    for _ in range(100):
        hog.append(np.ones(1 << 27))      # 1 GiB each, touched
    return big
