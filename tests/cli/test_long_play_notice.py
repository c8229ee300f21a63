"""A run whose L2 model plays more requests than the default budget, because ``--cache`` asked for
it, says so on standard error before it plays (it can take minutes: docs/performance.md); a run
within the budget, or past it without ``--cache`` (a sample, or the model off), gives no such notice, and the
library prints nothing (it logs the notice to the ``iosim`` logger). While it plays, a watcher
sees its stages move, and the command line draws them on a terminal (and only there)."""

import contextvars
import io
import logging
import sys
import threading

from iosim import Options, Problem, load_profile, simulate
from iosim.cli.main import main
from iosim.models.cache import lines, stack, watch
from iosim.models.cache.watch import watching
from iosim.run import launches
from iosim.run.setup import prepare
from iosim.studies import progress

ARGS = ["simulate", "--hw", "h200", "--algo", "fa2", "--kernel", "flash-attn-2", "-N", "1024", "-d", "64", "-H", "2"]
NOTICE = "iosim: the L2 model plays all "


def _requests() -> int:
    setup = prepare(load_profile("h200"), "fa2", Problem(seq_len=1024, head_dim=64, heads=2),
                             options=Options(kernel="flash-attn-2", cache=True))
    return sum(p.requests for p, _ in launches.cache_plans(setup)[0])


def test_asked_past_the_default_budget_it_says_so_first(monkeypatch, capsys):
    n = _requests()
    monkeypatch.setattr(launches, "AUTO_REQUESTS", n - 1)          # the run is just past the default budget
    assert main([*ARGS, "--cache"]) == 0
    out, err = capsys.readouterr()
    assert err == f"{NOTICE}{n:,} requests of this run, as asked (past the default budget of {n - 1:,}, which " \
                  "plays a sample); this can take minutes\n"
    assert "L2 model" in out and NOTICE not in out                 # stdout is the report alone


def test_within_the_budget_or_not_asked_for_it_says_nothing(monkeypatch, capsys):
    n = _requests()
    assert main([*ARGS, "--cache"]) == 0                            # within the default budget
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(launches, "AUTO_REQUESTS", n - 1)
    assert main(ARGS) == 0              # not asked for: the default budget's way (this small run: the model off)
    assert NOTICE not in capsys.readouterr().err


def test_the_library_prints_nothing_and_logs_the_notice(monkeypatch, capsys, caplog):
    n = _requests()
    monkeypatch.setattr(launches, "AUTO_REQUESTS", n - 1)
    monkeypatch.setattr(logging.getLogger("iosim"), "handlers", [])     # a program that never ran the CLI
    with caplog.at_level(logging.INFO, logger="iosim"):
        simulate(load_profile("h200"), "fa2", Problem(seq_len=1024, head_dim=64, heads=2),
                 options=Options(kernel="flash-attn-2", cache=True))
    assert [r.getMessage().startswith(NOTICE) for r in caplog.records] == [True]
    assert capsys.readouterr() == ("", "")


#: a run whose K and V (64 MiB) pass the L2, so its windows need the stack distances' sums
WATCHED = dict(seq_len=8192, head_dim=128, heads=16)


def _watched_run(monkeypatch) -> list:
    """The stages and fractions a watcher sees of a --cache run of :data:`WATCHED`, its streams
    played with bands (as a long run's are) and its keys added back a few windows at a time."""
    monkeypatch.setattr(stack, "STRIDE", 16)
    monkeypatch.setattr(stack, "MIN_BANDED", 2048)
    monkeypatch.setattr(stack, "ADDED_CHUNK", 2)
    monkeypatch.setattr(stack, "BAND_BUDGET", 64)          # the keys added back, where the sums would be cheaper
    seen = []
    with watching(lambda *event: seen.append(event)):
        simulate(load_profile("h200"), "fa2", Problem(**WATCHED), options=Options(kernel="flash-attn-2", cache=True))
    return seen


def test_a_watched_play_reports_its_kernel_stages_and_steps_in_order(monkeypatch):
    seen = _watched_run(monkeypatch)
    assert seen[0][0] == "L2 main, the stream of 16 heads"
    parts = [label.split(", ") for label, _, _ in seen[1:]]
    assert all(p[0] == "L2 main" for p in parts)
    stages = list(dict.fromkeys(", ".join(p[1:3]) for p in parts))
    turns = len(stages) // 2
    assert turns >= 1 and stages == [f"partition {p} of 2, turn {t}" for t in range(1, turns + 1) for p in (1, 2)]
    steps = {p[3] for p in parts if len(p) > 3}
    assert steps == {"bands", "keys added back"}                      # the bands decide every window
    assert all(0 <= done <= total for _, done, total in seen)
    for (label, done, _), (after, then, _) in zip(seen, seen[1:]):
        assert label != after or then >= done                         # a step never goes back
    added = [(done, total) for label, done, total in seen if label.endswith("keys added back")]
    assert any(0 < done < total for done, total in added) and added[-1][0] == added[-1][1]   # in chunks, to the end


