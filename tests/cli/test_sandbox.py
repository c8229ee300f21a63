"""The sandbox of `iosim grade` (Linux namespaces): what a submission cannot see or do.

A hostile submission (SPY below) is graded once, with isolation, by `iosim grade` in a
process of its own whose environment holds a secret. At import it tries to read the
repository, the instructor's files, the home folder and this test's /proc entries, to find
the secret in any process's environment, to see and signal the grader, to connect to a
listener this test opens on 127.0.0.1, to leave a double-forked ``setsid`` process behind,
and to fork without end. It prints one ``SPY key value`` line per attempt; the test reads
them, and looks at this machine after the grade. The dangerous attempts (signals,
kill(-1), the fork bomb) run only where the submission finds itself in a PID namespace
other than this test's, so a broken sandbox fails the test instead of harming the
machine; the fork bomb stops at 200 processes anyway. Other tests look at the view from
inside (``run_python``), grade an instructor solution in the sandbox, and check the
refusal, the ``--no-isolation`` warning and the limits' validation.

Every test that needs the namespaces skips, with the reason, where
``isolation_available()`` says they are not there.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import textwrap
import uuid

import pytest

from iosim.cli.main import main
from iosim.grading import grade, isolation
from iosim.grading.isolation import (MAX_PROCESSES, NO_ISOLATION_WARNING, IsolationUnavailable, isolation_available,
                                     run_python)
from iosim.grading.sandbox import MAX_MEMORY_MB, MAX_TIMEOUT_S, StudentProcess, check_limits

ROOT = pathlib.Path(__file__).resolve().parents[2]
INSTRUCTOR = ROOT / "examples" / "assignments" / "instructor"
from conftest import NAMESPACES as AVAILABLE, WHY_NO_NAMESPACES as REASON  # noqa: E402

pytestmark = pytest.mark.isolation      # about the sandbox itself: graded as the machine allows
needs_isolation = pytest.mark.skipif(not AVAILABLE, reason=f"no sandbox here: {REASON}")
CANARY = "IOSIM_SANDBOX_CANARY"

SPY = '''
import ctypes, os, signal, socket, sys, time

REPO, HOME, PORT, MARKER, GRADER, HOST_PIDNS, SECRET = __ARGS__


def say(key, value):
    print(f"SPY {key} {value}", flush=True)


def attempt(action):
    try:
        return f"ok:{str(action())[:40]!r}"
    except Exception as exc:
        return type(exc).__name__


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def processes():
    return [p for p in os.listdir("/proc") if p.isdigit()]


isolated = os.readlink("/proc/self/ns/pid") != HOST_PIDNS
say("isolated", isolated)
say("repo", attempt(lambda: open(REPO + "/pyproject.toml").read()))
say("instructor", attempt(lambda: open(REPO + "/examples/assignments/instructor/fa2_solution.py").read()))
say("home", attempt(lambda: os.listdir(HOME)))
say("passwd", attempt(lambda: open("/etc/passwd").read()))
say("grader_cmdline", attempt(lambda: open(f"/proc/{GRADER}/cmdline").read()))
say("grader_environ", attempt(lambda: open(f"/proc/{GRADER}/environ").read()))
command_lines = b" ".join(read(f"/proc/{p}/cmdline") for p in processes())
say("pids", len(processes()))
say("cmdline_names_repo", REPO.encode() in command_lines or b"pytest" in command_lines)
say("environ_secret", any(SECRET.encode() in read(f"/proc/{p}/environ") for p in processes() + ["self"]))
say("see_grader", attempt(lambda: os.kill(GRADER, 0)))
say("network", attempt(lambda: socket.create_connection(("127.0.0.1", PORT), timeout=2).close()))
if isolated:
    say("kill_parent", attempt(lambda: os.kill(os.getppid(), signal.SIGKILL)))
    say("kill_all", attempt(lambda: os.kill(-1, signal.SIGKILL)))
    first = os.fork()
    if first == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", MARKER])
        os._exit(0)
    os.waitpid(first, 0)
    for _ in range(100):
        if any(MARKER.encode() in read(f"/proc/{p}/cmdline") for p in processes()):
            say("survivor", "running")
            break
        time.sleep(0.05)
    forks = 0
    try:
        for _ in range(200):
            if os.fork() == 0:
                ctypes.CDLL(None).prctl(15, MARKER[:15].encode(), 0, 0, 0)   # PR_SET_NAME: its comm
                time.sleep(120)
                os._exit(0)
            forks += 1
    finally:
        say("forks", forks)


def choose_blocks(hw, problem):
    return (64, 64)
'''


def host_processes_with(marker: str) -> list[int]:
    """PIDs on this machine whose command line or name holds ``marker``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        for name in ("cmdline", "comm"):
            try:
                if marker.encode()[:15] in pathlib.Path(f"/proc/{pid}/{name}").read_bytes():
                    found.append(int(pid))
            except OSError:
                pass
    return found


