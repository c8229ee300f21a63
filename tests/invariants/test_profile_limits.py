"""Reading a profile is bounded and total: special files, huge files, NUL bytes, deep nesting,
aliases, tags and YAML 1.1 number quirks all end in a short ProfileError, fast (issue 16).

Each test runs through ``load_profile``/``profile_from_yaml`` or ``iosim simulate --hw FILE``;
the YAML tests run on both parsers (libyaml and PyYAML's pure-Python one)."""

import os
import sys
import time
from pathlib import Path

import pytest

from conftest import run
from iosim.errors import ProfileError
from iosim.hardware import load_profile, profile_from_yaml, yaml_reader
from iosim.hardware.limits import MAX_PROBLEM_CHARS, MAX_PROBLEMS, MAX_PROFILE_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES


H200 = Path(load_profile("h200").source_path).read_text()
TOY = Path(load_profile("toy").source_path).read_text()
SIM = ("--algo", "fa2", "-N", "64", "-d", "16")


@pytest.fixture(params=["libyaml", "pure"], autouse=True)
def parser(request, monkeypatch):
    """Every test here runs with each YAML parser."""
    if request.param == "libyaml" and not yaml_reader.USE_LIBYAML:
        pytest.skip("PyYAML was built without libyaml")
    monkeypatch.setattr(yaml_reader, "USE_LIBYAML", request.param == "libyaml")
    return request.param


def rejected(text: str, seconds: float = 10.0) -> list[str]:
    """The problems profile_from_yaml reports for ``text``, which it must reject quickly
    with short one-line problems."""
    start = time.perf_counter()
    with pytest.raises(ProfileError) as info:
        profile_from_yaml(text, "fuzzed.yaml")
    assert time.perf_counter() - start < seconds
    problems = info.value.problems
    assert 1 <= len(problems) <= MAX_PROBLEMS + 1
    for p in problems:
        assert len(p) <= MAX_PROBLEM_CHARS and p.isprintable(), p
    return problems


def only(text: str) -> str:
    found = rejected(text)
    assert len(found) == 1, found
    return found[0]


def edit(old: str, new: str, text: str = H200) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# --------------------------------------------------------------------------- files


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_is_refused_up_front():
    with pytest.raises(ProfileError, match="cannot read: it is a character device, not a regular file"):
        load_profile("/dev/zero")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "hw.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ProfileError, match="cannot read: it is a FIFO"):
        load_profile(fifo)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(ProfileError, match="cannot read: it is a directory"):
        load_profile(str(tmp_path) + os.sep)


def test_a_file_over_the_size_cap_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(TOY + "#" * MAX_PROFILE_BYTES + "\n")
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert info.value.problems == ["(file): cannot read: it is larger than the limit of 64 KiB (65,536 bytes)"]


def test_a_file_just_under_the_cap_loads(tmp_path):
    path = tmp_path / "padded.yaml"
    path.write_text(TOY + ("#" * 99 + "\n") * ((MAX_PROFILE_BYTES - len(TOY)) // 100))
    assert path.stat().st_size <= MAX_PROFILE_BYTES
    assert load_profile(path).name == "toy"


def test_text_over_the_size_cap_is_refused():
    assert "over the limit" in only(TOY + " " * MAX_PROFILE_BYTES)


def test_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(TOY.encode() + b"# caf\xe9\n")
    with pytest.raises(ProfileError, match=r"\(file\) byte [\d,]+: not UTF-8 text"):
        load_profile(path)


# --------------------------------------------------------------------------- characters


def test_a_nul_byte_is_a_profile_error_naming_where():
    assert only(edit("vendor: nvidia", "vendor: nv\x00idia")) == \
        "(file) line 8, column 11: a NUL byte; a profile is UTF-8 text"


@pytest.mark.parametrize("char", ["\x07", "\x1b", "\ufffe"])
def test_control_characters_are_a_profile_error(char):
    assert "is not allowed in YAML" in only(edit("vendor: nvidia", f"vendor: nv{char}idia"))


def test_a_lone_surrogate_is_a_profile_error():
    rejected(edit("vendor: nvidia", "vendor: nv\ud800idia"))


# --------------------------------------------------------------------------- shape


@pytest.mark.parametrize("depth", [MAX_YAML_DEPTH + 1, 500, 20_000])
def test_deep_nesting_is_refused(depth):
    text = edit("vendor: nvidia", "vendor: " + "[" * depth + "x" + "]" * depth)
    message = only(text)
    assert message.startswith("(yaml) line 8") and ("nested more than 16" in message or "nesting depth" in message)


def test_nesting_up_to_the_cap_parses():
    depth = MAX_YAML_DEPTH - 1  # the top-level mapping is one level
    message = only(edit("vendor: nvidia", "vendor: " + "[" * depth + "x" + "]" * depth))
    assert message == "vendor: expected a non-empty string, got a list"


def test_a_billion_laughs_alias_is_refused_at_once():
    laughs = "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}" if i else "lol"] * 9) + "]\n" for i in range(9))
    message = only(laughs + edit("role: dram", "role: *l8"))
    assert "aliases (*name) are not allowed" in message and message.startswith("(yaml) line 2")


