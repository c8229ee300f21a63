"""`--algo FILE.py:FUNCTION` in `iosim bounds` and `iosim explore` (issue 15, item 4), and
schedules of one's own in `check_bounds` and `explore`.

A copy of FA2's loop order, written in a file of its own, counts what the built-in fa2
counts — in this process, in forked worker processes (which get the file's path and the
function's name, pickled, never the function) and in freshly spawned ones (which load the
file themselves). Bad values stop in one line with exit code 2.
"""

import json
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor, as_completed

import pytest

import iosim
from iosim import Problem
from iosim.cli.main import main
from iosim.errors import ProblemError, ScheduleError
from iosim.studies import progress
from iosim.studies.bounds import check_bounds
from iosim.studies.executors import LocalExecutor
from iosim.studies.schedule_files import ScheduleFile

#: FA2's forward loop order (iosim/schedules/fa2.py), written as a user would, against ctx
FA2_COPY = '''
import math

from iosim.engine.tiles import maximum


def my_fa2(ctx):
    d = ctx.problem.head_dim
    for i in ctx.q_blocks():
        with ctx.thread_block(("q", i.index)):
            Q_i = ctx.load("Q", i)
            O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
            l_i = ctx.fill("l_i", i, 0.0, role="stats")
            m_i = ctx.fill("m_i", i, -math.inf, role="stats")
            for j in ctx.kv_blocks(visible_to=i):
                K_j = ctx.load("K", j)
                V_j = ctx.load("V", j)
                S_ij = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
                m_new = maximum(m_i, S_ij.rowmax())
                m_base = m_new.inf_as_zero()
                P_ij = ctx.keep("S_ij", (S_ij - m_base.col()).exp(), role="scores")
                rescale = (m_i - m_base).exp()
                l_i = ctx.keep("l_i", rescale * l_i + P_ij.rowsum(), role="stats")
                O_i = ctx.keep("O_i", rescale.col() * O_i + P_ij @ V_j, role="output")
                m_i = ctx.keep("m_i", m_new, role="stats")
            O_i = ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output")
            L_i = ctx.keep("L_i", m_i + l_i.log(), role="stats")
            ctx.store("O", i, O_i)
            ctx.store("L", i, L_i)
'''

BOUNDS = ["bounds", "--hw", "toy", "-N", "256,512", "-d", "16,32", "--format", "json"]
EXPLORE = ["explore", "--hw", "toy", "-N", "256", "-d", "16", "--block-q", "16,32,64", "--block-kv", "16,64",
           "--no-cache", "--format", "json"]


@pytest.fixture
def mine(tmp_path):
    """FILE.py:FUNCTION of the FA2 copy."""
    path = tmp_path / "fa2_copy.py"
    path.write_text(FA2_COPY)
    return f"{path}:my_fa2"


@pytest.fixture
def forked(monkeypatch):
    """Make `--jobs 2` start worker processes even for a small sweep; the list of the
    executors that ran."""
    used = []

    class Recording(LocalExecutor):
        def run(self, task, chunks):
            used.append(self.jobs)
            pickle.dumps((task, chunks))          # what crosses to the workers pickles
            return super().run(task, chunks)

    monkeypatch.setattr(progress, "MIN_ITEMS_PER_JOB", 1)
    monkeypatch.setattr(progress, "LocalExecutor", Recording)
    return used


def run_json(capsys, argv):
    code = main(argv)
    out = capsys.readouterr().out
    return code, json.loads(out)


def by_algorithm(points: list, name: str) -> list:
    keep = ("N", "d", "M", "block_q", "block_kv", "count_elements", "sram_peak_bytes", "feasible")
    return [{k: p[k] for k in keep} for p in points if p["algorithm"] == name]


def assert_bounds_equal(data: dict, name: str) -> None:
    assert data["algorithms"] == ["fa2", name]
    assert by_algorithm(data["points"], name) == by_algorithm(data["points"], "fa2")
    ours = [c for c in data["claims"] if c["algorithm"] == name]
    theirs = [c for c in data["claims"] if c["algorithm"] == "fa2"]
    assert [c["id"] for c in ours] == [c["id"] for c in theirs] == ["theorem2-flash", "proposition3-lower",
                                                                     "compulsory"]       # the flash family
    for a, b in zip(ours, theirs):
        assert (a["holds"], a["ratio_min"], a["ratio_max"], a["exponents"]) == (b["holds"], b["ratio_min"],
                                                                                b["ratio_max"], b["exponents"])
        assert "a schedule of your own" in a["notes"][0]


# --------------------------------------------------------------------------------------
# bounds
# --------------------------------------------------------------------------------------
def test_bounds_runs_a_schedule_file_as_fa2(capsys, mine):
    code, data = run_json(capsys, BOUNDS + ["--algo", f"fa2,{mine}", "--jobs", "1"])
    assert code == 1                                     # fa2 with the paper's rule fails theorem2-flash
    assert_bounds_equal(data, mine)


