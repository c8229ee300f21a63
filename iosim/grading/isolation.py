"""The grader's side of the sandbox: what the student's process sees, and starting it there.

On Linux the student's process runs in new user, PID, network, mount, IPC, UTS and cgroup
namespaces, built by :mod:`iosim.grading.jail` (which runs in its own interpreter). This
module decides the view and the limits, starts the launcher and reads its status pipe.

The view (everything else of the machine is absent):

* ``/python``: the interpreter's installation (``sys.base_prefix``), read-only; a system
  interpreter (prefix ``/usr`` or ``/usr/local``) keeps its path;
* ``/lib*``, ``/usr/lib*`` (shared libraries) and ``/etc/ld.so.cache``, read-only;
* ``/opt/iosim/iosim``: the ``iosim`` package, read-only, and beside it the built-in
  hardware profiles; of the package only what the student's process imports
  (:data:`CHILD_PACKAGES`: the stand-in ``ctx``, the protocol, the problem's shapes) is
  there: every other subpackage (the built-in schedules, the runs, the models, …) is an
  empty folder, here and wherever else the view shows the installed package, so a
  submission cannot import or read iosim's own FA1/FA2; ``/opt/iosim/site``: iosim's dependencies (numpy, networkx, PyYAML,
  from the installed metadata), read-only;
* ``/submission``: the submitted file, read-only;
* ``/tmp``: a private, size-limited tmpfs (the working directory and ``HOME``);
* ``/proc`` of the new PID namespace; ``/dev`` with ``null``, ``zero`` and ``urandom``.

The student's process runs as uid/gid 1000 inside, mapped to the grader's user outside, or
to ``nobody`` (65534) when the grader runs as root (the kernel does not enforce
``RLIMIT_NPROC`` on root); it has no capabilities, ``no_new_privs``, and no network
interface but its own loopback, down.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import platform
import re
import select
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import time

from ..errors import IosimError

INSIDE_UID = 1000
NOBODY = 65534
#: processes (threads too) the student's uid may have in its namespace, init included (RLIMIT_NPROC);
#: the child needs two (init and itself), and RLIMIT_AS holds per process: this bounds their sum too
MAX_PROCESSES = 16
#: open files per process (RLIMIT_NOFILE)
MAX_FILES = 256
FILE_BYTES = 16 << 20
TMP_MB = 64
PYTHON_ROOT = "/python"
LIB = "/opt/iosim"
SITE = "/opt/iosim/site"
SUBMISSION = "/submission"
HOSTNAME = "iosim-grade"
#: the subpackages of iosim the student's process may import: iosim.grading.child's closure
#: (tests/cli/test_sandbox.py checks it) and the hardware profiles (a choose_blocks answer
#: reads them: load_profile; installed, the built-in YAML files are the package data
#: iosim/hardware_profiles); the view shows every other one empty
CHILD_PACKAGES = ("engine", "grading", "hardware", "hardware_profiles", "workload")
#: the student's process's environment, with or without isolation: one thread per BLAS (numpy's
#: import would start a thread per core, against the process limit and the memory limit)
CHILD_ENV = {"LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
             "MKL_NUM_THREADS": "1"}
#: what the child puts first on sys.path: the iosim package's folder, then its dependencies
CHILD_PATH = (LIB, SITE)
STARTUP_S = 30.0
_SYSTEM_PREFIXES = ("/usr", "/usr/local")
_LIB_DIRS = ("/lib", "/lib32", "/lib64", "/libx32", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32")
_DEPENDENCIES = ("numpy", "networkx", "pyyaml")  # pyproject.toml's, when iosim's metadata is not installed
_JAIL = pathlib.Path(__file__).with_name("jail.py")
_PIVOT_MACHINES = ("x86_64", "aarch64", "riscv64", "ppc64le", "s390x")  # jail.SYS_PIVOT_ROOT
NO_ISOLATION_WARNING = (
    "warning: graded WITHOUT isolation (--no-isolation): the submission ran as your user, with your "
    "files, your processes and the network in reach; grade only files you trust this way")


def unavailable_message(reason: str) -> str:
    """What `iosim grade` says when it refuses to grade without namespaces."""
    return (f"cannot isolate the student's process on this machine: {reason}. `iosim grade` runs each submission "
            "in new Linux namespaces (user, PID, network, mount), where it cannot see your files, the network or "
            "the grader; pass --no-isolation to grade without them (only files you trust)")


class IsolationUnavailable(IosimError):
    """This machine cannot run the student's process in namespaces (``--no-isolation`` grades anyway)."""


