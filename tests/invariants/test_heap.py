"""iosim/run/heap.py: glibc keeps the L2 model's freed large arrays in the heap, and gives them back on asking."""

import ctypes
import platform

import numpy as np
import pytest

from iosim.run import heap

GLIBC = platform.libc_ver()[0] == "glibc"


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mapped_and_heap() -> tuple[int, int]:
    """(bytes glibc holds in mmaps of their own, bytes of its heap), from mallinfo2 (glibc 2.33 on)."""
    mallinfo2 = heap._glibc().mallinfo2
    mallinfo2.restype = _Mallinfo2
    info = mallinfo2()
    return info.hblkhd, info.arena


@pytest.mark.skipif(not GLIBC or not hasattr(heap._glibc(), "mallinfo2"), reason="mallopt, malloc_trim and "
                    "mallinfo2 are glibc's (2.33 on)")
def test_glibc_takes_both_settings_and_a_large_array_comes_from_the_heap():
    assert heap.keep_freed_memory() is True
    mapped, _ = _mapped_and_heap()
    a = np.ones(2 ** 23, np.int64)          # 64 MiB: past glibc's largest mmap threshold
    now_mapped, now_heap = _mapped_and_heap()
    assert now_mapped == mapped and now_heap >= a.nbytes
    del a
    assert heap.give_back() is True         # the freed 64 MiB went back


def test_without_glibc_both_say_they_did_nothing(monkeypatch):
    monkeypatch.setattr(heap, "_glibc", lambda: None)
    assert heap.keep_freed_memory() is False and heap.give_back() is False


def test_the_command_line_keeps_the_heap(monkeypatch):
    from iosim.cli import main as cli
    called = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: called.append(True))
    assert cli.main(["profiles"]) == 0 and called == [True]
