"""CPU burn: four threads spinning, SIGXCPU ignored, so the CPU limit cannot stop it politely.

Must fail runs on the time limit; the grader survives and returns within its deadline.
"""

import signal
import threading


def _spin():
    x = 0
    while True:
        x += 1


def fa2_forward(ctx):
    try:
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    except (ValueError, OSError, AttributeError):
        pass
    for _ in range(4):
        threading.Thread(target=_spin, daemon=True).start()
    _spin()
