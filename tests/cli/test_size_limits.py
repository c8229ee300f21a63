"""Sizes past what iosim can finish are refused before any work, in one line, exit 2 (issue 16:
`--seq-len 10**38` raised OverflowError, `-d 10**38` TypeError, `--heads`/`--batch`/
`--num-splits 10**18` never finished). The limits are in docs/input-limits.md."""

import dataclasses

import pytest

from iosim import Options, Problem, ProblemError, prepare, simulate
from iosim.cli.main import main
from iosim.run.options import MAX_SPLITS
from iosim.run import launches
from iosim.run.launches import cache_plans, l2_by_default
from iosim.run.setup import AUTO_CACHE_STEPS, AUTO_REQUESTS, MAX_CACHE_STEPS, MAX_REQUESTS
from iosim.workload.problem import MAX_HEAD_DIM, MAX_HEADS_TOTAL, MAX_SEQ_LEN

HUGE = str(10 ** 38)


@pytest.mark.parametrize("argv,message", [
    (["-N", HUGE, "-d", "64"], f"seq-len must be at most {MAX_SEQ_LEN:,}"),
    (["-N", "1024", "-d", HUGE], f"head-dim must be at most {MAX_HEAD_DIM:,}"),
    (["-N", "1024", "-d", "64", "--heads", str(10 ** 18)], f"batch × heads must be at most {MAX_HEADS_TOTAL:,}"),
    (["-N", "1024", "-d", "64", "--batch", str(10 ** 18)], f"batch × heads must be at most {MAX_HEADS_TOTAL:,}"),
    (["-N", "1024", "-d", "64", "--algo", "fa2-splitkv", "--num-splits", str(10 ** 18)],
     f"num-splits must be at most {MAX_SPLITS}"),
    (["-N", str(2 ** 20), "-d", "16", "--block-q", "64", "--block-kv", "64", "--cache"],
     f"requests, more than {MAX_REQUESTS:,}"),
])
def test_sizes_past_the_limits_are_refused_in_one_line(capsys, argv, message):
    if "--algo" not in argv:
        argv = argv + ["--algo", "fa2"]
    code = main(["simulate", "--hw", "toy", *argv])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert message in err, err


def test_the_api_refuses_the_same_sizes():
    with pytest.raises(ProblemError, match="seq_len_kv must be at most"):
        Problem(seq_len_q=1, seq_len_kv=MAX_SEQ_LEN + 1, head_dim=64)
    with pytest.raises(ProblemError, match="batch × heads must be at most"):
        Problem(seq_len=64, head_dim=64, batch=MAX_HEADS_TOTAL, heads=2)
    with pytest.raises(ProblemError, match="num_splits must be at most 128"):
        Options(num_splits=MAX_SPLITS + 1)
    assert Problem(seq_len=MAX_SEQ_LEN, head_dim=MAX_HEAD_DIM, heads=MAX_HEADS_TOTAL).heads_total == MAX_HEADS_TOTAL


def test_the_l2_model_is_on_by_default_only_within_its_budget(monkeypatch):
    def setup(**kw):
        return prepare("h100-sxm", "fa2", Problem(head_dim=128, **kw), blocks=(128, 64))
    # thread blocks in lockstep: on whatever the tile steps, within the requests' budget
    many = setup(seq_len=8192, batch=32, heads=64)
    assert many.lockstep and l2_by_default(many)
    long = setup(seq_len=2 ** 18)
    assert long.steps_per_head > AUTO_CACHE_STEPS and long.cache_by_default() and l2_by_default(long)
    # causal: each thread block its own program, up to AUTO_CACHE_STEPS tile steps per head;
    # many heads cost the heads played (the launch pattern's extension), not every head
    few = setup(seq_len=8192, heads=16, causal=True)
    assert not few.lockstep and few.cache_by_default() and l2_by_default(few)
    assert l2_by_default(setup(seq_len=8192, batch=32, heads=64, causal=True))
    # past AUTO_CACHE_STEPS: on, the programs planned from their intervals (played in windows),
    # FA1's loop inside a loop too; where programs are not of that form, off before counting
    # (the step limits), refused past MAX_CACHE_STEPS when asked for
    long = setup(seq_len=2 ** 18, causal=True)
    assert long.steps_per_head > AUTO_CACHE_STEPS and l2_by_default(long)
    nested = prepare("h100-sxm", "fa1", Problem(head_dim=128, seq_len=2 ** 18, causal=True), blocks=(128, 64))
    assert nested.cache_by_default() and launches._windowable(nested)
    monkeypatch.setattr(launches, "_windowable", lambda setup: False)
    assert f"more than {AUTO_CACHE_STEPS:,}, in programs the windowed model does not take" in cache_plans(
        _auto(nested))[1]
    huge = prepare("h100-sxm", "fa1", Problem(head_dim=128, seq_len=2 ** 19, causal=True), blocks=(128, 64),
                   options=Options(cache=True))
    with pytest.raises(ProblemError, match=f"more than {MAX_CACHE_STEPS:,}, in programs the windowed model"):
        cache_plans(huge)
    monkeypatch.undo()
    # past the default budget of requests: on, from a sample of the chunks, and said so
    over = setup(seq_len=65536, heads=16, causal=True)
    assert over.cache_by_default() and l2_by_default(over)
    planned, why = cache_plans(_auto(over))
    assert why is None and planned[0][0].requests <= AUTO_REQUESTS
    report = planned[0][0].play()
    assert report.to_dict()["l2"]["model"] == "sampled" and 0 < report.sampled["main"].rate < 1
    # where even the sample is past the budget: off by default, with the reason; refused when asked for
    crowd = prepare("toy", "fa2", Problem(seq_len=2 ** 20, head_dim=16), blocks=(64, 64))
    planned, why = cache_plans(_auto(crowd))
    assert planned == [None] and f"more than the default {AUTO_REQUESTS:,}, and a sample would hold" in why
    with pytest.raises(ProblemError, match="the L2 model would play"):
        simulate("toy", "fa2", Problem(seq_len=2 ** 20, head_dim=16), blocks=(64, 64), options=Options(cache=True))


def _auto(setup):
    return dataclasses.replace(setup, options=dataclasses.replace(setup.options, cache="auto"))