class SandboxError(IosimError):
    """The sandbox could not be built (a problem of the machine, not of the submission)."""


# -- the view ---------------------------------------------------------------------------------
def _python() -> tuple[list, str, dict]:
    """Mounts of the interpreter, its executable inside, and the environment it needs there."""
    base = os.path.realpath(sys.base_prefix)
    exe = _launcher_python()
    if os.path.relpath(exe, base).startswith(".."):
        raise IsolationUnavailable(f"the interpreter {exe} is not inside its installation {base}")
    if base in _SYSTEM_PREFIXES:
        return [["ro", base, base]], exe, {}
    inside = PYTHON_ROOT + "/" + os.path.relpath(exe, base)
    return [["ro", base, PYTHON_ROOT]], inside, {"LD_LIBRARY_PATH": PYTHON_ROOT + "/lib"}


def _launcher_python() -> str:
    """The interpreter that runs the launcher (standard library only): the installation's own,
    not a virtual environment's link to it, whose path (say, a .venv inside the repository)
    init's command line would otherwise show to the student's process."""
    return os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(dist: str) -> list[str]:
    """Names of the distributions ``dist`` needs at run time (extras left out)."""
    try:
        specs = importlib.metadata.requires(dist) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    return [re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", s).group(0) for s in specs if "extra" not in s]


def _top_level(dist: str) -> set[str]:
    try:
        d = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return set()
    declared = (d.read_text("top_level.txt") or "").split()
    if declared:
        return set(declared)
    return {f.parts[0] if len(f.parts) > 1 else f.stem for f in (d.files or []) if f.suffix == ".py"
            and not f.parts[0].endswith((".dist-info", ".egg-info")) and f.parts[0] != ".."}


@functools.lru_cache(maxsize=None)
def dependency_modules() -> tuple[str, ...]:
    """Top-level modules of iosim's run-time dependencies, and of theirs."""
    todo, seen, modules = _requirements("iosim") or list(_DEPENDENCIES), set(), set()
    while todo:
        dist = _norm(todo.pop())
        if dist not in seen:
            seen.add(dist)
            modules |= _top_level(dist)
            todo += _requirements(dist)
    return tuple(sorted(m for m in modules if m.isidentifier() and m != "iosim"))


def _site_mounts() -> list:
    mounts = []
    for name in dependency_modules():
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue
        if spec.submodule_search_locations:
            where = pathlib.Path(list(spec.submodule_search_locations)[0])
        elif spec.origin and os.path.isfile(spec.origin):
            where = pathlib.Path(spec.origin)
        else:
            continue
        mounts.append(["ro", str(where), f"{SITE}/{where.name}"])
        libs = where.with_name(f"{where.name}.libs")  # manylinux wheels keep their shared libraries there
        if libs.is_dir():
            mounts.append(["ro", str(libs), f"{SITE}/{libs.name}"])
    return mounts


def _iosim_mounts() -> list:
    package = pathlib.Path(__file__).resolve().parents[1]
    mounts = [["ro", str(package), f"{LIB}/iosim"]]
    profiles = package.parent / "hardware_profiles"  # a source checkout's (installed, they are package data)
    if profiles.is_dir():
        mounts.append(["ro", str(profiles), f"{LIB}/hardware_profiles"])
    return mounts


def _hidden(mounts: list) -> list:
    """Empty read-only folders over what a mounted tree would show beyond the view's purpose:
    iosim's subpackages the child does not import, and every folder of installed packages
    (site-packages, dist-packages) inside the interpreter's or the libraries' trees, where
    another copy of iosim (or anything else installed) could be read. iosim's dependencies
    are mounted on their own, under ``/opt/iosim/site``."""
    package = pathlib.Path(__file__).resolve().parents[1]
    names = sorted(d.name for d in package.iterdir()
                   if d.is_dir() and d.name not in CHILD_PACKAGES and d.name != "__pycache__")
    hides = [f"{root}/{name}" for root in _seen_at(mounts, str(package)) for name in names]
    for folder in sorted(_installed_package_folders()):
        hides += _seen_at(mounts, folder)
    return [["tmpfs", "size=4k,nr_inodes=4,mode=0555", path] for path in hides]


def _seen_at(mounts: list, path: str) -> list:
    """Where the view shows the host's ``path`` (through the read-only mounts that contain it)."""
    seen = []
    for kind, source, target in mounts:
        rel = os.path.relpath(path, source) if kind == "ro" and os.path.isdir(path) else ".."
        if not rel.startswith(".."):
            seen.append(target if rel == "." else f"{target}/{rel}")
    return seen


def _installed_package_folders() -> set:
    base = {"base": sys.base_prefix, "platbase": sys.base_prefix}
    folders = set(site.getsitepackages()) | {site.getusersitepackages()}
    folders |= {sysconfig.get_paths(vars=base)[key] for key in ("purelib", "platlib")}   # a venv's interpreter's own
    folders |= {p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")}
    for lib in _LIB_DIRS + ("/usr/local/lib",):
        if os.path.isdir(lib):
            folders |= {os.path.join(lib, d, sub) for d in os.listdir(lib) if d.startswith("python")
                        for sub in ("site-packages", "dist-packages")}
    return {os.path.realpath(f) for f in folders if os.path.isdir(f)}


def view(submission_dir: str) -> tuple[list, str, dict]:
    """(mounts in order, the interpreter's path inside, environment it needs) for one run."""
    python, exe, env = _python()
    covered = {m[2] for m in python}
    mounts = []
    for path in _LIB_DIRS:
        if any(path == c or path.startswith(c + "/") for c in covered):
            continue
        if os.path.islink(path):
            mounts.append(["link", os.readlink(path), path])
        elif os.path.isdir(path):
            mounts.append(["ro", path, path])
    if os.path.isfile("/etc/ld.so.cache"):
        mounts.append(["ro", "/etc/ld.so.cache", "/etc/ld.so.cache"])
    mounts += python + _iosim_mounts() + _site_mounts()
    mounts += _hidden(mounts)
    mounts.append(["ro", submission_dir, SUBMISSION])
    mounts.append(["tmpfs", f"size={TMP_MB}m,nr_inodes=4096,mode=0700,uid={INSIDE_UID},gid={INSIDE_UID}", "/tmp"])
    mounts.append(["tmpfs", "size=64k,nr_inodes=64,mode=0755", "/dev"])
    mounts += [["dev", f"/dev/{name}", f"/dev/{name}"] for name in ("null", "zero", "urandom")]
    mounts += [["link", "/proc/self/fd", "/dev/fd"]]
    mounts += [["link", f"/proc/self/fd/{k}", f"/dev/{name}"] for k, name in enumerate(("stdin", "stdout", "stderr"))]
    mounts += [["seal", None, "/dev"], ["proc", None, "/proc"]]
    return mounts, exe, env


# -- the launcher -----------------------------------------------------------------------------
class Jail:
    """The isolated process: the launcher's ``Popen`` (in the grader's namespaces) and its status pipe."""

    def __init__(self, argv_tail: list, env: dict, limits: dict, *, stdout, submission_dir: str,
                 socket_fd: int | None = None):
        mounts, exe, python_env = view(submission_dir)
        status_r, status_w = os.pipe()
        config = {"parent": os.getpid(), "status_fd": status_w, "socket_fd": socket_fd, "uid": INSIDE_UID,
                  "nobody": NOBODY, "hostname": HOSTNAME, "mounts": mounts, "limits": limits, "cwd": "/tmp",
                  "argv": [exe, *argv_tail], "env": {**env, **python_env}}
        self._status, self._buffer, self.lines = status_r, b"", []
        fds = (status_w,) if socket_fd is None else (status_w, socket_fd)
        try:
            self.process = subprocess.Popen(
                [_launcher_python(), "-I", "-S", "-c", _JAIL.read_text()], stdin=subprocess.PIPE, stdout=stdout,
                stderr=subprocess.STDOUT, env={"LANG": "C.UTF-8"}, cwd="/", pass_fds=fds, start_new_session=True)
        except BaseException:
            os.close(status_r)
            raise
        finally:
            os.close(status_w)
        try:
            self.process.stdin.write(json.dumps(config).encode())
            self.process.stdin.close()
        except OSError:
            pass

    def _line(self, deadline: float) -> str | None:
        """The next status line; None at end of file or at the deadline."""
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._status], [], [], remaining)[0]:
                return None
            chunk = os.read(self._status, 4096)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        text = line.decode("utf-8", "replace")
        self.lines.append(text)
        return text

    def wait_ready(self, timeout_s: float = STARTUP_S) -> None:
        """Return once the student's interpreter runs; :class:`SandboxError` if it cannot."""
        line = self._line(time.monotonic() + timeout_s)
        if line != "ready":
            self.stop()
            why = line[len("error "):] if line and line.startswith("error ") else (
                f"no answer within {timeout_s:g} s" if line is None else line)
            raise SandboxError(f"the sandbox for the student's process could not be built: {why}")

    def outcome(self, wait_s: float = 0.5) -> tuple[str, int] | None:
        """``("exit", code)`` or ``("signal", number)`` once the student's process has ended, else None."""
        deadline = time.monotonic() + wait_s
        while (line := self._line(deadline)) is not None:
            kind, _, value = line.partition(" ")
            if kind in ("exit", "signal") and value.isdigit():
                return kind, int(value)
        return None

    def stop(self, grace_s: float = 5.0) -> None:
        """End the sandbox: the launcher kills init (everything in the namespace dies with it)
        and returns once it is gone; SIGKILL to the launcher's group if it does not."""
        if self.process.poll() is None:
            try:
                self.process.send_signal(signal.SIGTERM)
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    self.process.kill()
        self.process.wait()

    def close(self) -> None:
        self.stop()
        os.close(self._status)


