"""A profile's figures must agree with each other and be plausible (issue 16, part 2).

Consistency (always an error): a cache holds no more than the DRAM, one SM's scratchpad or
register file no more than any device-wide level, per block no more than per SM. Plausibility
(an error unless the profile says ``allow_unusual: true``, then a warning recorded on it):
1 to 100,000 SMs, bandwidths 1 MB/s to 10 PB/s, capacities, rates, clock and launch time in
the ranges docs/input-limits.md lists. Finiteness (always an error): every figure finite and
inside the range iosim computes with, once scaled to base units."""

import pytest

from conftest import TINY_PROFILE, edit
from iosim.errors import ProfileError
from iosim.hardware import list_profiles, load_profile, profile_from_yaml

# A small valid profile (tests/conftest.py), with a measured launch; each test changes one thing in it.
BASE = TINY_PROFILE + ("measured:\n  launch: {value: 2, unit: us, source: test}\n"
                       "  code_fetch_free: {value: 70, unit: KiB, source: test}\n")
UNUSUAL = "allow_unusual: true\n"


def edited(*replacements, text=BASE) -> str:
    return edit(text, *replacements)


def problems(text: str) -> list[str]:
    with pytest.raises(ProfileError) as info:
        profile_from_yaml(text, "t.yaml")
    return info.value.problems


def test_base_is_valid_and_has_no_warnings():
    assert profile_from_yaml(BASE).warnings == ()


@pytest.mark.parametrize("name", list_profiles())
def test_builtins_are_consistent_and_plausible(name):
    p = load_profile(name)
    assert p.warnings == ()  # real GPUs (and toy) need no allow_unusual


# --------------------------------------------------------------------------- consistency


ORDERING = {
    "cache larger than dram": (
        ("{value: 1, unit: MiB", "{value: 2, unit: GiB"),
        "levels.l2.capacity: 2 GiB exceeds the capacity of the dram level hbm (1 GiB); a cache holds less than "
        "the memory behind it"),
    "smem per SM larger than the cache": (
        ("capacity_per_sm: {value: 228, unit: KiB", "capacity_per_sm: {value: 2, unit: MiB"),
        "levels.smem.capacity_per_sm: 2 MiB per SM exceeds the capacity of the cache level l2 (1 MiB); one SM's "
        "on-chip memory is smaller than every device-wide level"),
    "registers per SM larger than the cache": (
        ("capacity_per_sm: {value: 256, unit: KiB", "capacity_per_sm: {value: 4, unit: MiB"),
        "levels.registers.capacity_per_sm: 4 MiB per SM exceeds the capacity of the cache level l2 (1 MiB); one "
        "SM's on-chip memory is smaller than every device-wide level"),
}


@pytest.mark.parametrize("case", list(ORDERING))
@pytest.mark.parametrize("unusual", [False, True])
def test_capacities_are_ordered_along_the_hierarchy(case, unusual):
    edit, message = ORDERING[case]
    assert problems(edited(edit) + (UNUSUAL if unusual else "")) == [message]


def test_per_block_sram_larger_than_the_cache_or_hbm():
    # per block ≤ per SM ≤ every device-wide level, so a per-block M larger than the L2 is refused
    text = edited(("capacity_per_sm: {value: 228, unit: KiB", "capacity_per_sm: {value: 3, unit: GiB"),
                  ("capacity_per_block: {value: 227, unit: KiB", "capacity_per_block: {value: 2, unit: GiB"))
    found = problems(text + UNUSUAL)
    assert found == ["levels.smem.capacity_per_sm: 3 GiB per SM exceeds the capacity of the cache level l2 "
                     "(1 MiB); one SM's on-chip memory is smaller than every device-wide level"]


def test_without_a_cache_on_chip_memory_is_checked_against_the_dram():
    text = edited(("  l2: {role: cache, capacity: {value: 1, unit: MiB, source: test}}\n", ""),
                  ("between: [hbm, l2]", "between: [hbm, smem]"),
                  ("  - {between: [l2, smem], bandwidth: {value: 2, unit: TB/s, source: test}}\n", ""),
                  ("capacity_per_sm: {value: 256, unit: KiB", "capacity_per_sm: {value: 2, unit: GiB"))
    assert problems(text + UNUSUAL) == [
        "levels.registers.capacity_per_sm: 2 GiB per SM exceeds the capacity of the dram level hbm (1 GiB); one "
        "SM's on-chip memory is smaller than every device-wide level"]


# --------------------------------------------------------------------------- plausibility


