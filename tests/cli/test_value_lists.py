"""Value lists (-N, -d, --heads of explore; the sweeps of bounds) are bounded before anything
is made: every list either parses to its values or is refused in one line, exit 2, quickly
(issue 16: `1:8:xinf` raised OverflowError, `1:1000000000000:1` built the whole set,
geometric steps near 1 never ended)."""

import argparse

import pytest

from iosim.cli.arguments import MAX_VALUES, parse_values
from iosim.cli.main import main


@pytest.mark.parametrize("text,values", [
    ("8192", [8192]), ("8k", [8192]), ("1k:8k", [1024, 2048, 4096, 8192]), ("64,32,64", [32, 64]),
    ("16:64:16", [16, 32, 48, 64]), ("10:100:x3", [10, 30, 90]), ("1:100000:1", list(range(1, 100_001))),
])
def test_lists_parse(text, values):
    assert parse_values(text) == values


@pytest.mark.parametrize("text,message", [
    ("1:8:xinf", "factor must be a finite number > 1"),
    ("1:8:xnan", "factor must be a finite number > 1"),
    ("1:8:x1", "factor must be a finite number > 1"),
    ("1:1000000000000:1", f"expands to more than {MAX_VALUES:,} values"),
    ("1:100001:1", f"expands to more than {MAX_VALUES:,} values"),
    ("1:50000:1,50001:100001:1", f"expands to more than {MAX_VALUES:,} values"),
    ("1:100:x1.0000001", "steps of ×1; at most"),
    ("8:4", "HI is smaller than LO"),
    ("1:2:3:4", "a range is LO:HI"),
    ("", "no values"),
])
def test_lists_are_refused_before_they_are_made(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_values(text)


def test_the_cli_refuses_them_in_one_line(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["explore", "--hw", "toy", "--algo", "fa2", "-N", "1:8:xinf", "-d", "16"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert stop.value.code == 2 and len(lines) == 1 and "factor must be a finite number > 1" in lines[0], err
