"""`iosim grade` trusts nothing of the student's process (issue 12): the seed never reaches
it; nothing it says is believed without checking; limits are the instructor's to get right,
never a student's failure. (The inputs and verdicts: test_grade_verdicts.py.)"""

import json
import pathlib

import numpy as np
import pytest

from conftest import submission
from iosim.cli.main import main
from iosim.grading import GradingInputError, grade
from iosim.grading import grader as grader_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
INSTRUCTOR = ROOT / "examples" / "assignments" / "instructor"
SOLUTION = (INSTRUCTOR / "fa2_solution.py").read_text()


# -- the seed ------------------------------------------------------------------------------------
SEED = 918273645546372819
SEED_HUNT = '''
import gc, os, sys

def _hunt(where):
    needle = __NEEDLE__   # made at run time: the file itself does not hold the seed
    found = []
    try:
        found += [f"argv {sys.argv}"] if any(needle in a for a in sys.argv) else []
        found += [f"environ {k}"] if any(needle in k or needle in v for k, v in os.environ.items()) else []
        for name in ("/proc/self/cmdline", "/proc/self/environ"):
            with open(name, "rb") as f:
                found += [name] if needle.encode() in f.read() else []
        for folder in {os.getcwd(), os.environ.get("HOME", "."), os.path.dirname(os.path.abspath(__file__))}:
            for entry in os.listdir(folder):
                path = os.path.join(folder, entry)
                if needle in entry:
                    found.append(path)
                elif os.path.isfile(path) and os.path.getsize(path) < 1 << 20:
                    with open(path, "rb") as f:
                        found += [path] if needle.encode() in f.read() else []
        for obj in gc.get_objects():
            if isinstance(obj, dict):
                values = list(obj.values()) + list(obj.keys())
            elif isinstance(obj, (list, tuple)):
                values = list(obj)
            else:
                continue
            for v in values:
                if (type(v) is int and v == int(needle)) or (isinstance(v, str) and needle in v
                                                             and v is not needle):
                    found.append(f"object {type(obj).__name__}")
    except Exception as exc:
        print(f"hunt error {type(exc).__name__}: {exc}", flush=True)
    print(f"{where}: {'SEED FOUND ' + '; '.join(found[:5]) if found else 'nothing'}", flush=True)

_hunt("import")

def fa2_forward(ctx):
    _hunt(f"run {ctx.problem.seq_len_q}")
'''


def test_the_seed_never_reaches_the_students_process(tmp_path, monkeypatch):
    sent = []
    from iosim.grading import protocol

    real_send = protocol.Channel.send

    def spy(self, message, deadline=None):
        sent.append(json.dumps(message))
        return real_send(self, message, deadline)

    monkeypatch.setattr(protocol.Channel, "send", spy)
    path = submission(tmp_path, SEED_HUNT.replace("__NEEDLE__", f'str({SEED // 10}) + "{SEED % 10}"'))
    assert str(SEED) not in path.read_text()
    report = grade(path, seed=SEED)
    assert report.seed == SEED and f"seed {SEED}" in report.setup      # shown once the process is gone
    lines = [line for line in report.output.splitlines() if line.startswith(("import:", "run "))]
    assert lines and not any("SEED FOUND" in line or "error" in line for line in lines), report.output
    assert sent and not any(str(SEED) in message for message in sent)   # nothing the grader sent names it


def test_a_fresh_seed_is_drawn_for_every_grade():
    seeds = {grade(INSTRUCTOR / "blocks_solution.py").seed for _ in range(2)}
    assert len(seeds) == 2 and all(0 <= s < 1 << grader_module.SEED_BITS for s in seeds)
    with pytest.raises(GradingInputError):
        grade(INSTRUCTOR / "fa2_solution.py", seed=-1)


# -- verify, don't trust ----------------------------------------------------------------------------
CHANNEL = '''
import gc

def channel():
    """The child's connection to the grader, found the way a cheating submission would."""
    return next(o for o in gc.get_objects() if type(o).__name__ == "Channel" and hasattr(o, "sock"))

def forge(message: bytes):
    channel().sock.sendall(message + b"\\n")
'''