def test_any_alias_is_refused():
    text = edit("role: cache", "role: *r", edit("role: dram", "role: &r dram"))
    assert "aliases (*name) are not allowed in a profile" in only(text)


@pytest.mark.parametrize("tagged", ["!!python/object:os.system x", "!!float abc", "!!int x", "!!binary AAAA",
                                    "!local x"])
def test_explicit_tags_are_refused(tagged):
    assert "explicit tags" in only(edit("vendor: nvidia", f"vendor: {tagged}"))


def test_an_impossible_date_is_a_profile_error():
    # YAML 1.1 reads 2026-13-45 as a timestamp, and building it raises ValueError
    rejected(edit("vendor: nvidia", "vendor: 2026-13-45"))


def test_too_many_values_are_refused_early():
    text = H200 + "".join(f"k{i}: 1\n" for i in range(MAX_YAML_NODES))
    assert f"more than {MAX_YAML_NODES:,} values" in only(text)


def test_too_many_levels_and_links(tmp_path):
    levels = "".join(f"  c{i}: {{role: cache, capacity: {{value: 1, unit: MB, source: s}}}}\n" for i in range(40))
    assert "levels: 44 levels; a profile may have at most 32" in rejected(edit("levels:\n", "levels:\n" + levels))
    links = "".join(f"  - {{between: [hbm, x{i}], bandwidth: {{value: 1, unit: TB/s, source: s}}}}\n"
                    for i in range(130))
    assert "links: 133 links; a profile may have at most 128" in rejected(edit("links:\n", "links:\n" + links))


# --------------------------------------------------------------------------- messages


def test_a_text_file_is_not_echoed(tmp_path):
    secret = "root:x:0:0:root:/root:/bin/bash\n" + "".join(f"user{i}:x:{i}:{i}::/home/u:/bin/sh\n"
                                                            for i in range(200)) + "TOPSECRET\n"
    path = tmp_path / "passwd"
    path.write_text(secret)
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    assert info.value.problems == ["(top level): expected a mapping of profile fields, got a string of "
                                   f"{len(secret.replace(chr(10), ' ').strip()):,} characters"]
    assert "root:x" not in str(info.value) and "TOPSECRET" not in str(info.value)


def test_long_values_are_quoted_as_excerpts():
    found = rejected(edit("role: cache", "role: " + "c" * 10_000,
                          edit("sm_count: {value: 132,", f"sm_count: {{value: '{'9' * 10_000}',")))
    assert all(len(p) <= MAX_PROBLEM_CHARS for p in found)
    assert found[0].startswith("sm_count.value: expected a number, got the string '99999") and \
        found[0].endswith("… (10,000 characters)")
    assert found[1].startswith("levels.l2.role: unknown role 'cccc") and "(10,000 characters)" in found[1]
    key = "k" * 1000  # a YAML key is at most 1024 characters
    assert rejected(edit("  l2:\n", f"  {key}:\n"))[0].startswith("links[0].between: unknown level 'l2'; levels are "
                                                                    "hbm, kkkkkkkkkk")


def test_the_problem_list_is_capped():
    text = H200 + "".join(f"unknown_{i}: 1\n" for i in range(200))
    found = rejected(text)
    assert len(found) == MAX_PROBLEMS + 1
    assert found[-1] == "(more): 175 more problems not listed"