def test_the_watcher_is_called_only_where_it_was_set_and_only_within_the_block():
    seen = []
    with watching(lambda *event: seen.append(event)):
        watch.kernel("main")
        watch.advance(1, 2, "sums")
        context = contextvars.copy_context()             # what asyncio.to_thread hands another thread
        other = threading.Thread(target=context.run, args=(watch.advance, 2, 2, "sums"))
        other.start()
        other.join()
    watch.advance(2, 2, "sums")
    assert seen == [("L2 main, sums", 1, 2)] and watch._WATCHER.get() is None


def test_the_command_line_draws_the_stages_on_a_terminal_only(monkeypatch, capsys):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    seen = _watched_run(monkeypatch)
    args = [*ARGS[:ARGS.index("-N")], "-N", "8192", "-d", "128", "-H", "16", "--cache"]
    assert main(args) == 0
    assert capsys.readouterr().err == ""                  # not a terminal: nothing drawn
    monkeypatch.setattr(sys, "stderr", terminal := Terminal())
    assert main(args) == 0
    frames = terminal.getvalue().split("\r")
    assert frames[0] == "" and terminal.getvalue().endswith("\n")
    assert frames[1].startswith(f"{seen[0][0]} [") and frames[-1].startswith(f"{seen[-1][0]} [")
    assert "] 100 %  " in frames[-1] and frames[-1].rstrip().endswith(" s")
    assert max(len(f.rstrip("\n")) for f in frames) <= 79            # never wraps an 80-column line


def test_the_bar_fits_the_terminal_and_draws_a_new_stage_at_once(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(progress.ProgressBar, "_columns", lambda self: 50)
    with progress.ProgressBar(1, stream=stream, delay_s=0, enabled=True) as bar:
        bar.show("L2 main, partition 1 of 2, turn 12, keys added back", 3, 7)
        bar.show("L2 main, one LRU", 0, 1)                   # at once: no wait for the throttle
    frames = stream.getvalue().split("\r")[1:]
    assert len(frames) == 3 and all(len(f.rstrip("\n")) <= 49 for f in frames)
    assert frames[0].startswith("...") and "  42 %  " in frames[0]     # the label gives way, not the count
    assert frames[1].startswith("L2 main, one LRU [") and "   0 %  " in frames[1]
    assert frames[1].rstrip() == frames[1][:len(frames[1].rstrip())] and len(frames[1]) == len(frames[0])


def test_lines_of_many_heads_rows_count_as_what_they_cost(monkeypatch, capsys):
    """(B, N, H, d) inputs whose rows share lines are played as those lines, several requests each: the plan knows
    about how many (all of a small stream split: exactly; a sample of a larger one: within 5 %) and, past the default
    budget, says so before it plays."""
    problem = Problem(seq_len=1024, head_dim=72, heads=8, kv_heads=2, causal=True, layout="bnhd")
    setup = prepare(load_profile("h200"), "fa2", problem, options=Options(kernel="flash-attn-2", cache=True))
    (plan, _), = launches.cache_plans(setup)[0]
    seen = []
    split = lines.apply
    monkeypatch.setattr(lines, "apply", lambda s, *a: seen.append(split(s, *a)) or seen[-1])
    exact = plan.in_lines()
    seen.clear()
    plan.play()
    assert exact > 1.5 * plan.requests and exact == sum(len(s.size) for s in seen), (plan, exact)
    larger = Problem(seq_len=4096, head_dim=72, heads=16, kv_heads=4, causal=True, layout="bnhd")
    (big, _), = launches.cache_plans(prepare(load_profile("h200"), "fa2", larger,
                                             options=Options(kernel="flash-attn-2", cache=True)))[0]
    whole = big.in_lines()                                          # 36,864 requests: all split
    monkeypatch.setattr(lines, "SPLIT_SAMPLE", 1000)                # about 1 request in 36 split
    assert whole > 3 * big.requests and abs(big.in_lines() / whole - 1) < 0.05
    monkeypatch.setattr(lines, "SPLIT_SAMPLE", 50_000)
    monkeypatch.setattr(launches, "AUTO_REQUESTS", exact - 1)
    argv = ["simulate", "--hw", "h200", "--algo", "fa2", "--kernel", "flash-attn-2", "-N", "1024", "-d", "72", "-H",
            "8", "--kv-heads", "2", "--causal", "--layout", "bnhd", "--cache"]
    assert main(argv) == 0
    assert capsys.readouterr().err == (f"{NOTICE}{plan.requests:,} requests of this run as about {exact:,} requests "
                                       "for the 128-byte lines that several heads' rows share ((B, N, H, d) inputs); "
                                       "this can take minutes\n")