def test_a_forged_missing_is_a_failing_grade_not_bad_input(tmp_path, capsys):
    # Before: "missing" sent ahead of the real reply turned a failing grade into exit 2.
    path = submission(tmp_path, CHANNEL + 'forge(b\'{"loaded": false, "missing": true}\')\n'
                 + (INSTRUCTOR / "cheats" / "no_rescale.py").read_text())
    report = grade(path, seed=0)
    loads = report.check("loads")
    assert loads.status == "fail" and "not a function" in loads.detail and report.exit_code == 1
    assert main(["grade", str(path), "--seed", "0"]) == 1
    assert "FAIL  loads" in capsys.readouterr().out


def test_a_name_rebound_after_loading_fails_loads(tmp_path):
    path = submission(tmp_path, "def fa2_forward(ctx):\n    pass\n\nfa2_forward = 3\n")
    loads = grade(path, seed=0).check("loads")
    assert loads.status == "fail" and "fa2_forward is not a function" in loads.detail, loads.detail


@pytest.mark.parametrize("where,message,check,pattern", [
    # "loaded" before the file has loaded: the real reply then arrives in the middle of a run
    ("import", b'{"loaded": true}', "runs", "protocol"),
    # a request the stand-in ctx never sends
    ("run", b'{"op": "secret", "a": []}', "runs", "protocol"),
    # a request and the end of the run in one message
    ("run", b'{"op": "load", "a": ["Q", null], "done": true}', "runs", "protocol"),
    # an end of the run that is neither done nor failed
    ("run", b'{"done": "yes"}', "runs", "protocol"),
    # not an object
    ("run", b'[1, 2, 3]', "runs", "protocol"),
    # "done" early: the run is judged on what the engine saw, i.e. nothing written
    ("run", b'{"done": true}', "exactness", ""),
])
def test_forged_messages_fail_the_grade(tmp_path, where, message, check, pattern):
    forge = f"forge({message!r})\n"
    body = SOLUTION + CHANNEL
    if where == "import":
        body += forge
    else:
        body = body.replace("    d = ctx.problem.head_dim\n", f"    d = ctx.problem.head_dim\n    {forge}", 1)
    report = grade(submission(tmp_path, body), seed=0)
    assert not report.passed and report.exit_code == 1
    got = report.check(check)
    assert got.status == "fail" and pattern in got.detail, report.render()
    assert report.check("exactness").status == "fail"


def test_a_forged_choose_blocks_reply_is_a_protocol_failure(tmp_path):
    path = submission(tmp_path, CHANNEL + (INSTRUCTOR / "blocks_solution.py").read_text().replace(
        "def choose_blocks(hw, problem):\n", "def choose_blocks(hw, problem):\n    forge(b'{\"done\": \"yes\"}')\n", 1))
    report = grade(path, seed=0)
    runs = report.check("runs")
    assert runs.status == "fail" and "protocol" in runs.detail
    assert report.check("capacity").status == "fail" and report.check("io").status == "fail"


