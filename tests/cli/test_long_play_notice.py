"""A run whose L2 model plays more requests than the default budget, because ``--cache`` asked for
it, says so on standard error before it plays (it can take minutes: docs/performance.md); a run
within the budget, or past it without ``--cache`` (a sample, or the model off), gives no such notice, and the
library prints nothing (it logs the notice to the ``iosim`` logger)."""

import logging

from iosim import Options, Problem, load_profile, simulate
from iosim.cli.main import main
from iosim.run import launches
from iosim.run.setup import prepare

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
