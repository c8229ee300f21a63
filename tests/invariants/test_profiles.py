"""Hardware profiles: the built-ins load with the reference's numbers, and every kind of bad
input is reported with its field path, all problems at once."""

import dataclasses
from pathlib import Path

import networkx as nx
import pytest

from conftest import TINY_PROFILE, edit
from iosim.errors import ProfileError
from iosim.hardware import HardwareProfile, Level, Link, list_profiles, load_profile
from iosim.hardware import units

BUILTINS = ["a100-40gb", "a100-80gb", "fa-paper-a100", "h100-pcie", "h100-sxm", "h200", "mi300x", "toy"]
KiB = 1024
MiB = 1024 * KiB

# A small valid profile (tests/conftest.py); each bad-input test changes one thing in it.
BASE = TINY_PROFILE


def edited(*replacements: tuple[str, str]) -> str:
    return edit(BASE, *replacements)


def problems(tmp_path: Path, text: str) -> list[str]:
    """The problems load_profile reports for ``text``, which must be invalid."""
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert info.value.source == str(path)
    return info.value.problems


def one_problem(tmp_path: Path, text: str) -> str:
    found = problems(tmp_path, text)
    assert len(found) == 1, found
    return found[0]


# --------------------------------------------------------------------------- built-ins


def test_list_profiles_names_every_builtin_sorted():
    assert list_profiles() == BUILTINS


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_loads_and_is_well_formed(name):
    p = load_profile(name)
    assert p.name == name and p.description and p.vendor
    assert p.sm_count > 0
    assert nx.is_connected(p.graph)
    assert p.path(p.dram.name, p.scratchpad.name)  # HBM -> SRAM exists
    assert 0 < p.scratchpad.per_block_bytes <= p.scratchpad.capacity_bytes
    assert p.dram.capacity_bytes > 0
    if p.registers is not None:
        assert 0 < p.registers.per_block_bytes <= p.registers.capacity_bytes
    assert set(p.summary_row()) == {"name", "description", "hbm_gb", "hbm_tb_s", "l2_mb",
                                    "smem_per_block_kib", "smem_per_sm_kib", "sm_count",
                                    "tensor_fp16_tflops"}


@pytest.mark.parametrize("name", BUILTINS)
def test_every_builtin_quantity_has_a_source(name):
    p = load_profile(name)
    # sm_count, every level capacity, every link, compute and measured rate is recorded.
    expected = 1 + sum(1 if lv.per_block_bytes is None else 2 for lv in p.levels.values())
    expected += len(p.links) + len(p.compute) + len(p.measured) + (p.clock_hz is not None)
    assert len(p.quantities) == expected
    for path, q in p.quantities.items():
        assert q.source.strip(), path
        assert q.value > 0, path
    for link in p.links:
        assert link.source.strip()


def test_h100_sxm_numbers_match_the_reference():
    p = load_profile("h100-sxm")
    assert p.sm_count == 132
    assert p.clock_hz == 1830e6
    assert p.scratchpad.per_block_bytes == 227 * KiB
    assert p.scratchpad.capacity_bytes == 228 * KiB
    assert p.registers.capacity_bytes == p.registers.per_block_bytes == 256 * KiB
    assert p.dram.capacity_bytes == 80 * 10**9
    assert p.cache.capacity_bytes == 50 * MiB          # the l2CacheSize an H100 reports
    hbm_link, = p.path("hbm", "l2")
    assert hbm_link.bandwidth_bytes_per_s == pytest.approx(3.35e12)
    assert p.tensor_flops_per_s("fp16") == pytest.approx(989.4e12)
    assert p.tensor_flops_per_s("fp8") == pytest.approx(1978.9e12)
    assert p.tensor_flops_per_s("fp32") == pytest.approx(494.7e12)  # TF32 tensor cores
    # exp: 16 results/clk/SM x 132 SMs x 1.83 GHz (the FA3 paper's 3.9 TFLOPS).
    assert p.compute["exp"].value == pytest.approx(16 * 132 * 1.83e9)


def test_fa_paper_a100_is_the_papers_sram():
    p = load_profile("fa-paper-a100")
    assert p.sm_count == 108
    assert p.scratchpad.per_block_bytes == 196_608  # 192 KB, usable whole by one block
    assert p.scratchpad.per_block_bytes // 2 == 98_304  # M in fp16 elements
    assert p.cache.capacity_bytes == 40 * 10**6  # the A100's L2 (the paper models none; counts ignore it)
    hbm, l2, sram = p.path("hbm", "registers")
    assert hbm.bandwidth_bytes_per_s == pytest.approx(1.5e12)
    assert sram.bandwidth_bytes_per_s == pytest.approx(19e12)
    assert p.dram.capacity_bytes == 40 * 10**9