def grade_spy(tmp_path, listener, marker: str, secret: str) -> dict:
    """Grade SPY with `iosim grade` in a process of its own whose environment holds ``secret``: its JSON report."""
    args = (str(ROOT), os.path.expanduser("~"), listener.getsockname()[1], marker, os.getpid(),
            os.readlink("/proc/self/ns/pid"), secret)
    path = tmp_path / "spy.py"
    path.write_text(SPY.replace("__ARGS__", repr(args)))
    done = subprocess.run([sys.executable, "-m", "iosim", "grade", str(path), "--assignment", "blocks", "--seed", "0",
                           "--timeout", "20", "--format", "json"], env={**os.environ, CANARY: secret},
                          capture_output=True, text=True, timeout=120)
    if not done.stdout.strip():
        pytest.fail(f"iosim grade printed no report (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


# -- what a submission cannot do -----------------------------------------------------------------
@needs_isolation
def test_a_hostile_submission_reaches_nothing(tmp_path):
    """One grade (a few seconds), every attempt of SPY checked: one test, so that pytest-xdist
    does not grade it once per worker."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        marker, secret = "iosimspy" + uuid.uuid4().hex[:7], uuid.uuid4().hex
        report = grade_spy(tmp_path, listener, marker, secret)
        with pytest.raises(BlockingIOError):       # nobody connected to this test's 127.0.0.1
            listener.accept()
    said = dict(line.split(" ", 2)[1:] for line in report["output"].splitlines() if line.startswith("SPY "))
    assert said.get("isolated") == "True" and report["isolation"] is True and "warning" not in report, report
    missing = "FileNotFoundError"
    expected = {
        # the repository, the instructor's files, the home folder, /etc: not in its view
        "repo": missing, "instructor": missing, "passwd": missing,
        # this test's /proc entries: its PID does not exist there (nor can it be signalled)
        "grader_cmdline": missing, "grader_environ": missing, "see_grader": "ProcessLookupError",
        # no process it sees names the repository or pytest; the grader's environment is in none it can read
        "cmdline_names_repo": "False", "environ_secret": "False",
        # its own network namespace: no route to the test's 127.0.0.1
        "network": "OSError",
        # kill(getppid()) reaches only the namespace's init, which ignores it; kill(-1) only the namespace
        "kill_parent": "ok:'None'", "kill_all": "ProcessLookupError",
        # the double-forked, setsid process did start (and below: it did not outlive the grade)
        "survivor": "running",
    }
    if os.path.expanduser("~") not in ("/", "/tmp"):
        expected["home"] = missing
    assert {key: said.get(key) for key in expected} == expected, report["output"]
    assert int(said["pids"]) <= 3                  # init, itself, its survivor: nothing else
    # the fork bomb: stopped by RLIMIT_NPROC, a failing grade that says so
    assert 0 < int(said["forks"]) < MAX_PROCESSES, report["output"]
    loads = next(c for c in report["checks"] if c["name"] == "loads")
    assert loads["status"] == "fail" and "BlockingIOError" in loads["detail"], loads
    # nothing outlives the grade: neither the survivor nor a fork of the bomb
    assert host_processes_with(marker) == []


@needs_isolation
def test_the_view_holds():
    status, out = run_python(textwrap.dedent('''
        import ctypes, json, os, socket
        libc = ctypes.CDLL(None, use_errno=True)
        def call(name, *args):
            return getattr(libc, name)(*args) == 0
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        print(json.dumps({
            "root": sorted(os.listdir("/")),
            "ids": [os.getuid(), os.getgid(), os.getgroups(), os.getpid(), os.getppid()],
            "caps": [status[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "NoNewPrivs")],
            "escapes": [call("mount", None, b"/", None, ctypes.c_ulong(32 | 4096), None),  # MS_REMOUNT | MS_BIND: rw
                        call("umount2", b"/submission", 2), call("chroot", b"/tmp"),
                        call("unshare", 0x10000000), call("unshare", 0x00020000)],    # CLONE_NEWUSER, CLONE_NEWNS
            "writable": [os.access(p, os.W_OK) for p in ("/", "/python", "/submission", "/opt/iosim", "/tmp")],
            "interfaces": [name for _, name in socket.if_nameindex()], "host": socket.gethostname()}))
        '''))
    assert status == ("exit", 0), out
    seen = json.loads(out)
    assert {"dev", "opt", "proc", "submission", "tmp"} <= set(seen["root"]) <= {
        "dev", "etc", "lib", "lib32", "lib64", "libx32", "opt", "proc", "python", "submission", "tmp", "usr"}
    assert seen["ids"] == [1000, 1000, [], 2, 1]
    assert seen["caps"] == ["0000000000000000", "0000000000000000", "0000000000000000", "1"]
    assert seen["escapes"] == [False] * 5        # no remount, unmount, chroot, nested namespaces
    assert seen["writable"] == [False, False, False, False, True]
    assert seen["interfaces"] == ["lo"] and seen["host"] == "iosim-grade"


def test_the_student_process_imports_only_what_the_view_shows():
    """The child's import closure stays inside CHILD_PACKAGES: the view hides the rest of iosim."""
    code = "import sys, iosim.grading.child; print(' '.join(sorted(m for m in sys.modules if m.startswith('iosim'))))"
    out = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {code}"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert "iosim.grading.child" in out
    outside = [m for m in out if m.count(".") and m.split(".")[1] not in isolation.CHILD_PACKAGES + ("errors", "dtypes")]
    assert outside == []


@needs_isolation
def test_iosims_own_schedules_are_not_in_the_view():
    status, out = run_python(textwrap.dedent('''
        import importlib, json, os, sys
        sys.path[:0] = ["/opt/iosim", "/opt/iosim/site"]
        import iosim
        root = os.path.dirname(iosim.__file__)
        found = {}
        for name in ("iosim.schedules.fa2", "iosim.run.simulation", "iosim.studies.explore", "iosim.grading.child"):
            try:
                importlib.import_module(name)
                found[name] = "imported"
            except ImportError as exc:
                found[name] = type(exc).__name__
        import sysconfig
        installed = [p for p in {sysconfig.get_paths()[k] for k in ("purelib", "platlib")} if os.path.isdir(p)]
        print(json.dumps({"found": found, "schedules": os.listdir(os.path.join(root, "schedules")),
                          "installed": {p: os.listdir(p) for p in installed},
                          "engine": "context.py" in os.listdir(os.path.join(root, "engine"))}))
        '''))
    assert status == ("exit", 0), out
    seen = json.loads(out)
    assert seen["found"] == {"iosim.schedules.fa2": "ModuleNotFoundError", "iosim.run.simulation": "ModuleNotFoundError",
                             "iosim.studies.explore": "ModuleNotFoundError", "iosim.grading.child": "imported"}
    assert seen["schedules"] == [] and seen["engine"]
    assert all(listing == [] for listing in seen["installed"].values()), seen["installed"]   # no other copy of iosim


# -- the instructor's solutions still pass ------------------------------------------------------------
@needs_isolation
def test_instructor_solution_passes_in_the_sandbox():
    report = grade(INSTRUCTOR / "fa2_solution.py", seed=0)
    assert report.passed, report.render()


@needs_isolation
def test_a_sandbox_that_cannot_be_built_is_the_graders_error(monkeypatch, tmp_path, capsys):
    real = isolation.view

    def broken(submission_dir):
        mounts, exe, env = real(submission_dir)
        return mounts + [["ro", "/no/such/folder", "/opt/nowhere"]], exe, env

    monkeypatch.setattr(isolation, "view", broken)
    path = tmp_path / "fine.py"
    path.write_text("def choose_blocks(hw, problem):\n    return (64, 64)\n")
    assert main(["grade", str(path), "--seed", "0"]) == 2    # bad input of the machine, not a failing grade
    assert "could not be built" in capsys.readouterr().err


# -- where there is no sandbox -----------------------------------------------------------------------
def test_refused_without_namespaces_unless_no_isolation(monkeypatch, capsys):
    monkeypatch.setattr("iosim.grading.isolation.isolation_available", lambda: (False, "no namespaces in this test"))
    assert main(["grade", str(INSTRUCTOR / "blocks_solution.py")]) == 2
    err = capsys.readouterr().err
    assert "no namespaces in this test" in err and "--no-isolation" in err
    monkeypatch.setattr("iosim.grading.sandbox.isolation_available", lambda: (False, "no namespaces in this test"))
    with pytest.raises(IsolationUnavailable):
        StudentProcess(10, 512)


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_no_isolation_warns_on_every_report(tmp_path, capsys, fmt):
    path = tmp_path / "raises.py"
    path.write_text("raise ValueError('not today')\ndef choose_blocks(hw, problem):\n    return (64, 64)\n")
    assert main(["grade", str(path), "--no-isolation", "--seed", "0", "--format", fmt]) == 1
    out = capsys.readouterr().out
    if fmt == "json":
        data = json.loads(out)
        assert data["isolation"] is False and data["warning"] == NO_ISOLATION_WARNING
    else:
        assert out.startswith(NO_ISOLATION_WARNING) and "ValueError: not today" in out


# -- the limits ------------------------------------------------------------------------------------
def test_limits_are_checked_in_the_grader():
    assert check_limits(10 ** 300, 10 ** 18) == (MAX_TIMEOUT_S, MAX_MEMORY_MB)   # clamped: no overflow in the child
    assert check_limits(float("inf"), 512) == (MAX_TIMEOUT_S, 512)
    assert check_limits(1.5, 256) == (1.5, 256)
    for bad in [(0, 512), (-1, 512), (float("nan"), 512), (True, 512), ("10", 512), (10, 0), (10, 1.5), (10, True)]:
        with pytest.raises(ValueError):
            check_limits(*bad)
    proc = StudentProcess(10, 10 ** 18, isolation=False)
    assert proc.memory_mb == MAX_MEMORY_MB and (proc.memory_mb << 20) < 1 << 63