def test_the_written_answer_is_read_from_the_file_not_from_the_process(tmp_path):
    answer = ('"FA1 streams the query blocks through its inner loop and writes O back every time. FA2 keeps O '
              'on chip for the whole inner loop and writes it once."')
    computed = SOLUTION.replace('WHY_TRAFFIC_DIFFERS = """', 'WHY_TRAFFIC_DIFFERS = "".join("""', 1).replace(
        'O writes gone moves fewer bytes.\n"""', 'O writes gone moves fewer bytes.\n""")', 1)
    report = grade(submission(tmp_path, computed, "computed.py"), seed=0)
    assert report.check("answer").status == "fail" and "string literal" in report.check("answer").hint
    # a process that reports an answer the file does not have (ahead of its real reply) gets none
    forged = (CHANNEL + f"forge(b'{{\"loaded\": true, \"attributes\": {{\"WHY_TRAFFIC_DIFFERS\": {answer}}}}}')\n"
              + SOLUTION.replace("WHY_TRAFFIC_DIFFERS = ", "NOT_THE_ANSWER = ", 1))
    report = grade(submission(tmp_path, forged, "forged.py"), seed=0)
    assert report.check("answer").status == "fail"
    # the answer is the string literal of the file's last top-level assignment to the name ...
    rebound = SOLUTION + "\nWHY_TRAFFIC_DIFFERS = WHY_TRAFFIC_DIFFERS.upper() if False else WHY_TRAFFIC_DIFFERS\n"
    assert grade(submission(tmp_path, rebound, "rebound.py"), seed=0).check("answer").status == "fail"
    # ... whatever the process does with the name when it runs
    assert grade(submission(tmp_path, SOLUTION + "\ndel WHY_TRAFFIC_DIFFERS\n", "deleted.py"),
                 seed=0).check("answer").status == "pass"


# -- limits ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("timeout_s,memory_mb,expected", [
    (0.01, 512, (grader_module.MIN_TIMEOUT_S, 512)),
    (1e300, 512, (grader_module.MAX_TIMEOUT_S, 512)),
    (float("inf"), 512, (grader_module.MAX_TIMEOUT_S, 512)),
    (60, 1, (60.0, grader_module.MIN_MEMORY_MB)),
    (60, 10 ** 18, (60.0, grader_module.MAX_MEMORY_MB)),
    (np.float32(60), np.int64(512), (60.0, 512)),
])
def test_limits_are_moved_into_the_range_a_valid_solution_passes_in(timeout_s, memory_mb, expected):
    limits = grader_module.validate_limits(timeout_s, memory_mb)
    assert (limits.timeout_s, limits.memory_mb) == expected
    assert ("the grader uses" in limits.describe()) == (expected != (float(timeout_s), memory_mb))
    assert limits.memory_mb << 20 < 1 << 63                          # an rlimit the kernel can take


@pytest.mark.parametrize("kwargs", [{"memory_mb": 10 ** 18}, {"memory_mb": 1}, {"timeout_s": 1e300},
                                    {"timeout_s": float("inf")}])
def test_any_accepted_limit_lets_a_valid_solution_pass(kwargs):
    # Before: --memory-mb 10**18 failed the instructor's own solution (OverflowError in the child).
    report = grade(INSTRUCTOR / "fa2_solution.py", seed=0, **kwargs)
    assert report.passed, report.render()
    assert "the most the grader uses" in report.setup or "the least the grader uses" in report.setup


@pytest.mark.parametrize("kwargs", [
    {"timeout_s": 0}, {"timeout_s": -3}, {"timeout_s": float("nan")}, {"timeout_s": "60"}, {"timeout_s": True},
    {"memory_mb": 0}, {"memory_mb": -1}, {"memory_mb": 512.5}, {"memory_mb": "512"}, {"memory_mb": None},
])
def test_nonsense_limits_are_bad_input(kwargs):
    with pytest.raises(GradingInputError):
        grade(INSTRUCTOR / "fa2_solution.py", seed=0, **kwargs)


def test_the_cli_accepts_a_huge_memory_limit(capsys):
    assert main(["grade", str(INSTRUCTOR / "fa2_solution.py"), "--seed", "0", "--memory-mb", str(10 ** 18)]) == 0
    assert "result: PASS" in capsys.readouterr().out


def test_isolation_reaches_the_student_process(monkeypatch):
    seen = []
    real = grader_module.StudentProcess

    class Recording(real):
        def __init__(self, timeout_s, memory_mb, **kwargs):
            seen.append(kwargs)
            super().__init__(timeout_s, memory_mb, **kwargs)

    monkeypatch.setattr(grader_module, "StudentProcess", Recording)
    assert grade(INSTRUCTOR / "blocks_solution.py", seed=0, isolation=False).passed
    assert seen == [{"isolation": False}]
