"""One setup, one count: the setup is resolved once into a frozen value, each launch's
schedule runs exactly once (also with the cache model on), simulate() is small and does
not call itself, and the CLI rewords the library's API-worded errors with its flags."""

import dataclasses
import inspect

import pytest

import iosim.run.count as count_module
from iosim import Options, Problem, Setup, prepare, simulate
from iosim.cli.main import main, reword, build_parser
from iosim.errors import CapacityError, ProblemError
from iosim.schedules import get_schedule


def test_simulate_takes_at_most_8_parameters():
    assert len(inspect.signature(simulate).parameters) <= 8


def test_the_setup_is_frozen_and_complete():
    s = prepare("fa-paper-a100", "fa2", Problem(seq_len=8192, head_dim=128))
    assert isinstance(s, Setup) and (s.M, s.blocks.block_q, s.blocks.block_kv, s.block_rule) == (98304, 128, 192, "paper")
    for value in (s, s.options, s.launches[0]):
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.passes = "backward" if hasattr(value, "passes") else value.tiles
    with pytest.raises(TypeError):
        s.options.schedule_kwargs["x"] = 1  # a read-only mapping


def test_a_setup_runs_as_simulate_does():
    problem = Problem(seq_len=1000, head_dim=64, heads=3, causal=True)
    setup = prepare("h200", "fa2", problem, passes="forward+backward", options=Options(kernel="flash-attn-2"))
    from iosim.run.launches import run_launches
    assert run_launches(setup, "count", None).to_dict() == \
        simulate("h200", "fa2", problem, passes="forward+backward", options=Options(kernel="flash-attn-2")).to_dict()


class _Counting:
    """A schedule wrapper that counts its runs."""

    def __init__(self, schedule):
        self.schedule, self.calls = schedule, 0
        self.__name__ = "counting"

    def __call__(self, ctx, **kwargs):
        self.calls += 1
        return self.schedule(ctx, **kwargs)


@pytest.mark.parametrize("cache", [False, True])
def test_the_schedule_runs_once_with_or_without_the_cache(cache):
    schedule = _Counting(get_schedule("fa2", "forward"))
    r = simulate("h200", schedule, Problem(seq_len=2048, head_dim=64, heads=4), options=Options(cache=cache))
    assert schedule.calls == 1
    assert (r.cache is not None) == cache


@pytest.mark.parametrize("passes,launches", [("forward", 1), ("forward+backward", 2)])
def test_each_preset_launch_runs_once_with_the_cache(monkeypatch, passes, launches):
    contexts = []
    real = count_module.Context

    def counting_context(*args, **kwargs):
        contexts.append(kwargs["mode"])
        return real(*args, **kwargs)

    monkeypatch.setattr(count_module, "Context", counting_context)
    r = simulate("h200", "fa2", Problem(seq_len=4096, head_dim=128, heads=16), passes=passes,
                 options=Options(kernel="flash-attn-2", cache=True))
    assert len(contexts) == launches == len(r.options["launches"])
    assert contexts == ["count"] * launches  # requests recorded, grouped, in the counting run itself


def test_simulate_does_not_call_itself():
    # a real-kernel backward numeric run (a forward pre-run and two launches) and a decode
    # layout: before the redesign each called simulate() again; now each enters it once
    import sys
    entries = []

    def profiler(frame, event, arg):
        if event == "call" and frame.f_code is simulate.__code__:
            entries.append(frame.f_code)

    sys.setprofile(profiler)
    try:
        simulate("h100-sxm", "fa2-splitkv", Problem(seq_len_q=1, seq_len_kv=8192, head_dim=128, heads=8, kv_heads=2),
                 mode="numeric")
        simulate("h200", "fa2", Problem(seq_len=512, head_dim=64, heads=2), passes="backward", mode="numeric",
                 options=Options(kernel="flash-attn-2"))
    finally:
        sys.setprofile(None)
    assert len(entries) == 2


@pytest.mark.parametrize("message,argv,expected", [
    ("block_q must be a positive integer, got 0", ["simulate"], "--block-q must be a positive integer, got 0"),
    ("kernel='flash-attn-3' is forward only", ["simulate"], "--kernel flash-attn-3 is forward only"),
    ("use algorithm='fa2' (got 'fa1')", ["simulate"], "use --algo fa2 (got 'fa1')"),
    ("run passes='forward'", ["simulate"], "run --pass forward"),
    ("Choose smaller blocks (block_q, block_kv).", ["simulate"], "Choose smaller blocks (--block-q, --block-kv)."),
    ("heads (6) must be a multiple of kv_heads (4)", ["simulate"], "heads (6) must be a multiple of --kv-heads (4)"),
    ("no option gemm_x", ["profiles"], "no option gemm_x"),  # not a flag of this subcommand: left as it is
])
def test_the_cli_rewords_api_terms_with_its_flags(message, argv, expected):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[argv[0]]
    assert reword(message, sub) == expected


def test_a_capacity_error_reaches_the_cli_in_its_terms(capsys):
    assert main(["simulate", "--hw", "toy", "--algo", "fa2", "-N", "4096", "-d", "64", "--block-q", "512",
                 "--block-kv", "512"]) == 2
    err = capsys.readouterr().err
    assert "Choose smaller blocks (--block-q, --block-kv)" in err and "Traceback" not in err
    with pytest.raises(CapacityError, match=r"Choose smaller blocks \(block_q, block_kv\)"):
        simulate("toy", "fa2", Problem(seq_len=4096, head_dim=64), blocks=(512, 512))


def test_errors_name_the_parameter():
    with pytest.raises(ProblemError) as exc:
        simulate("toy", "fa2", Problem(seq_len=64, head_dim=16), options=Options(sram_bytes=0))
    assert exc.value.field == "sram_bytes"