def test_other_builtins_key_numbers():
    h200 = load_profile("h200")
    assert h200.path("hbm", "l2")[0].bandwidth_bytes_per_s == pytest.approx(4.8e12)
    assert h200.dram.capacity_bytes == 141 * 10**9
    assert h200.tensor_flops_per_s("bf16") == pytest.approx(989.4e12)  # dense, not 1979

    a100 = load_profile("a100-40gb")
    assert a100.scratchpad.per_block_bytes == 163 * KiB
    assert a100.path("hbm", "l2")[0].bandwidth_bytes_per_s == pytest.approx(1555e9)
    assert a100.tensor_flops_per_s("fp8") is None
    assert load_profile("a100-80gb").path("hbm", "l2")[0].bandwidth_bytes_per_s == pytest.approx(2039e9)

    pcie = load_profile("h100-pcie")
    assert pcie.sm_count == 114
    assert pcie.tensor_flops_per_s("fp32") == pytest.approx(51.2e12)  # no TF32 figure: falls back

    toy = load_profile("toy")
    assert toy.scratchpad.per_block_bytes == 8 * KiB  # M = 4096 fp16 elements
    assert "illustrative" in toy.quantities["sm_count"].source


def test_mi300x_has_two_caches_and_the_l2_is_next_to_the_lds():
    p = load_profile("mi300x")
    assert p.sm_count == 304
    assert p.scratchpad.name == "lds" and p.scratchpad.per_block_bytes == 64 * KiB
    assert [c.name for c in p.caches] == ["infinity_cache", "l2"]
    assert p.cache.name == "l2" and p.cache.capacity_bytes == 32 * 2**20
    assert [(l.a, l.b) for l in p.path("hbm", "lds")] == [
        ("hbm", "infinity_cache"), ("infinity_cache", "l2"), ("l2", "lds")]
    with pytest.raises(ValueError, match="2 'cache' levels"):
        p.level("cache")
    assert "exp" not in p.compute  # not sourced: left out, not invented


def test_load_by_path_equals_load_by_name(tmp_path):
    by_name = load_profile("h100-sxm")
    builtin_file = Path(by_name.source_path)
    copy = tmp_path / "mine.yaml"
    copy.write_text(builtin_file.read_text())
    for arg in (copy, str(copy)):
        by_path = load_profile(arg)
        assert by_path.source_path == str(copy)
        assert dataclasses.replace(by_path, source_path=by_name.source_path) == by_name


def test_unknown_name_lists_the_builtins():
    with pytest.raises(ProfileError) as info:
        load_profile("h100")
    message = str(info.value)
    assert all(name in message for name in BUILTINS)
    assert "did you mean" in message


# --------------------------------------------------------------------------- the values


def test_profile_is_immutable_and_hashable():
    p = load_profile("h100-sxm")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.sm_count = 1
    with pytest.raises(TypeError):
        p.levels["hbm"] = p.levels["l2"]
    with pytest.raises(nx.NetworkXError):
        p.graph.add_node("x")
    assert hash(p) == hash(load_profile("h100-sxm"))
    assert p.graph.edges["l2", "smem"]["link"] is p.path("l2", "smem")[0]
    assert p.graph.nodes["smem"]["level"] is p.scratchpad


def test_profile_built_in_python():
    levels = {"hbm": Level("hbm", "dram", 10**9, None), "sram": Level("sram", "scratchpad", 4096, 4096)}
    p = HardwareProfile("py", "built in Python", "illustrative", "<test>", 1, None,
                        levels, [Link("hbm", "sram", 1e11)])
    assert p.cache is None and p.registers is None
    assert p.tensor_flops_per_s("fp16") is None
    with pytest.raises(ValueError, match="no|0 'registers'"):
        p.level("registers")
    with pytest.raises(ValueError, match="unknown level"):
        p.path("hbm", "l2")
    with pytest.raises(ValueError, match="unknown level"):
        HardwareProfile("bad", "", "", "", 1, None, levels, [Link("hbm", "l3", 1.0)])


def test_units():
    assert units.to_base(227, "KiB", "bytes") == 232_448
    assert units.to_base(40, "GB", "bytes") == 40 * 10**9
    assert units.to_base(3.35, "TB/s", "bandwidth") == pytest.approx(3.35e12)
    assert units.to_base(1830, "MHz", "frequency") == 1.83e9
    with pytest.raises(units.UnitError, match="bandwidth unit"):
        units.factor("TB/s", "bytes")
    with pytest.raises(units.UnitError, match="did you mean 'KiB'"):
        units.factor("kib", "bytes")
    assert units.format_bytes(228 * KiB) == "228 KiB"


# --------------------------------------------------------------------------- bad input


