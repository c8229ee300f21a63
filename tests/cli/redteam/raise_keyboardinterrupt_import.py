"""Odd exceptions: KeyboardInterrupt at import time, as if the grader had been interrupted.

Must fail loads; the grader survives and is not interrupted itself.
"""

raise KeyboardInterrupt


def fa2_forward(ctx):
    pass