def test_bounds_runs_a_schedule_file_in_worker_processes(capsys, mine, forked):
    code, data = run_json(capsys, BOUNDS + ["--algo", "fa2", "--algo", mine, "--jobs", "2"])
    assert forked == [2] and code == 1
    assert_bounds_equal(data, mine)
    assert main(BOUNDS + ["--algo", f"fa2,{mine}", "--jobs", "1"]) == 1      # the same report in this process
    assert json.loads(capsys.readouterr().out)["points"] == data["points"]


class SpawnExecutor:
    """Fresh interpreters, as a Dask worker is: the function is nowhere but in the file."""

    jobs = 2

    def run(self, task, chunks):
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(task, chunk): i for i, chunk in enumerate(chunks)}
            for future in as_completed(futures):
                yield futures[future], future.result()


def test_bounds_workers_load_the_file_themselves(mine):
    args = dict(seq_lens=[256, 512], head_dims=[16], progress=False)
    spawned = check_bounds("toy", ["fa2", mine], executor=SpawnExecutor(), **args)
    here = check_bounds("toy", ["fa2", mine], jobs=1, **args)
    assert spawned.to_dict() == here.to_dict()
    counts = {p.algorithm: [] for p in here.points}
    for p in here.points:
        counts[p.algorithm].append((p.N, p.d, p.M, p.count, p.reads, p.writes))
    assert counts[mine] == counts["fa2"]


def test_check_bounds_takes_a_function(mine):
    """A function runs in this process (it may not pickle); a closure too, with jobs=2."""
    from iosim.studies.schedule_files import load_schedule_file

    loaded = load_schedule_file(*mine.rsplit(":", 1))
    closure = (lambda f: lambda ctx: f(ctx))(loaded)     # noqa: E731 - no pickle can carry it
    report = check_bounds("toy", ["fa2", closure], ["compulsory"], seq_lens=[256, 512], head_dims=[16], jobs=2,
                          executor=LocalExecutor(2))
    assert report.algorithms == ["fa2", "<lambda>"]
    assert [p.count for p in report.feasible("<lambda>")] == [p.count for p in report.feasible("fa2")]


@pytest.mark.filterwarnings("error")                      # no log(0) on the way
def test_a_schedule_that_moves_nothing(tmp_path, capsys):
    """A stub moves no byte: bounds fails every claim, with a reason, not a division by
    zero; explore says it has nothing to rank."""
    stub = tmp_path / "stub.py"
    stub.write_text("def stub(ctx):\n    pass\n")
    code, data = run_json(capsys, BOUNDS + ["--algo", f"{stub}:stub"])
    assert code == 1 and not data["holds"]
    theta = data["claims"][0]
    assert theta["id"] == "theorem2-flash" and theta["ratio_min"] == 0 and "the count is 0 at" in theta["reason"]
    assert all(v is None for c in data["claims"] for v in c["exponents"].values())
    assert main(EXPLORE + ["--algo", f"{stub}:stub"]) == 2          # nothing to rank tiles by: one line
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{stub}:stub moves no HBM byte" in err