def test_an_unknown_long_name_is_excerpted():
    with pytest.raises(ProfileError) as info:
        load_profile("h" * 100_000)
    assert len(str(info.value)) < 1000


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("value,fragment", [
    ("1:20", "which YAML 1.1 reads as a base-60 (sexagesimal) number"),
    ("2:10:00", "base-60"),
    ("012", "which YAML reads as octal"),
    ("0o12", "which YAML reads as octal"),
    ("0x84", "which YAML reads as hexadecimal"),
    ("0b11", "which YAML reads as binary"),
    ("1_32", "'_' digit separators"),
    ("1" + "0" * 400, "a number with 401 digits"),
    ("9" * 5000, "a number with 5,000 digits"),
])
def test_yaml_1_1_number_quirks_are_refused_saying_why(value, fragment):
    message = only(edit("sm_count: {value: 132,", f"sm_count: {{value: {value},"))
    assert message.startswith("sm_count.value: expected a number, got ") and fragment in message


def test_a_quirky_number_is_fine_where_a_string_is_expected():
    assert profile_from_yaml(edit("vendor: nvidia", "vendor: 1:20")).vendor == "1:20"


@pytest.mark.parametrize("value,unit,fragment", [
    ("1.0e+308", "GB", "1e+308 GB overflows to infinity in B"),
    ("1e308", "GB", "1e+308 GB overflows to infinity in B"),
    ("1.0e308", "TB", "overflows to infinity"),
    (".inf", "GB", "must be a finite number > 0, got inf"),
    (".nan", "GB", "must be a finite number > 0, got nan"),
    ("1e30", "GB", "is outside the range iosim computes with"),
])
def test_capacities_must_stay_finite_once_scaled(value, unit, fragment):
    message = only(edit("capacity: {value: 141, unit: GB", f"capacity: {{value: {value}, unit: {unit}"))
    assert message.startswith("levels.hbm.capacity") and fragment in message


def test_exponent_forms_read_as_numbers():
    p = profile_from_yaml(edit("clock: {value: 1830, unit: MHz", "clock: {value: 1.83e3, unit: MHz"))
    assert p.clock_hz == pytest.approx(1.83e9)
    assert profile_from_yaml(edit("{value: 132,", "{value: 1.32E+2,")).sm_count == 132


def test_bandwidth_below_one_byte_per_second_is_an_error():
    message = only(edit("value: 4.8, unit: TB/s", "value: 1e-300, unit: B/s"))
    assert message.startswith("links[0].bandwidth: 1e-300 B/s is outside the range iosim computes with")


# --------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("case", ["device", "directory", "nul", "deep", "alias", "huge", "passwd", "overflow"])
def test_simulate_reports_bad_files_in_one_line_and_exit_2(capsys, tmp_path, case):
    path = tmp_path / "hw.yaml"
    if case == "device":
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero")
        path = Path("/dev/zero")
    elif case == "directory":
        path = tmp_path
    else:
        path.write_text({"nul": TOY.replace("vendor:", "vendor: \x00"),
                         "deep": TOY + "x: " + "[" * 5000 + "]" * 5000 + "\n",
                         "alias": "a: &a [1, 2]\nb: *a\n" + TOY,
                         "huge": TOY * 40,
                         "passwd": "root:x:0:0:root:/root:/bin/bash\n" * 50,
                         "overflow": TOY.replace("{value: 1, unit: GiB", "{value: 1.0e+308, unit: GiB")}[case])
    code, out, err = run(capsys, "simulate", "--hw", str(path), *SIM)
    assert code == 2 and out == ""
    assert "Traceback" not in err and err.startswith("iosim: error: invalid hardware profile")
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("  - ") and len(lines[1]) <= MAX_PROBLEM_CHARS + 4, err
    assert "root:x" not in err


def test_profiles_command_still_lists_every_builtin(capsys):
    code, out, _ = run(capsys, "profiles")
    assert code == 0 and "h200" in out and "toy" in out


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")
def test_a_path_with_a_nul_character():
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile("bad\x00name.yaml")


@pytest.mark.parametrize("key", ["ro\ufeff\ufeffle", "ro\tle", "ro\ud7ffle"])
def test_duplicate_keys_with_odd_characters_are_one_printable_line(key):
    # found by benchmarks/fuzz_profiles.py (10^6 executions): the duplicate-key problems
    # quoted a key's tabs and unassigned characters raw
    rejected(edit("    role: registers\n", f"    role: registers\n    {key}: a\n    {key}: b\n"))
