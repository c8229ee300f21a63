"""Fuzz the profile loader with Hypothesis (issue 16, part 4).

Mutated copies of every built-in profile (keys deleted or duplicated, numbers made huge,
negative, inf, nan or strings, units swapped, unicode/NUL/control characters inserted,
nesting deepened, aliases and tags, truncation, figures scaled out of order or out of
range, ``allow_unusual`` switched on) must load as a HardwareProfile whose invariants hold
or fail with a ProfileError of short one-line problems: never another exception, never a
hang. The mutation operators and invariant checks are benchmarks/fuzz_profiles.py's, which
runs the same loop 10^6 times; here Hypothesis drives them (and shrinks a failure), on both
YAML parsers, in a few seconds."""

from conftest import load_module
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosim.errors import ProfileError
from iosim.hardware import profile_from_yaml, yaml_reader


FUZZ = load_module("fuzz_profiles", Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_profiles.py")
#: the longest one example may take before it counts as a hang (a load takes milliseconds)
HANG_S = 10
SETTINGS = settings(max_examples=120, deadline=HANG_S * 1000, derandomize=True, database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def mutated_profiles(draw):
    chooser = FUZZ.Chooser(lambda seq: draw(st.sampled_from(seq)), lambda lo, hi: draw(st.integers(lo, hi)))
    return FUZZ.mutate(chooser, draw(st.sampled_from(sorted(FUZZ.SEEDS.values()))))


class Hang(Exception):
    pass


def _bounded(call, *args):
    """``call(*args)``, failing the example if it runs over HANG_S seconds (where SIGALRM exists)."""
    if sys.platform == "win32" or not hasattr(signal, "setitimer"):
        return call(*args)

    def alarm(signum, frame):
        raise Hang(f"over {HANG_S} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_S)
    try:
        return call(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_loads_or_rejects(text: str) -> None:
    try:
        profile = _bounded(profile_from_yaml, text, "fuzzed.yaml")
    except ProfileError as error:
        assert FUZZ.message_violations(error) == [], str(error)[:2000]
        return
    assert FUZZ.profile_violations(profile) == []


def check_with_parser(libyaml: bool, text: str) -> None:
    saved = yaml_reader.USE_LIBYAML
    yaml_reader.USE_LIBYAML = libyaml
    try:
        check_loads_or_rejects(text)
    finally:
        yaml_reader.USE_LIBYAML = saved


@pytest.mark.skipif(not yaml_reader.USE_LIBYAML, reason="PyYAML was built without libyaml")
@SETTINGS
@given(text=mutated_profiles())
def test_mutated_profiles_load_or_fail_cleanly(text):
    check_with_parser(True, text)


@settings(SETTINGS, max_examples=50)  # the pure-Python parser is ten times slower
@given(text=mutated_profiles())
def test_mutated_profiles_load_or_fail_cleanly_pure_python(text):
    check_with_parser(False, text)


@settings(SETTINGS, max_examples=100)
@given(text=st.text(max_size=300))
def test_arbitrary_text_loads_or_fails_cleanly(text):
    check_loads_or_rejects(text)


@settings(SETTINGS, max_examples=60)
@given(data=st.data())
def test_every_operator_on_every_builtin(data):
    """Each operator alone, so none is starved by the others in a short run."""
    op = data.draw(st.sampled_from(FUZZ.OPS))
    chooser = FUZZ.Chooser(lambda seq: data.draw(st.sampled_from(seq)), lambda lo, hi: data.draw(st.integers(lo, hi)))
    check_loads_or_rejects(op(chooser, data.draw(st.sampled_from(sorted(FUZZ.SEEDS.values())))))


def test_the_benchmark_loop_runs(tmp_path):
    """benchmarks/fuzz_profiles.py's own loop, a few executions in this process."""
    result = FUZZ._worker(("profiles", 7, 30, HANG_S, str(tmp_path)))
    assert sum(result["counts"].values()) == 30 and result["failures"] == []
    result = FUZZ._worker(("masks", 7, 30, HANG_S, str(tmp_path)))
    assert sum(result["counts"].values()) == 30 and result["failures"] == []
