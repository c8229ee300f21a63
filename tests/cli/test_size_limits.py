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
from iosim.run.setup import AUTO_REQUESTS
from iosim.workload.problem import MAX_HEAD_DIM, MAX_HEADS_TOTAL, MAX_SEQ_LEN

HUGE = str(10 ** 38)


@pytest.mark.parametrize("argv,message", [
    (["-N", HUGE, "-d", "64"], f"seq-len must be at most {MAX_SEQ_LEN:,}"),
    (["-N", "1024", "-d", HUGE], f"head-dim must be at most {MAX_HEAD_DIM:,}"),
    (["-N", "1024", "-d", "64", "--heads", str(10 ** 18)], f"batch × heads must be at most {MAX_HEADS_TOTAL:,}"),
    (["-N", "1024", "-d", "64", "--batch", str(10 ** 18)], f"batch × heads must be at most {MAX_HEADS_TOTAL:,}"),
    (["-N", "1024", "-d", "64", "--algo", "fa2-splitkv", "--num-splits", str(10 ** 18)],
     f"num-splits must be at most {MAX_SPLITS}"),
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


@pytest.mark.parametrize("given,name", [(dict(seq_len=-5), "seq_len"), (dict(seq_len=0), "seq_len"),
                                        (dict(seq_len=2.5), "seq_len"), (dict(seq_len_q=0, seq_len_kv=8), "seq_len_q")])
def test_a_bad_length_is_named_as_it_was_given(given, name):
    with pytest.raises(ProblemError, match=f"^{name} must be a positive integer"):
        Problem(head_dim=64, **given)


def test_the_l2_model_is_on_at_any_size():
    """Every run of a profile with a cache has the L2 model (issue 13: no step limit): exact
    within the budget of requests, past it from a sample of the chunks, and where that sample
    is past the budget too (or cannot be made), in windows of the rounds, in lockstep or not."""
    def setup(**kw):
        return prepare("h100-sxm", "fa2", Problem(head_dim=128, **kw), blocks=(128, 64))
    for s in (setup(seq_len=8192, batch=32, heads=64), setup(seq_len=2 ** 18, causal=True),
              prepare("h100-sxm", "fa1", Problem(head_dim=128, seq_len=2 ** 19, causal=True), blocks=(128, 64))):
        assert s.cache_by_default() and l2_by_default(s)
    # past the default budget of requests: on, from a sample of the chunks, and said so
    over = setup(seq_len=65536, heads=16, causal=True)
    planned, why = cache_plans(_auto(over))
    assert why is None and planned[0][0].requests <= AUTO_REQUESTS
    report = planned[0][0].play()
    assert report.to_dict()["l2"]["model"] == "sampled" and 0 < report.sampled["main"].rate < 1
    # thread blocks in lockstep whose sample of the chunks is past the budget too (a small
    # cache of few chunks: the sample keeps MIN_CHUNKS): in windows (before: off, and refused
    # with --cache)
    crowd = prepare("toy", "fa2", Problem(seq_len=2 ** 18, head_dim=16), blocks=(64, 64))
    planned, why = cache_plans(_auto(crowd))
    assert why is None and planned[0][0].requests <= AUTO_REQUESTS
    assert planned[0][0].play().to_dict()["l2"]["model"] == "windowed"


def _auto(setup):
    return dataclasses.replace(setup, options=dataclasses.replace(setup.options, cache="auto"))



def test_a_launch_is_sampled_on_its_own_budgets(monkeypatch):
    """Past the limit a launch's L2 model does not depend on the passes run beside it: each is
    sampled on budgets of its own (before session 41 the run's budgets were shared by the launches'
    requests, and the forward of forward+backward got a smaller sample than the forward alone)."""
    problem = Problem(seq_len=4096, head_dim=64, heads=4, causal=True)
    options = Options(kernel="flash-attn-2", cache="auto")
    both = prepare("h200", "fa2", problem, passes="forward+backward", options=options)
    forward, backward = (p.requests for p, _ in cache_plans(both)[0])
    monkeypatch.setattr(launches, "AUTO_REQUESTS", min(forward, backward) - 1)
    monkeypatch.setattr(launches, "SAMPLE_REQUESTS", min(forward, backward) // 8)
    runs = {passes: simulate("h200", "fa2", problem, passes=passes, options=options).cache
            for passes in ("forward", "backward", "forward+backward")}
    for kernel, passes in (("main", "forward"), ("dq_dk_dv", "backward")):
        assert runs[passes].sampled[kernel].rate < 1
        assert runs[passes].kernels[kernel] == runs["forward+backward"].kernels[kernel]