# -- is it available here ---------------------------------------------------------------------------
_PROBE = "import sys; sys.path[:0] = sys.argv[1:]; import iosim.grading.child; print('sandbox ok')"


def _kernel_reason() -> str | None:
    """Why this machine cannot have the namespaces, from what it says about itself; None if it may."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux namespaces, and this is {sys.platform}"
    if platform.machine() not in _PIVOT_MACHINES:
        return f"the sandbox does not know pivot_root's system call number on {platform.machine()}"
    for path, what in (("/proc/sys/user/max_user_namespaces", "user namespaces are disabled"),
                       ("/proc/sys/kernel/unprivileged_userns_clone", "unprivileged user namespaces are disabled")):
        try:
            value = pathlib.Path(path).read_text().strip()
        except OSError:
            continue
        if value == "0" and (os.geteuid() != 0 or "max_user" in path):
            return f"{what} ({path} is 0)"
    return None


_known: list = []  # the answer, once it is known for good


def isolation_available() -> tuple[bool, str]:
    """(whether the student's process can run in namespaces here, why or why not): a trial run
    that builds the whole sandbox and imports the child's module in it. A success, or a kernel
    without the namespaces, is remembered for the life of the process; a failed trial is not
    (it is tried again next time: it may have been the machine's load)."""
    if _known:
        return _known[0]
    reason = _kernel_reason()
    if reason is not None:
        _known.append((False, reason))
        return _known[0]
    try:
        status, output = run_python(_PROBE, *CHILD_PATH, timeout_s=60.0)
    except (IosimError, OSError) as exc:
        return False, str(exc)
    if status != ("exit", 0) or "sandbox ok" not in output:
        return False, f"a trial run in the sandbox failed ({status}): {output.strip()[-300:]}"
    _known.append((True, "user, PID, network, mount, IPC, UTS and cgroup namespaces; no capabilities"))
    return _known[0]


def run_python(code: str, *args: str, timeout_s: float = 20.0, memory_mb: int = 1024) -> tuple:
    """Run ``python -I -c CODE ARGS...`` in the sandbox (an empty /submission):
    (``("exit", n)``, ``("signal", n)`` or None if it did not end in time, its output)."""
    with tempfile.TemporaryDirectory(prefix="iosim-sandbox-") as folder:
        os.mkdir(os.path.join(folder, "submission"), 0o755)
        out_path = os.path.join(folder, "output.txt")
        with open(out_path, "wb") as out:
            jail = Jail(["-I", "-c", code, *args], {**CHILD_ENV, "HOME": "/tmp"},
                        limits_for(memory_mb, timeout_s), stdout=out, submission_dir=os.path.join(folder, "submission"))
        try:
            jail.wait_ready()
            status = jail.outcome(timeout_s)
        finally:
            jail.close()
        return status, pathlib.Path(out_path).read_text("utf-8", "replace")


def limits_for(memory_mb: int, cpu_s: int) -> dict:
    """The resource limits of the student's process (values already checked by the caller)."""
    return {"core": 0, "fsize": FILE_BYTES, "as": int(memory_mb) << 20, "cpu": int(cpu_s), "nproc": MAX_PROCESSES,
            "nofile": MAX_FILES}
