"""Red team: every cheating submission in tests/cli/redteam/ fails `iosim grade` for its reason.

Each row of :data:`CHEATS` names a submission (written as a cheating student would), the
assignment it is graded as, and what "failing for the right reason" means for it: a check
that fails with a detail matching a pattern, checks that must not pass, no ``LEAK`` in what
it printed, no connection to a loopback listener, no process or file that outlives the
grade. Every test also checks that the grader itself survives (a report comes back).

Cheats that attack the machine rather than the grade (reading files, the environment or the
seed, the network, surviving processes, signalling the grader, fork bombs) need the
sandbox's namespaces; they are skipped, with the reason, where
``iosim.grading.isolation.isolation_available()`` says they do not work (the other cheats
are then graded without the sandbox: tests/conftest.py). Set
``REDTEAM_IGNORE_ISOLATION=1`` to run the harmless ones anyway (to see what leaks without
the sandbox); the dangerous ones (kill(-1), the fork bomb) never run without it.

The network cheat connects only to a listener this test opens on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass

import pytest

from conftest import NAMESPACES, WHY_NO_NAMESPACES
from iosim.grading import grade

ROOT = pathlib.Path(__file__).resolve().parents[2]
REDTEAM = pathlib.Path(__file__).resolve().parent / "redteam"
CANARY_NAME = "IOSIM_REDTEAM_CANARY"
CLI_SEED = "987654321"

# What "the right reason" looks like, by class of cheat.
RESIDENCY = (r"(?i)releas|no longer|replac|expired|resident|on chip|after the loop|hoard|alive|identity"
             r"|not the block of a loop iteration|usable only inside")
HOARD = (("capacity", r"."), ("runs", RESIDENCY))
POISON = (("runs", r"(?i)input|read[- ]only|immutable|cannot (init|store|write)"), ("exactness", r"."))
EXACT = (("exactness", r"."),)
#: keeping a tile under the name of a whole ctx.read (to move the tensor out of shared memory)
RESERVED = ("runs", r"whole tensor ctx\.read holds")
ANY = (("*", r"."),)


@dataclass(frozen=True)
class Cheat:
    file: str
    assignment: str = "fa2"
    fails: tuple = ANY            # (check, regex) alternatives; "*" is any check
    not_pass: tuple = ()          # checks that must not pass
    sandbox: bool = False         # needs the sandbox's namespaces
    dangerous: bool = False       # never run without them, even when forced
    separate: bool = False        # grade in a separate process: the cheat attacks the grader
    cli: bool = False             # through the CLI with an explicit --seed
    timeout_s: float = 30.0          # ample for 12 inputs on a loaded machine; the grader takes at least 20 s
    #                               (grader.MIN_TIMEOUT_S: a smaller limit, as some cheats ask, becomes 20 s)
    memory_mb: int = 512
    no_leak: bool = False         # must print no "LEAK"
    network: bool = False         # must not reach the loopback listener
    survivors: bool = False       # nothing with the token, no marker after the grade
    plant: bool = False           # the marker is a file in the repository that must not appear
    output_max: int = 0           # the report keeps at most this much of the output
    output_has: str = ""          # the output must contain this
    xfail: str = ""

    def __str__(self):
        return self.file[:-3]


CHEATS = [
    # -- hoarding tiles (engine: residency by identity) ----------------------------------------
    Cheat("hoard_same_name_keep.py", fails=HOARD),
    Cheat("hoard_load_all_kv.py", fails=HOARD),
    Cheat("hoard_run_scope_loads.py", fails=HOARD),
    Cheat("hoard_closure.py", fails=HOARD),
    Cheat("hoard_closure_plain.py", fails=HOARD),
    Cheat("hoard_global.py", fails=HOARD),
    Cheat("hoard_class_attribute.py", fails=HOARD),
    Cheat("hoard_generators.py", fails=HOARD),
    Cheat("whole_read_in_registers.py", fails=(("capacity", r"(?i)whole|ctx\.read|register"), RESERVED)),
    Cheat("whole_kv_in_registers.py", fails=(RESERVED,)),
    Cheat("whole_read_rename.py", fails=(("capacity", r"(?i)whole|ctx\.read"), ("runs", RESIDENCY), RESERVED)),
    # -- the loop order dodged with state paid for (grader: an input too long for it to fit; session 36) --
    Cheat("two_pass_row.py", fails=(("capacity", r"long rows N=1024: .*registers"),)),
    Cheat("fa1_fake_hbm_state.py", "fa1", fails=(("capacity", r"long rows N=1024: .*registers"),)),
    # -- poisoned inputs (engine: immutable inputs; grader: pristine reference) ----------------
    Cheat("poison_init_q.py", fails=POISON),
    Cheat("poison_zero_v.py", fails=POISON),
    Cheat("poison_store_k.py", fails=POISON),
    Cheat("poison_fa1_init_k.py", "fa1", fails=POISON),
    # -- numerical shortcuts (grader: adversarial exactness inputs) -----------------------------
    Cheat("frozen_shift_500.py", fails=EXACT),
    Cheat("constant_shift.py", fails=EXACT),
    Cheat("first_block_max.py", fails=EXACT),
    Cheat("rescale_sometimes.py", fails=EXACT),
    # -- partial-credit dodges (grader: all-or-nothing over inputs) -----------------------------
    Cheat("dodge_overflow_on_large.py", not_pass=("exactness",)),
    Cheat("dodge_crash_on_large.py", not_pass=("exactness",)),
    Cheat("dodge_exit_on_large.py", not_pass=("exactness",)),
    Cheat("dodge_by_order.py", not_pass=("exactness",)),
    Cheat("dodge_timeout_on_large.py", not_pass=("exactness",), timeout_s=10),
    # -- protocol forgery (grader: nothing the child says is trusted) ---------------------------
    Cheat("forge_missing.py", fails=(("loads", r"."),)),
    Cheat("forge_rebind_missing.py", fails=(("loads", r"."),)),
    Cheat("forge_done_then_exit.py", fails=(("runs", r"."), ("exactness", r"."))),
    Cheat("forge_fake_child.py", fails=(("answer", r"WHY_TRAFFIC_DIFFERS"),), not_pass=("exactness",)),
    Cheat("forge_garbage.py", fails=(("runs", r"(?i)protocol"),)),
    Cheat("forge_deep_json.py", fails=(("runs", r"(?i)protocol"),)),
    Cheat("forge_swallow_abort.py", fails=(("capacity", r"."),)),
    Cheat("close_socket.py", fails=(("runs", r"(?i)crash|closed|protocol|exited|killed"),)),
    Cheat("monkeypatch_numpy.py", fails=EXACT),
    Cheat("monkeypatch_child.py", fails=(("runs", r"."), ("exactness", r"."))),
    # -- odd exceptions --------------------------------------------------------------------
    Cheat("raise_systemexit.py", fails=(("runs", r"SystemExit"),)),
    Cheat("raise_keyboardinterrupt_import.py", fails=(("loads", r"KeyboardInterrupt"),)),
    Cheat("raise_generatorexit.py", fails=(("runs", r"GeneratorExit|StopIteration"),)),
    Cheat("evil_exception.py", fails=(("runs", r"."),)),
    # -- resources --------------------------------------------------------------------------
    Cheat("memory_bomb_import.py", fails=(("loads", r"(?i)memory"),), memory_mb=256),
    Cheat("memory_bomb_numpy.py", fails=(("runs", r"(?i)memory"),), memory_mb=256),
    Cheat("cpu_burn.py", fails=(("runs", r"(?i)timeout|time limit|CPU"),), timeout_s=10),
    Cheat("cpu_burn_grader.py", fails=(("runs", r"(?i)timeout|time limit"),), timeout_s=10),
    Cheat("huge_output.py", output_max=20000),
    Cheat("fake_report_output.py", fails=EXACT),
    # -- the sandbox: files, environment, seed, network ----------------------------------------
    Cheat("read_instructor_solution.py", fails=EXACT, sandbox=True, no_leak=True),
    Cheat("import_instructor_syspath.py", fails=EXACT, sandbox=True, no_leak=True),
    Cheat("import_builtin_schedule.py", fails=(("loads", r"iosim\.schedules"),), sandbox=True),
    Cheat("read_environment.py", fails=EXACT, sandbox=True, separate=True, no_leak=True),
    Cheat("read_seed.py", fails=EXACT, sandbox=True, separate=True, cli=True, no_leak=True),
    Cheat("read_repository.py", fails=EXACT, sandbox=True, no_leak=True, plant=True),
    Cheat("network_loopback.py", fails=EXACT, sandbox=True, no_leak=True, network=True),
    # -- the sandbox: processes and signals ----------------------------------------------------
    Cheat("survive_double_fork.py", fails=EXACT, sandbox=True, survivors=True),
    Cheat("survive_marker_argv.py", fails=EXACT, sandbox=True, survivors=True),
    Cheat("kill_grader_sigkill.py", sandbox=True, separate=True),
    Cheat("killpg_grader.py", sandbox=True, separate=True),
    Cheat("stop_grader_sigstop.py", sandbox=True, separate=True, timeout_s=10),
    Cheat("kill_everything.py", sandbox=True, dangerous=True, separate=True),
    Cheat("fork_bomb.py", sandbox=True, dangerous=True, survivors=True, output_has="forks limited"),
]


# -- the sandbox ---------------------------------------------------------------------------
def _require_sandbox(cheat: Cheat) -> None:
    if NAMESPACES:
        return
    if cheat.dangerous or os.environ.get("REDTEAM_IGNORE_ISOLATION") != "1":
        pytest.skip(f"no sandbox here: {WHY_NO_NAMESPACES}")


# -- running the grade -------------------------------------------------------------------------
_IN_PROCESS = ("import json, sys\n"
               "from iosim.grading import grade\n"
               "r = grade(sys.argv[1], sys.argv[2], timeout_s=float(sys.argv[3]), memory_mb=int(sys.argv[4]))\n"
               "print('\\nREPORT ' + json.dumps(r.to_dict()))\n")
_CLI = ("import sys\n"
        "from iosim.cli.main import main\n"
        "sys.exit(main(['grade', sys.argv[1], '--assignment', sys.argv[2], '--timeout', sys.argv[3],\n"
        "               '--memory-mb', sys.argv[4], '--seed', sys.argv[5], '--format', 'json']))\n")


def _grade_separately(cheat: Cheat, path: pathlib.Path) -> dict:
    """Grade in a process of its own session, with a canary in its environment: a cheat that
    kills or stops its grader takes down only that process, and the test sees it."""
    env = {**os.environ, CANARY_NAME: f"canary-{uuid.uuid4().hex}"}
    code = _CLI if cheat.cli else _IN_PROCESS
    argv = [sys.executable, "-c", code, str(path), cheat.assignment, f"{cheat.timeout_s:g}", str(cheat.memory_mb)]
    if cheat.cli:
        argv.append(CLI_SEED)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=cheat.timeout_s + 40)
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        proc.communicate()
        pytest.fail(f"the grader did not finish within {cheat.timeout_s + 40:g} s (stopped or hung by the cheat)")
    text = out.decode("utf-8", "replace")
    if proc.returncode < 0:
        pytest.fail(f"the grader was killed by signal {-proc.returncode}; stderr: {err.decode()[-1500:]}")
    try:
        report = json.loads(text) if cheat.cli else json.loads(text.rsplit("\nREPORT ", 1)[1])
    except (ValueError, IndexError):
        pytest.fail(f"the grader returned no report (exit {proc.returncode}); stdout: {text[-1500:]}; "
                    f"stderr: {err.decode('utf-8', 'replace')[-1500:]}")
    assert env[CANARY_NAME] not in json.dumps(report), "the grader's environment reached the report"
    return report


def _grade(cheat: Cheat, path: pathlib.Path) -> dict:
    if cheat.separate:
        return _grade_separately(cheat, path)
    return grade(path, cheat.assignment, timeout_s=cheat.timeout_s, memory_mb=cheat.memory_mb).to_dict()


# -- what must not happen around the grade ----------------------------------------------------
class Listener:
    """A TCP listener on 127.0.0.1 (only) that records who connects."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.connections.append(peer)
            conn.close()

    def close(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()


def _with_token(token: str) -> list[int]:
    """PIDs of processes whose command line carries ``token``."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if token.encode() in f.read():
                        pids.append(int(name))
            except OSError:
                pass
    return pids


def _kill(pids: list[int]) -> None:
    """Stop the survivors a cheat of this test started (by their ids)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _summary(report: dict) -> str:
    lines = [f"{c['status'].upper():4} {c['name']}: {c['detail'][:400]}" for c in report["checks"]]
    if report.get("output"):
        lines.append("output: " + report["output"][-600:])
    return "\n".join(lines)


def _assert_right_reason(cheat: Cheat, report: dict) -> None:
    checks = {c["name"]: c for c in report["checks"]}
    summary = _summary(report)
    assert not report["passed"], f"{cheat.file} PASSED the grade:\n{summary}"
    for name in cheat.not_pass:
        status = checks[name]["status"] if name in checks else "absent"
        assert status != "pass", f"{name} must not pass (an input did not run to the end):\n{summary}"
    if cheat.fails:
        def matches(name, pattern):
            chosen = checks.values() if name == "*" else [checks[name]] if name in checks else []
            # A check "not judged" because an input stopped early is no failure for a reason of its own.
            return any(c["status"] == "fail" and re.search(pattern, c["detail"])
                       and (not c["detail"].startswith("not judged") or "differ from the reference" in c["detail"])
                       for c in chosen)
        wanted = " or ".join(f"{n} fails (/{p}/)" for n, p in cheat.fails)
        assert any(matches(n, p) for n, p in cheat.fails), f"expected {wanted}:\n{summary}"


# -- the test ------------------------------------------------------------------------------
def _param(cheat: Cheat):
    marks = [pytest.mark.xfail(reason=cheat.xfail, strict=False)] if cheat.xfail else []
    return pytest.param(cheat, id=str(cheat), marks=marks)


def test_the_table_covers_the_folder():
    files = {p.name for p in REDTEAM.glob("*.py")} - {"conftest.py"}
    assert files == {c.file for c in CHEATS}
    assert len(CHEATS) >= 30


@pytest.mark.parametrize("cheat", [_param(c) for c in CHEATS])
def test_cheat_fails_for_its_reason(cheat, tmp_path):
    if cheat.sandbox:
        _require_sandbox(cheat)
    token = f"redteam-{uuid.uuid4().hex}"
    marker = (ROOT / f".redteam-plant-{token}") if cheat.plant else (tmp_path / f"{token}.marker")
    listener = Listener() if cheat.network else None
    source = (REDTEAM / cheat.file).read_text()
    for key, value in {"__REPO__": str(ROOT), "__MARKER__": str(marker), "__TOKEN__": token,
                       "__PORT__": str(listener.port if listener else 0),
                       "__HOST_PIDNS__": os.readlink("/proc/self/ns/pid")}.items():
        source = source.replace(key, value)
    path = tmp_path / cheat.file
    path.write_text(source)

    start = time.monotonic()
    try:
        report = _grade(cheat, path)                      # the grader survives: a report comes back
    finally:
        if listener is not None:
            listener.close()
    elapsed = time.monotonic() - start
    survivors = _with_token(token) if cheat.survivors or cheat.dangerous else []
    if cheat.survivors:
        time.sleep(max(0.0, start + 3.0 - time.monotonic()))   # past the daemon's 2 s delay
        survivors = sorted(set(survivors) | set(_with_token(token)))
    _kill(survivors)
    planted = marker.exists()
    if cheat.plant and planted:
        marker.unlink()

    assert elapsed < cheat.timeout_s + 30, f"the grade took {elapsed:.1f} s"
    _assert_right_reason(cheat, report)
    output = report.get("output", "")
    if cheat.no_leak:
        leaks = [line for line in output.splitlines() if "LEAK" in line]
        assert not leaks, "the submission reached what it must not:\n" + "\n".join(leaks[:8])
        assert CLI_SEED not in output and CANARY_NAME not in output, output[-1500:]
    if listener is not None:
        assert not listener.connections, f"the submission connected to 127.0.0.1:{listener.port}"
    if cheat.survivors or cheat.dangerous:
        assert not survivors, f"{len(survivors)} process(es) started by the submission outlived the grade"
        assert not planted, f"a process started by the submission wrote {marker} after the grade"
    if cheat.plant:
        assert not planted, "the submission wrote a file into the repository"
    if cheat.output_max:
        assert len(output) <= cheat.output_max, f"the report keeps {len(output):,} characters of output"
    if cheat.output_has:
        assert cheat.output_has in output, output[-1500:]