PLAUSIBILITY = {
    "sm_count": (("{value: 2, source: test}", "{value: 200000, source: test}"),
                 "sm_count: 200,000 is outside the plausible range of an SM count, 1 to 100,000"),
    "slow link": (("{value: 1, unit: TB/s", "{value: 500, unit: KB/s"),
                  "links[0].bandwidth: 500 KB/s is outside the plausible range of a bandwidth, 1 MB/s to 10 PB/s"),
    "fast link": (("{value: 4, unit: TB/s", "{value: 20000, unit: TB/s"),
                  "links[2].bandwidth: 20000 TB/s is outside the plausible range of a bandwidth, 1 MB/s to 10 PB/s"),
    "huge dram": (("{value: 1, unit: GiB", "{value: 2048, unit: TiB"),
                  "levels.hbm.capacity: 2048 TiB is outside the plausible range of a device-wide capacity "
                  "(dram, cache), 1 KiB to 1 PiB"),
    "tiny block": (("capacity_per_block: {value: 227, unit: KiB", "capacity_per_block: {value: 512, unit: B"),
                   "levels.smem.capacity_per_block: 512 B is outside the plausible range of an on-chip capacity "
                   "per SM or per block, 1 KiB to 64 MiB"),
    "compute": (("{value: 10, unit: TFLOP/s", "{value: 5000, unit: PFLOP/s"),
                "compute.tensor_fp16: 5000 PFLOP/s is outside the plausible range of a FLOP rate, "
                "1 MFLOP/s to 1 EFLOP/s"),
    "launch": (("{value: 2, unit: us", "{value: 5, unit: s"),
               "measured.launch: 5 s is outside the plausible range of a duration, 1 ns to 1 s"),
    "code": (("{value: 70, unit: KiB", "{value: 1, unit: GiB"),
             "measured.code_fetch_free: 1 GiB is outside the plausible range of an on-chip capacity per SM or "
             "per block, 1 KiB to 64 MiB"),
}


@pytest.mark.parametrize("case", list(PLAUSIBILITY))
def test_implausible_figures_are_errors_naming_allow_unusual(case):
    edit, message = PLAUSIBILITY[case]
    found = problems(edited(edit))
    assert found == [f"{message}; if the profile means it, set allow_unusual: true at its top"]


@pytest.mark.parametrize("case", list(PLAUSIBILITY))
def test_allow_unusual_turns_them_into_warnings(case):
    edit, message = PLAUSIBILITY[case]
    p = profile_from_yaml(edited(edit) + UNUSUAL)
    assert p.warnings == (f"{message} (allowed by allow_unusual)",)


def test_allow_unusual_false_changes_nothing():
    assert profile_from_yaml(BASE + "allow_unusual: false\n").warnings == ()
    assert problems(edited(PLAUSIBILITY["sm_count"][0]) + "allow_unusual: false\n")


@pytest.mark.parametrize("value", ["1", "'yes please'", "[true]"])
def test_allow_unusual_must_be_a_boolean(value):
    assert problems(BASE + f"allow_unusual: {value}\n")[0].startswith("allow_unusual: expected true or false, got ")


# --------------------------------------------------------------------------- finiteness


FINITE = {
    "sm_count 10^12": (("{value: 2, source: test}", "{value: 1000000000000, source: test}"),
                       "sm_count: 1,000,000,000,000 is outside the range iosim computes with, 1 to 2,147,483,647 "
                       "(allow_unusual or not)"),
    "bandwidth below 1 B/s": (("{value: 1, unit: TB/s", "{value: 0.001, unit: B/s"),
                              "links[0].bandwidth: 0.001 B/s is outside the range iosim computes with, 1 B/s to "
                              "1e+24 B/s (allow_unusual or not)"),
    "inf after scaling": (("{value: 4, unit: TB/s", "{value: 1.0e+300, unit: TB/s"),
                          "links[2].bandwidth: 1e+300 TB/s overflows to infinity in B/s"),
    "capacity past int64": (("{value: 1, unit: GiB", "{value: 1.0e+10, unit: TiB"),
                            "levels.hbm.capacity: 1e+10 TiB = 9537 EiB is outside the range iosim computes "
                            "with, 1 B to 1 EiB (allow_unusual or not)"),
    "nan": (("{value: 10, unit: TFLOP/s", "{value: .nan, unit: TFLOP/s"),
            "compute.tensor_fp16.value: must be a finite number > 0, got nan"),
}


@pytest.mark.parametrize("case", list(FINITE))
@pytest.mark.parametrize("unusual", [False, True])
def test_figures_are_finite_and_representable_even_when_unusual(case, unusual):
    edit, message = FINITE[case]
    assert problems(edited(edit) + (UNUSUAL if unusual else "")) == [message]


def test_names_are_one_short_line():
    assert problems(edited(("name: tiny", "name: " + "n" * 65)))[0].startswith(
        "name: expected one line of at most 64 printable characters, got 'nnnn")
    assert problems(edited(("name: tiny", 'name: "ti\\nny"')))[0].startswith("name: expected one line")