def test_base_profile_is_valid(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(BASE)
    assert load_profile(path).scratchpad.per_block_bytes == 227 * KiB


def test_duplicate_key_names_path_and_both_lines(tmp_path):
    text = edited(("    capacity_per_block: {value: 227, unit: KiB, source: test}\n",
                   "    capacity_per_block: {value: 227, unit: KiB, source: test}\n"
                   "    capacity_per_block: {value: 200, unit: KiB, source: test}\n"))
    msg = one_problem(tmp_path, text)
    assert msg.startswith("levels.smem.capacity_per_block: duplicate key")
    assert "line 12" in msg and "line 13" in msg


def test_duplicate_top_level_key(tmp_path):
    msg = one_problem(tmp_path, edited(("vendor: illustrative\n", "vendor: a\nvendor: b\n")))
    assert msg.startswith("vendor: duplicate key") and "line 4" in msg and "line 5" in msg


def test_unknown_key_suggests_the_right_one(tmp_path):
    msg = one_problem(tmp_path, edited(("    capacity_per_sm: {value: 228",
                                        "    capacity_per_sm: {value: 228, units: KiB")))
    assert msg.startswith("levels.smem.capacity_per_sm.units: unknown key")
    assert "did you mean 'unit'" in msg


def test_field_of_another_role_is_unknown(tmp_path):
    msg = one_problem(tmp_path, edited(("    role: scratchpad\n",
                                        "    role: scratchpad\n    capacity: {value: 1, unit: KiB, source: t}\n")))
    assert msg.startswith("levels.smem.capacity: unknown key") and "scratchpad level takes" in msg


def test_missing_required_field(tmp_path):
    msg = one_problem(tmp_path, edited(("description: a test GPU\n", "")))
    assert msg == "description: missing required field"


def test_missing_source(tmp_path):
    msg = one_problem(tmp_path, edited(("sm_count: {value: 2, source: test}", "sm_count: {value: 2}")))
    assert msg == "sm_count.source: missing required field"


def test_bare_number_is_not_a_quantity(tmp_path):
    msg = one_problem(tmp_path, edited(("sm_count: {value: 2, source: test}", "sm_count: 2")))
    assert msg.startswith("sm_count: expected a quantity {value, source}")


def test_wrong_type_value(tmp_path):
    msg = one_problem(tmp_path, edited(("{value: 1, unit: TB/s", '{value: "fast", unit: TB/s')))
    assert msg == "links[0].bandwidth.value: expected a number, got the string 'fast'"


def test_boolean_is_not_a_number(tmp_path):
    msg = one_problem(tmp_path, edited(("{value: 1, unit: GiB", "{value: yes, unit: GiB")))
    assert msg.startswith("levels.hbm.capacity.value: expected a number, got the boolean true")


@pytest.mark.parametrize("value", ["0", "-4"])
def test_non_positive_value(tmp_path, value):
    msg = one_problem(tmp_path, edited(("{value: 10, unit: TFLOP/s", f"{{value: {value}, unit: TFLOP/s")))
    assert msg == f"compute.tensor_fp16.value: must be > 0, got {value}"


def test_non_integer_count(tmp_path):
    msg = one_problem(tmp_path, edited(("{value: 2, source: test}", "{value: 2.5, source: test}")))
    assert msg == "sm_count.value: must be a whole number, got 2.5"


def test_missing_unit(tmp_path):
    msg = one_problem(tmp_path, edited(("{value: 1, unit: MiB, source: test}", "{value: 1, source: test}")))
    assert msg.startswith("levels.l2.capacity.unit: missing unit; a byte size takes one of B, KB")


def test_unit_of_the_wrong_kind(tmp_path):
    msg = one_problem(tmp_path, edited(("{value: 1, unit: GiB", "{value: 1, unit: TB/s")))
    assert msg.startswith("levels.hbm.capacity.unit: 'TB/s' is a bandwidth unit, but this field needs a byte size")


def test_unknown_unit(tmp_path):
    msg = one_problem(tmp_path, edited(("unit: TFLOP/s", "unit: TFLOPS")))
    assert msg.startswith("compute.tensor_fp16.unit: unknown unit 'TFLOPS'")
    assert "did you mean 'TFLOP/s'" in msg


def test_count_takes_no_unit(tmp_path):
    msg = one_problem(tmp_path, edited(("{value: 2, source: test}", "{value: 2, unit: SM, source: test}")))
    assert msg == "sm_count.unit: a count takes no unit"


def test_per_block_exceeds_per_sm(tmp_path):
    msg = one_problem(tmp_path, edited(("{value: 227, unit: KiB", "{value: 300, unit: KiB")))
    assert msg == "levels.smem.capacity_per_block: 300 KiB exceeds capacity_per_sm (228 KiB)"


def test_fractional_bytes(tmp_path):
    msg = one_problem(tmp_path, edited(("{value: 1, unit: MiB", "{value: 1.5, unit: B")))
    assert msg == "levels.l2.capacity: must be a whole number of bytes, got 1.5 B"


def test_link_names_an_unknown_level(tmp_path):
    msg = one_problem(tmp_path, edited(("between: [l2, smem]", "between: [l3, smem]")))
    assert msg.startswith("links[1].between: unknown level 'l3'; levels are hbm, l2, smem, registers")


def test_duplicate_and_self_links(tmp_path):
    text = edited(("links:\n", "links:\n  - {between: [l2, hbm], bandwidth: {value: 1, unit: TB/s, source: t}}\n"
                               "  - {between: [l2, l2], bandwidth: {value: 1, unit: TB/s, source: t}}\n"))
    found = problems(tmp_path, text)
    assert found[0].startswith("links[1].between: a link must join two different levels")
    assert found[1] == "links[2].between: duplicate link hbm-l2 (also links[0])"


def test_graph_not_connected(tmp_path):
    msg = one_problem(tmp_path, edited(("  - {between: [smem, registers], bandwidth: {value: 4, unit: TB/s, source: test}}\n", "")))
    assert msg == "links: the hierarchy is not connected: no path from hbm to registers"


def test_exactly_one_dram_and_one_scratchpad(tmp_path):
    text = edited(("role: cache", "role: dram"), ("    role: scratchpad\n", "    role: registers\n"))
    found = problems(tmp_path, text)
    assert "levels: needs exactly one level with role 'dram', found 2 (hbm, l2)" in found
    assert "levels: needs exactly one level with role 'scratchpad', found 0" in found
    assert "levels: needs at most one level with role 'registers', found 2 (smem, registers)" in found


def test_unknown_role(tmp_path):
    msg = one_problem(tmp_path, edited(("role: cache", "role: cach")))
    assert msg.startswith("levels.l2.role: unknown role 'cach'") and "did you mean 'cache'" in msg


def test_registers_need_a_per_block_capacity(tmp_path):
    msg = one_problem(tmp_path, edited(("    capacity_per_block: {value: 256, unit: KiB, source: test}\n", "")))
    assert msg == "levels.registers.capacity_per_block: missing required field"


def test_schema_version_missing(tmp_path):
    assert one_problem(tmp_path, edited(("schema_version: 1\n", ""))) == "schema_version: missing required field"


def test_schema_version_unsupported(tmp_path):
    msg = one_problem(tmp_path, edited(("schema_version: 1", "schema_version: 2")))
    assert msg.startswith("schema_version: unsupported version 2")


def test_yaml_syntax_error_reports_line_and_column(tmp_path):
    msg = one_problem(tmp_path, edited(("vendor: illustrative", "vendor: [illustrative")))
    assert msg.startswith("(yaml) line ") and "column" in msg and "syntax error" in msg


def test_file_that_is_not_a_mapping(tmp_path):
    assert one_problem(tmp_path, "- 1\n- 2\n") == "(top level): expected a mapping of profile fields, got a list"
    assert one_problem(tmp_path, "") == "(top level): the file is empty"


def test_unreadable_paths(tmp_path):
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(tmp_path / "missing.yaml")
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(tmp_path)  # a directory


def test_several_problems_are_reported_at_once(tmp_path):
    text = edited(
        ("vendor: illustrative\n", "vendor: a\nvendor: b\n"),
        ("{value: 2, source: test}", "{value: 0, source: test}"),
        ("{value: 1, unit: GiB", "{value: 1, unit: GB/s"),
        ("{value: 227, unit: KiB", "{value: 300, unit: KiB"),
        ("between: [l2, smem]", "between: [l2, sram]"),
        ("tensor_fp16:", "tensor_fp61:"),
    )
    found = problems(tmp_path, text)
    assert [p.split(":")[0] for p in found] == [
        "vendor", "sm_count.value", "levels.hbm.capacity.unit", "levels.smem.capacity_per_block",
        "links[1].between", "compute.tensor_fp61"]
    assert "did you mean 'smem'" in found[4] and "did you mean 'tensor_fp16'" in found[5]


MEASURED = BASE + "measured:\n  launch: {value: 1.5, unit: us, source: test}\n  exp: {value: 3, unit: Top/s, source: test}\n"


def test_measured_rates_are_read_in_base_units(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(MEASURED)
    p = load_profile(str(path))
    assert p.measured["launch"].value == pytest.approx(1.5e-6)
    assert p.measured["exp"].value == 3e12


def test_measured_rate_unknown_key_and_wrong_unit(tmp_path):
    text = MEASURED.replace("  launch:", "  lanuch:").replace("unit: Top/s", "unit: TB/s")
    found = problems(tmp_path, text)
    assert any(m.startswith("measured: unknown key 'lanuch'") or "lanuch" in m for m in found), found
    assert any(m.startswith("measured.exp.unit: 'TB/s' is a bandwidth unit") for m in found), found
