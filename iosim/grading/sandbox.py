"""Start the student's process with a time limit and a memory limit, and stop it for sure.

The child is a fresh interpreter (``python -I``: no PYTHON* variables, no user site) with
a minimal environment, a private temporary working directory, its standard output and
error in a file (read back for the report), and one socket to the grader.

**With isolation** (the default; Linux): the child runs in new user, PID, network, mount,
IPC, UTS and cgroup namespaces (:mod:`.isolation` decides the view, :mod:`.jail` builds
it): it sees the interpreter, the ``iosim`` package and its dependencies, the submitted
file (all read-only), a private ``/tmp`` and its own ``/proc``; not the repository, the
instructor's files, the home directory, ``/etc``, the network, or any process outside its
namespace, the grader's included. It has no capabilities and ``no_new_privs``, and its
limits (``RLIMIT_AS``, ``RLIMIT_CPU``, no core files, caps on file sizes and open files, at most
:data:`~.isolation.MAX_PROCESSES` processes) are set before its interpreter starts. At the
end the namespace's init is killed, and everything in the namespace with it: double-forked
and ``setsid`` processes too. Where the namespaces cannot be had, ``StudentProcess`` refuses
(:class:`~.isolation.IsolationUnavailable`) unless ``isolation=False``.

**Without isolation** (``isolation=False``, ``iosim grade --no-isolation``): the child runs
as the grader's user with the grader's view of the machine, and sets its own limits after
it starts (:func:`iosim.grading.child.main`); the grader kills its process group at the end.
It can read what the grader's user can, reach the network and signal the grader: for
trusted files only.

Either way the grader keeps a wall-clock deadline on every message, validates the limits
before anything starts (huge values are clamped, so no rlimit overflows in the child), and,
while a child lives, marks its own process non-dumpable (Linux ``PR_SET_DUMPABLE``) so that
``/proc/PID/mem`` stays closed to it. docs/grading.md, "Threat model", has the whole story.
"""

from __future__ import annotations

import numbers
import operator
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager

from .isolation import (CHILD_ENV, CHILD_PATH, SUBMISSION, IsolationUnavailable, Jail, SandboxError,
                        isolation_available, limits_for, unavailable_message)
from .protocol import Channel

_ROOT = str(pathlib.Path(__file__).resolve().parents[2])  # the folder that holds the iosim package
#: the child's command: ``python -I -c _BOOT FOLDER... SOCKET_FD`` (the folders go first on sys.path)
_BOOT = "import sys; sys.path[:0] = sys.argv[1:-1]; from iosim.grading.child import main; main(sys.argv[-1:])"
#: the largest limits passed on to the child (larger ones are clamped: the kernel could not take them)
MAX_TIMEOUT_S = 7 * 24 * 3600.0
MAX_MEMORY_MB = 1 << 24


def check_limits(timeout_s, memory_mb) -> tuple[float, int]:
    """(timeout_s, memory_mb) as the child gets them: positive numbers, clamped to what rlimits
    take; ValueError for anything else, raised here in the grader, before a child starts."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, numbers.Real) or not timeout_s > 0:
        raise ValueError(f"the time limit must be a positive number of seconds, got {timeout_s!r}")
    try:
        whole_mb = None if isinstance(memory_mb, bool) else operator.index(memory_mb)
    except TypeError:
        whole_mb = None
    if whole_mb is None or whole_mb < 1:
        raise ValueError(f"the memory limit must be a positive integer of MiB, got {memory_mb!r}")
    return min(float(timeout_s), MAX_TIMEOUT_S), min(whole_mb, MAX_MEMORY_MB)


class StudentProcess:
    """``with StudentProcess(timeout_s, memory_mb, isolation=True) as proc:`` then talk over ``proc.channel``."""

    def __init__(self, timeout_s: float, memory_mb: int, isolation: bool = True):
        self.timeout_s, self.memory_mb = check_limits(timeout_s, memory_mb)
        self.isolation = bool(isolation)
        if self.isolation:
            available, reason = isolation_available()
            if not available:
                raise IsolationUnavailable(unavailable_message(reason))
        self.deadline = 0.0
        self.process: subprocess.Popen | None = None
        self._jail: Jail | None = None

    @property
    def cpu_s(self) -> int:
        return int(self.timeout_s) + 2

    def __enter__(self) -> "StudentProcess":
        with ExitStack() as stack:
            try:
                stack.enter_context(_private_memory())
                self._dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="iosim-grade-"))
                self._start(stack)
            except OSError as exc:    # no file descriptors, processes or temporary space left: ours, not theirs
                raise SandboxError(f"cannot start the student's process: {exc.strerror or exc}") from None
            self._cleanup = stack.pop_all()
        return self

    def _start(self, stack: ExitStack) -> None:
        self.output_path = pathlib.Path(self._dir) / "output.txt"
        ours, theirs = socket.socketpair()
        stack.callback(ours.close)
        with open(self.output_path, "wb") as out, theirs:
            if self.isolation:
                self._submissions = pathlib.Path(self._dir) / "submission"
                self._submissions.mkdir()
                os.chmod(self._submissions, 0o755)   # whatever the umask: the student's uid reads it
                self._jail = Jail(["-I", "-c", _BOOT, *CHILD_PATH, str(theirs.fileno())],
                                  {**CHILD_ENV, "PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp"},
                                  limits_for(self.memory_mb, self.cpu_s), stdout=out,
                                  submission_dir=str(self._submissions), socket_fd=theirs.fileno())
                self.process = self._jail.process
                stack.callback(self._jail.close)  # stops it first
            else:
                env = {**CHILD_ENV, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self._dir}
                self.process = subprocess.Popen(
                    [sys.executable, "-I", "-c", _BOOT, _ROOT, str(theirs.fileno())],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=self._dir, env=env,
                    pass_fds=(theirs.fileno(),), start_new_session=True)
                stack.callback(self.stop)
        if self._jail is not None:
            self._jail.wait_ready()
        self.channel = Channel(ours)
        self._socket = ours
        self.deadline = time.monotonic() + self.timeout_s

    def hello(self, **payload) -> None:
        """The first message: what to load, and the limits the child sets on itself. With
        isolation the file is copied into the child's read-only ``/submission`` first."""
        if self._jail is not None and "file" in payload:
            source = pathlib.Path(payload["file"])
            try:
                shutil.copyfile(source, self._submissions / source.name)
            except OSError as exc:
                raise SandboxError(f"cannot copy {source} into the sandbox: {exc.strerror or exc}") from None
            os.chmod(self._submissions / source.name, 0o644)
            payload["file"] = f"{SUBMISSION}/{source.name}"
        self.channel.send({**payload, "memory_bytes": self.memory_mb << 20, "cpu_s": self.cpu_s}, self.deadline)

    def __exit__(self, *exc) -> None:
        self._cleanup.close()

    def stop(self) -> None:
        """Kill the child and everything it started: with isolation the whole PID namespace
        (this returns once it is gone), else its process group."""
        if self._jail is not None:
            self._jail.stop()
            return
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.process.kill()
        if self.process is not None:
            self.process.wait()

    def exit_reason(self, wait_s: float = 2.0) -> str:
        """Why the child is gone, once the connection has closed on it."""
        if self._jail is not None:  # its init reports how it ended
            outcome = self._jail.outcome(wait_s)
            if outcome is None:
                return "the student's process closed the connection to the grader"
            code = -outcome[1] if outcome[0] == "signal" else outcome[1]
        else:
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