def test_bounds_refuses_the_outer_rule_for_an_unknown_loop_order(capsys, mine):
    assert main(BOUNDS + ["--algo", mine, "--block-rule", "outer"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--block-rule outer" in err and "not known" in err and "Traceback" not in err


# --------------------------------------------------------------------------------------
# explore
# --------------------------------------------------------------------------------------
def tiles(result: dict) -> dict:
    return {(c["block_q"], c["block_kv"]): (c["hbm_read_bytes"], c["hbm_write_bytes"], c["sram_need_bytes"],
                                            c["predicted_s"], c["feasible"]) for c in result["candidates"]}


def assert_explore_equal(data: dict, name: str) -> None:
    builtin, ours = data["results"]
    assert (builtin["algorithm"], ours["algorithm"]) == ("fa2", name)
    assert tiles(ours) == tiles(builtin)
    assert (ours["best"]["block_q"], ours["best"]["block_kv"]) == (builtin["best"]["block_q"],
                                                                   builtin["best"]["block_kv"])
    assert ours["kernel_default"] is None and "a schedule of your own" in ours["kernel_reason"]


def test_explore_runs_a_schedule_file_as_fa2(capsys, mine):
    code, data = run_json(capsys, EXPLORE + ["--algo", f"fa2,{mine}", "--jobs", "1"])
    assert code == 0
    assert_explore_equal(data, mine)


def test_explore_runs_a_schedule_file_in_worker_processes(capsys, mine, forked):
    code, data = run_json(capsys, EXPLORE + ["--algo", f"fa2,{mine}", "--jobs", "2"])
    assert code == 0 and forked == [2]     # one sweep of (point, algorithm) items, each whole in a worker
    assert_explore_equal(data, mine)


def test_explore_takes_a_function_and_a_file_in_python(mine):
    from iosim.studies.schedule_files import load_schedule_file

    problem = Problem(seq_len=256, head_dim=16)
    args = dict(block_q=[16, 32], block_kv=[16, 64], cache=False)
    builtin = iosim.explore("toy", "fa2", problem, jobs=1, **args)
    by_file = iosim.explore("toy", mine, problem, executor=LocalExecutor(2), **args)
    closure = (lambda f: lambda ctx: f(ctx))(load_schedule_file(*mine.rsplit(":", 1)))  # noqa: E731
    by_function = iosim.explore("toy", closure, problem, jobs=2, **args)
    hbm = lambda r: {(c.block_q, c.block_kv): c.hbm_total_bytes for c in r.candidates}  # noqa: E731
    assert hbm(by_file) == hbm(by_function) == hbm(builtin)
    assert (by_file.algorithm, by_function.algorithm) == (mine, "<lambda>")
    assert by_file.kernel is None and "no real kernel's tile" in by_file.kernel_reason


def test_explore_refuses_a_kernel_preset_for_a_schedule_of_ones_own(capsys, mine):
    assert main(EXPLORE + ["--algo", mine, "--kernel", "flash-attn-2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--kernel flash-attn-2" in err and "schedule of your own" in err


# --------------------------------------------------------------------------------------
# bad values
# --------------------------------------------------------------------------------------
BAD_FILES = {
    "missing file": (None, "f", "no such file"),
    "missing function": ("def my_fa2(ctx):\n    pass\n", "nope", "defines no function nope"),
    "not a function": ("nope = 3\n", "nope", "defines no function nope"),
    "raises on import": ("import math\nraise RuntimeError('half written')\n", "f",
                         "loading it raised RuntimeError: half written"),
    "wrong signature": ("def two(ctx, extra):\n    pass\n", "two", "takes (ctx, extra); a schedule takes one "
                                                                  "argument, ctx"),
    "no argument": ("def none():\n    pass\n", "none", "takes (); a schedule takes one argument"),
}


@pytest.mark.parametrize("command", [BOUNDS, EXPLORE], ids=["bounds", "explore"])
@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_schedule_file_is_one_line_and_exit_2(tmp_path, capsys, command, case):
    text, function, message = BAD_FILES[case]
    path = tmp_path / "user.py"
    if text is not None:
        path.write_text(text)
    with pytest.raises(SystemExit) as stop:                # argparse: before any work
        main(command + ["--algo", f"fa2,{path}:{function}"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert stop.value.code == 2 and "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("iosim: error: argument --algo: ") and message in lines[0], err
    assert lines[0].endswith(f"(usage: iosim {command[0]} --help)")


@pytest.mark.parametrize("command", [BOUNDS, EXPLORE], ids=["bounds", "explore"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_schedule_that_raises_while_it_runs_is_one_line(tmp_path, capsys, forked, command, jobs):
    path = tmp_path / "rows.py"
    path.write_text("def rows(ctx):\n    raise ValueError('one row at a time')\n")
    assert main(command + ["--algo", f"{path}:rows", "--jobs", jobs]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{path}:rows raised ValueError: one row at a time (B_r=" in err


def test_simulate_says_in_one_line_what_a_schedule_file_raised(tmp_path, capsys):
    path = tmp_path / "rows.py"
    path.write_text("def rows(ctx):\n    raise ValueError('one row at a time')\n")
    assert main(["simulate", "--hw", "toy", "--algo", f"{path}:rows", "-N", "128", "-d", "16"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{path}:rows raised ValueError: one row at a time (B_r=" in err


def test_unknown_names_still_name_the_choices(capsys):
    for command in (BOUNDS, EXPLORE):
        with pytest.raises(SystemExit) as stop:
            main(command + ["--algo", "fa3"])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and "unknown algorithm 'fa3'" in err and "FILE.py:FUNCTION" in err


def test_the_python_api_reports_bad_files_as_iosim_errors(tmp_path, mine):
    with pytest.raises(ScheduleError, match="no such file"):
        check_bounds("toy", [f"{tmp_path}/none.py:f"], seq_lens=[256], head_dims=[16])
    with pytest.raises(ScheduleError, match="defines no function nope"):
        iosim.explore("toy", mine.replace(":my_fa2", ":nope"), Problem(seq_len=256, head_dim=16))
    with pytest.raises(ProblemError, match="two algorithms are named"):
        check_bounds("toy", [mine, ScheduleFile.from_text(mine), lambda ctx: None, lambda ctx: None],
                     seq_lens=[256], head_dims=[16])
