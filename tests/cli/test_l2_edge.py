"""``--l2-edge`` (``Options(l2_edge=True)``, iosim/run/l2_edge.py): each launch's DRAM reads with the L2 played at
0.9 and 1.1 times its room, and a note where they spread past 5 %."""

import json

import pytest

from iosim import Options, Problem, simulate
from iosim.errors import ProblemError
from iosim.hardware import load_profile

from conftest import run_untraced as _run

#: a GQA decode backward whose DRAM reads sit at the room's edge (session 56's study: 0.720 of the measured at
#: the room, 0.854 and 0.650 at 0.9 and 1.1 times it; docs/validation/2026-12-07-s56-check/l2-edge-h200.txt)
DECODE = Problem(seq_len_q=1, seq_len_kv=8192, head_dim=64, batch=8, heads=32, kv_heads=8)
EDGE = Options(kernel="flash-attn-2", cache=True, l2_edge=True)


@pytest.fixture(scope="module")
def decode():
    return simulate(load_profile("h200"), "fa2", DECODE, passes="backward", options=EDGE)


def test_the_reads_at_the_room_are_the_models_and_the_spread_is_the_main_kernels(decode):
    (launch,) = decode.options["launches"]
    edge = launch["l2_edge"]
    assert edge["room_scales"] == [1.0, 0.9, 1.1] and edge["kernel"] == "dq_dk_dv"      # not reduce_dkv, which
    assert decode.cache.kernels["reduce_dkv"].dram_read_bytes > decode.cache.kernels["dq_dk_dv"].dram_read_bytes
    for kernel, stats in decode.cache.kernels.items():                                  # reads more from DRAM
        assert edge["dram_read_bytes"][kernel][0] == stats.dram_read_bytes
    at = edge["dram_read_bytes"]["dq_dk_dv"]
    assert at[1] > at[0] > at[2]                           # less room, more reads
    assert edge["spread"] == round((max(at) - min(at)) / at[0], 4) and edge["spread"] > 0.05
    assert edge["note"].startswith("at the L2 room's edge: its dq_dk_dv kernel reads")


@pytest.mark.parametrize("scale, mib", [(0.9, 54), (1.1, 66)])
def test_a_scaled_room_is_a_profile_with_that_l2(tmp_path, decode, scale, mib):
    """The reads at 0.9 and 1.1 times the room are a plain run's on the h200 profile with a 54 or 66 MiB L2."""
    text = open(load_profile("h200").source_path).read()
    assert text.count("capacity: {value: 60, unit: MiB,") == 1
    yaml = tmp_path / "h200-l2.yaml"
    yaml.write_text(text.replace("capacity: {value: 60, unit: MiB,", f"capacity: {{value: {mib}, unit: MiB,", 1))
    plain = simulate(load_profile(str(yaml)), "fa2", DECODE, passes="backward",
                     options=Options(kernel="flash-attn-2", cache=True))
    (launch,) = decode.options["launches"]
    got = launch["l2_edge"]["dram_read_bytes"]
    assert {k: v[1 + (scale > 1)] for k, v in got.items()} == {k: s.dram_read_bytes
                                                               for k, s in plain.cache.kernels.items()}


def test_a_launch_far_from_the_edge_says_so(capsys):
    code, out, _ = _run(capsys, "simulate", "--hw", "h200", "-N", "2048", "-d", "64", "-H", "4", "--algo", "fa2",
                        "--kernel", "flash-attn-2", "--l2-edge", "--format", "json")
    assert code == 0
    (launch,) = json.loads(out)["options"]["launches"]
    assert launch["l2_edge"]["spread"] <= 0.05 and launch["l2_edge"]["note"].startswith("not at the L2 room's edge")


def test_the_table_says_it_under_the_l2_lines(capsys):
    code, out, _ = _run(capsys, "simulate", "--hw", "h200", "--seq-len-q", "1", "--seq-len-kv", "8192", "-d", "64",
                        "-B", "8", "-H", "32", "--kv-heads", "8", "--algo", "fa2", "--kernel", "flash-attn-2",
                        "--pass", "backward", "--l2-edge")
    assert code == 0
    line = next(l for l in out.splitlines() if l.startswith("L2 model, backward:"))
    assert "at the L2 room's edge: its dq_dk_dv kernel reads 194.1-255.0 MB" in line


@pytest.mark.parametrize("args, message", [
    (("--no-cache",), "--l2-edge plays the L2 model at 0.9 and 1.1 times the L2's room, but the cache is off"),
    ((), None)])
def test_it_needs_the_l2_model_and_a_kernel(capsys, args, message):
    base = ("simulate", "--hw", "h200", "-N", "1024", "-d", "64", "--algo", "fa2", "--l2-edge", *args)
    code, _, err = _run(capsys, *base, "--kernel", "flash-attn-2") if message else _run(capsys, *base)
    assert code == 2
    assert err.strip() == f"iosim: error: {message}" if message else \
        "--l2-edge reports each real kernel's launch: it needs a kernel (e.g. --kernel flash-attn-2)" in err
    with pytest.raises(ProblemError, match="l2_edge reports each real kernel's launch"):
        Options(cache=True, l2_edge=True)
