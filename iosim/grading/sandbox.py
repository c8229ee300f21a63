"""Start the student's process with a time limit and a memory limit, and stop it for sure.

The child is a fresh interpreter (``python -I``: no PYTHON* variables, no user site)
with a minimal environment, a private temporary working directory, its standard output
and error in a file (read back for the report), and one socket to the grader. It sets
its own limits before loading the submission (:func:`iosim.grading.child.main`):
``RLIMIT_AS`` (memory), ``RLIMIT_CPU``, no core files, a cap on file sizes, and no
``CAP_SYS_PTRACE``. The grader keeps a wall-clock deadline on every message and kills the
child's whole process group when the run ends, however it ends.

While the child lives, the grader's process is marked non-dumpable (Linux
``PR_SET_DUMPABLE``): with the child's missing ``CAP_SYS_PTRACE`` that keeps it from
reading the grader's memory through ``/proc/PID/mem``. Limits of this boundary: the
child runs as the grader's user, so it can signal the grader's process and read or
write the files that user can; for hostile submissions run the grader under its own
account or in a container.
"""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager

from .protocol import Channel

_ROOT = str(pathlib.Path(__file__).resolve().parents[2])  # the folder that holds the iosim package
_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from iosim.grading.child import main; main(sys.argv[2:])"


class StudentProcess:
    """``with StudentProcess(timeout_s, memory_mb) as proc:`` then talk over ``proc.channel``."""

    def __init__(self, timeout_s: float, memory_mb: int):
        self.timeout_s, self.memory_mb = timeout_s, memory_mb
        self.deadline = 0.0
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "StudentProcess":
        self._private = _private_memory()
        self._private.__enter__()
        try:
            return self._start()
        except BaseException:
            self._private.__exit__(None, None, None)
            raise

    def _start(self) -> "StudentProcess":
        self._dir = tempfile.TemporaryDirectory(prefix="iosim-grade-")
        self.output_path = pathlib.Path(self._dir.name) / "output.txt"
        ours, theirs = socket.socketpair()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self._dir.name, "LANG": "C.UTF-8",
               "PYTHONIOENCODING": "utf-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}
        with open(self.output_path, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, _ROOT, str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=self._dir.name, env=env,
                pass_fds=(theirs.fileno(),), start_new_session=True,
            )
        theirs.close()
        self.channel = Channel(ours)
        self._socket = ours
        self.deadline = time.monotonic() + self.timeout_s
        return self

    def hello(self, **payload) -> None:
        """The first message: what to load, and the limits the child sets on itself."""
        self.channel.send({**payload, "memory_bytes": self.memory_mb << 20, "cpu_s": int(self.timeout_s) + 2},
                          self.deadline)

    def __exit__(self, *exc) -> None:
        try:
            self.stop()
            self._socket.close()
            self._dir.cleanup()
        finally:
            self._private.__exit__(None, None, None)

    def stop(self) -> None:
        """Kill the child and everything it started (its process group)."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.process.kill()
        if self.process is not None:
            self.process.wait()

    def exit_reason(self, wait_s: float = 2.0) -> str:
        """Why the child is gone, once the connection has closed on it."""
        try:
            code = self.process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return "the student's process closed the connection to the grader"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            if -code == signal.SIGXCPU:
                return f"the student's process used more than its CPU time limit and was killed ({name})"
            return f"the student's process was killed by {name}"
        return f"the student's process exited with code {code} before finishing"

    def output_tail(self, limit: int = 1500) -> str:
        """The end of what the child printed (stdout and stderr)."""
        try:
            with open(self.output_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - limit))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


_private_lock = threading.Lock()
_private_state = {"depth": 0, "old": None}


@contextmanager
def _private_memory():
    """Make this process non-dumpable while any student process lives (no /proc/PID/mem for
    others), where Linux allows it; nested and concurrent uses restore the flag once, at the end."""
    with _private_lock:
        if _private_state["depth"] == 0:
            _private_state["old"] = _set_dumpable(0)
        _private_state["depth"] += 1
    try:
        yield
    finally:
        with _private_lock:
            _private_state["depth"] -= 1
            if _private_state["depth"] == 0 and _private_state["old"] is not None:
                _set_dumpable(_private_state["old"])


def _set_dumpable(value: int) -> int | None:
    """Set PR_SET_DUMPABLE; the previous value, or None where prctl is not available."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        old = prctl(3, 0, 0, 0, 0)                  # PR_GET_DUMPABLE
    except (OSError, AttributeError):
        return None
    if old not in (0, 1):
        return None
    prctl(4, value, 0, 0, 0)                        # PR_SET_DUMPABLE
    return old
