"""A cache level's ``partitions`` in a hardware profile (docs/cache.md, "Two partitions"):
1 or 2, a cache's field only, and 2 only for an L2 with no cache behind it; and its
``ways`` (hashed sets, docs/cache.md "Sets"), for two partitions only."""

import pytest

from iosim.hardware import load_profile
from test_profiles import BASE, edited, one_problem

L2_LINE = "  l2: {role: cache, capacity: {value: 1, unit: MiB, source: test}}"


def test_a_cache_may_have_two_partitions(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text(edited((L2_LINE, L2_LINE[:-1] + ", partitions: {value: 2, source: test}}")))
    assert load_profile(path).cache.partitions == 2
    path.write_text(BASE)
    assert load_profile(path).cache.partitions == 1


@pytest.mark.parametrize("value, expected", [
    ("3", "levels.l2.partitions: expected 1 or 2 (the L2 models no other), got 3"),
    ("2.5", "levels.l2.partitions.value: must be a whole number, got 2.5"),
])
def test_partitions_other_than_one_or_two_are_refused(tmp_path, value, expected):
    msg = one_problem(tmp_path, edited((L2_LINE, L2_LINE[:-1] + f", partitions: {{value: {value}, source: test}}}}")))
    assert msg == expected


def test_two_partitions_with_a_cache_behind_are_refused(tmp_path):
    text = edited((L2_LINE, L2_LINE[:-1] + ", partitions: {value: 2, source: test}}\n"
                   "  mall: {role: cache, capacity: {value: 4, unit: MiB, source: test}}"),
                  ("  - {between: [hbm, l2]", "  - {between: [hbm, mall], bandwidth: {value: 1, unit: TB/s, source: test}}\n"
                                             "  - {between: [mall, l2]"))
    assert one_problem(tmp_path, text).startswith("levels.l2.partitions: two partitions are modelled only for")


def test_partitions_is_a_cache_field(tmp_path):
    msg = one_problem(tmp_path, edited(("    role: scratchpad\n",
                                        "    role: scratchpad\n    partitions: {value: 2, source: t}\n")))
    assert msg.startswith("levels.smem.partitions: unknown key")


TWO = L2_LINE[:-1] + ", partitions: {value: 2, source: test}"


def test_a_partitioned_cache_may_be_hashed_sets(tmp_path):
    path = tmp_path / "sets.yaml"
    path.write_text(edited((L2_LINE, TWO + ", ways: {value: 16, source: test}}")))
    assert load_profile(path).cache.ways == 16
    path.write_text(edited((L2_LINE, TWO + "}")))
    assert load_profile(path).cache.ways is None


@pytest.mark.parametrize("line, expected", [
    (TWO + ", ways: {value: 0, source: test}}", "levels.l2.ways.value: must be > 0, got 0"),
    (TWO + ", ways: {value: 100, source: test}}", "levels.l2.ways: expected at most 64 ways, got 100"),
    (L2_LINE[:-1] + ", ways: {value: 16, source: test}}",
     "levels.l2.ways: hashed sets are modelled for a cache of two partitions only (partitions: 2)"),
])
def test_ways_out_of_range_or_without_two_partitions_are_refused(tmp_path, line, expected):
    assert one_problem(tmp_path, edited((L2_LINE, line))) == expected
