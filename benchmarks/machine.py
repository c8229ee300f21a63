"""What the timing benchmarks print first: the machine they ran on (no iosim import)."""

from __future__ import annotations

import os
import platform


def machine(load: str | None = ", load average {:.1f}") -> str:
    """``machine: PLATFORM, N CPUs, Python X.Y.Z`` and, with ``load`` (a format of the
    1-minute load average), the load the timings ran under."""
    text = f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    return text + (load.format(os.getloadavg()[0]) if load else "")
