"""Where the L2 model's large temporaries get their memory: kept in the process's heap once freed.

The L2 model works on arrays of one entry a request, tens of millions of them on a long launch
(hundreds of MB each), and makes and drops many of them a pass. glibc's malloc serves each such
array from fresh pages of its own (mmap, above 32 MB at most) and hands them back to the system
when the array is freed, so every new one pays its page faults again: on a virtual machine with 2
cores, a running sum into a fresh 136 MB array took 0.37 s, into one already touched 0.013 s.

:func:`keep_freed_memory` tells glibc to serve large arrays from its heap and to keep what is freed
there, so later arrays reuse pages already faulted in: the command line calls it once (``iosim``
exits when done), the tests and the benchmarks too, and the test suite gives the kept memory back
after each test (:func:`give_back`), so that parallel workers do not each hold their peak. A
library user may call it; memory then stays at the process's peak until :func:`give_back`.
Elsewhere than on glibc (macOS, musl) both do nothing and say so by returning False. Nothing is
counted differently: only where the bytes of the arrays live (docs/performance.md, "the heap keeps freed memory").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

#: mallopt's parameters (glibc's malloc.h)
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
#: freed memory at the heap's top kept up to this (mallopt takes an int)
KEEP_BYTES = 2 ** 31 - 1


@functools.lru_cache(maxsize=1)
def _glibc():
    """The C library, where it is glibc (it has mallopt and malloc_trim), else None."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt.argtypes, libc.malloc_trim.argtypes = [ctypes.c_int, ctypes.c_int], [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError, TypeError):
        return None


def keep_freed_memory() -> bool:
    """Serve large arrays from the heap (no mmap of their own) and keep freed memory there; True
    where glibc took both settings."""
    libc = _glibc()
    return libc is not None and bool(libc.mallopt(M_MMAP_MAX, 0)) and bool(libc.mallopt(M_TRIM_THRESHOLD,
                                                                                         KEEP_BYTES))


def give_back() -> bool:
    """Return the heap's free memory to the system (glibc's malloc_trim); True where some was."""
    libc = _glibc()
    return libc is not None and bool(libc.malloc_trim(0))
