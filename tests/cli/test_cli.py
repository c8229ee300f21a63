"""The CLI: every subcommand runs, the JSON contract holds, bad input exits 2 with a message."""

import csv
import io
import json
import os
import pathlib
import subprocess
import sys

import pytest

from iosim.cli.main import main

ROOT = pathlib.Path(__file__).resolve().parents[2]

from conftest import run


def run_exit(capsys, *argv):
    """Like run, for errors argparse reports by raising SystemExit."""
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return info.value.code, out, err


def test_profiles_lists_builtins(capsys):
    code, out, _ = run(capsys, "profiles")
    assert code == 0
    for name in ("a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "mi300x", "fa-paper-a100", "toy"):
        assert name in out


def test_simulate_table(capsys):
    code, out, _ = run(capsys, "simulate", "--hw", "h100-sxm", "--algo", "fa2", "-N", "8192", "-d", "128")
    assert code == 0
    assert "HBM read" in out and "Theorem 2" in out and "bound by" in out


def test_simulate_json_contract(capsys):
    code, out, _ = run(capsys, "simulate", "--hw", "fa-paper-a100", "--algo", "fa1", "-N", "8192", "-d", "128",
                       "--batch", "2", "--heads", "4", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert set(data["hbm"]) >= {"read_bytes", "write_bytes"}
    assert set(data["sram"]) >= {"peak_bytes", "capacity_bytes"}
    assert data["blocks"]["block_q"] == 128 and data["blocks"]["block_kv"] == 192
    assert isinstance(data["flops"], int) and "predicted_s" in data["time"]
    assert set(data["tensors"]) == {"Q", "K", "V", "O", "l", "m"}
    for t in data["tensors"].values():
        assert isinstance(t["read_bytes"], int) and isinstance(t["write_bytes"], int)
    # 8 heads × the spec's 280,363,008 bytes per head (ℓ, m in fp32).
    assert data["hbm"]["read_bytes"] + data["hbm"]["write_bytes"] == 8 * 280_363_008


def test_simulate_csv(capsys):
    code, out, _ = run(capsys, "simulate", "--hw", "h200", "--algo", "standard", "-N", "1024", "-d", "64",
                       "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    total = [r for r in rows if r["tensor"] == "total"][0]
    assert int(total["read_bytes"]) + int(total["write_bytes"]) == 2 * (4 * 1024 * 64 + 4 * 1024 * 1024)


def test_python_dash_m(tmp_path):
    out = subprocess.run([sys.executable, "-m", "iosim", "simulate", "--hw", "toy", "--algo", "fa2",
                          "-N", "256", "-d", "16", "--format", "json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["algorithm"] == "fa2"


# -- bad input: message, exit code 2, no traceback ------------------------------------

def assert_clean_error(code, err, *fragments):
    assert code == 2
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err


def test_unknown_profile(capsys):
    code, _, err = run(capsys, "simulate", "--hw", "h999", "--algo", "fa2", "-N", "64", "-d", "16")
    assert_clean_error(code, err, "h999", "h100-sxm")


def test_profile_file_with_typo_and_duplicate(capsys, tmp_path):
    from iosim.hardware import load_profile

    good = load_profile("toy").source_path
    text = open(good).read().replace("sm_count:", "sm_cuont:", 1)
    text += "\nvendor: twice\n"
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, _, err = run(capsys, "simulate", "--hw", str(path), "--algo", "fa2", "-N", "64", "-d", "16")
    assert_clean_error(code, err, "sm_cuont", "vendor")


def test_missing_profile_file(capsys, tmp_path):
    code, _, err = run(capsys, "simulate", "--hw", str(tmp_path / "nope.yaml"), "--algo", "fa2", "-N", "64", "-d", "16")
    assert_clean_error(code, err, "nope.yaml")


def test_sram_overflow(capsys):
    code, _, err = run(capsys, "simulate", "--hw", "a100-40gb", "--algo", "fa2", "-N", "4096", "-d", "128",
                       "--block-q", "256", "--block-kv", "256")
    assert_clean_error(code, err, "do not fit", "Q_i", "K_j", "166,912")


@pytest.mark.parametrize("argv,fragment", [
    (["--seq-len", "-5"], "positive integer"),
    (["--seq-len", "0"], "positive integer"),
    (["--seq-len", "abc"], "positive integer"),
    (["--block-q", "0"], "positive integer"),
])
def test_impossible_sizes(capsys, argv, fragment):
    base = ["simulate", "--hw", "toy", "--algo", "fa2", "-N", "64", "-d", "16"]
    code, _, err = run_exit(capsys, *(base + argv))
    assert_clean_error(code, err, fragment)


def test_unknown_algorithm(capsys):
    code, _, err = run_exit(capsys, "simulate", "--hw", "toy", "--algo", "fa3", "-N", "64", "-d", "16")
    assert_clean_error(code, err, "fa3")


def test_ragged_n_is_fine(capsys):
    """N not divisible by a block size is not an error: the last tile is ragged."""
    code, out, _ = run(capsys, "simulate", "--hw", "toy", "--algo", "fa1", "-N", "1000", "-d", "16",
                       "--block-q", "64", "--block-kv", "48", "--format", "json")
    assert code == 0
    assert json.loads(out)["blocks"]["num_q_blocks"] == 16


TOY_EDITS = {
    "unknown key": (("sm_count:", "sm_cuont:"), "sm_cuont"),
    "missing field": (("sm_count:", "# sm_count:"), "sm_count"),
    "wrong type": (("{value: 8, unit: KiB, source: \"illustrative, not a real GPU\"}",
                    "{value: eight, unit: KiB, source: \"illustrative, not a real GPU\"}"), "capacity_per_sm"),
    "non-positive": (("{value: 100, unit: GB/s", "{value: -4, unit: GB/s"), "links[0].bandwidth"),
    "unit-less": (("{value: 1, unit: GiB, ", "{value: 1, "), "levels.hbm.capacity"),
    "inconsistent": (("capacity_per_block: {value: 8, unit: KiB", "capacity_per_block: {value: 300, unit: KiB"),
                     "capacity_per_block"),
    "duplicate key": (("vendor:", "vendor: one\nvendor:"), "vendor"),
    "yaml syntax": (("levels:", "levels: [unclosed"), "line"),
}


@pytest.mark.parametrize("kind", list(TOY_EDITS))
def test_bad_profile_yaml_exits_2_naming_the_field(capsys, tmp_path, kind):
    from iosim.hardware import load_profile

    (old, new), fragment = TOY_EDITS[kind]
    text = open(load_profile("toy").source_path).read()
    assert old in text, f"test edit for {kind!r} no longer applies to toy.yaml"
    path = tmp_path / "edited.yaml"
    path.write_text(text.replace(old, new, 1))
    code, _, err = run(capsys, "simulate", "--hw", str(path), "--algo", "fa2", "-N", "64", "-d", "16")
    assert_clean_error(code, err, fragment)


def test_backward_pass_json(capsys):
    code, out, _ = run(capsys, "simulate", "--hw", "fa-paper-a100", "--algo", "fa2", "-N", "8192", "-d", "128",
                       "--pass", "backward", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["passes"] == "backward" and data["theorem2"]["theorem"] == "Theorem 5"
    assert data["hbm"]["total_bytes"] == 466_321_408  # docs/spec/algorithms.md §9.1, stats in fp32


def test_standard_backward_rejects_tiled_gemm(capsys):
    code, _, err = run(capsys, "simulate", "--hw", "toy", "--algo", "standard", "-N", "64", "-d", "16",
                       "--pass", "backward", "--gemm", "tiled")
    assert_clean_error(code, err, "idealised")


def test_dq_read_twice_only_for_fa2(capsys):
    code, _, err = run(capsys, "simulate", "--hw", "toy", "--algo", "fa1", "-N", "64", "-d", "16",
                       "--pass", "backward", "--dq-read-twice")
    assert_clean_error(code, err, "takes no option --dq-read-twice")  # the library's dq_read_twice, reworded


def test_unequal_lengths(capsys):
    code, out, _ = run(capsys, "simulate", "--hw", "toy", "--algo", "fa2", "--seq-len-q", "1", "--seq-len-kv", "4096",
                       "-d", "16", "--block-q", "1", "--block-kv", "64", "--causal", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert (data["problem"]["seq_len_q"], data["problem"]["seq_len_kv"]) == (1, 4096)
    assert data["tensors"]["K"]["read_elements"] == 4096 * 16  # one query row sees every key


def test_sequence_length_missing(capsys):
    code, _, err = run(capsys, "simulate", "--hw", "toy", "--algo", "fa2", "--seq-len-q", "64", "-d", "16")
    assert_clean_error(code, err, "--seq-len")


def test_block_mask_option(capsys):
    code, out, _ = run(capsys, "simulate", "--hw", "toy", "--algo", "fa1", "-N", "1024", "-d", "16",
                       "--block-q", "64", "--block-kv", "64", "--block-mask", "local:1", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["options"]["block_density"] == 1 / 16
    assert data["tensors"]["Q"]["read_elements"] == 16 * 64 * 16  # one block per block-row


def test_block_mask_bad_spec(capsys):
    code, _, err = run(capsys, "simulate", "--hw", "toy", "--algo", "fa1", "-N", "1024", "-d", "16",
                       "--block-mask", "nonsense")
    assert_clean_error(code, err, "block mask", "local:W")


def test_decode_split_kv(capsys):
    code, out, _ = run(capsys, "simulate", "--hw", "h100-sxm", "--algo", "fa2-splitkv", "--seq-len-q", "1",
                       "--seq-len-kv", "8192", "-d", "128", "--heads", "32", "--block-q", "64", "--block-kv", "128",
                       "--format", "json")
    assert code == 0
    assert json.loads(out)["options"]["num_splits"] == 7  # docs/spec/algorithms.md §9.3, H100 SXM


def test_num_splits_option(capsys):
    code, out, _ = run(capsys, "simulate", "--hw", "toy", "--algo", "fa2-splitkv", "--seq-len-q", "1",
                       "--seq-len-kv", "1024", "-d", "16", "--num-splits", "4", "--block-q", "64",
                       "--block-kv", "64", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["tensors"]["Oaccum"]["write_elements"] == 4 * 16


def test_simulate_runs_a_schedule_from_a_file(tmp_path, capsys):
    """--algo FILE.py:FUNCTION: a schedule of one's own, from the command line (issue 15);
    the instructor's FA2 counts what the built-in FA2 counts."""
    solution = ROOT / "examples" / "assignments" / "instructor" / "fa2_solution.py"
    base = ["simulate", "--hw", "toy", "-N", "256", "-d", "16", "--block-q", "32", "--block-kv", "32",
            "--format", "json"]
    assert main(base + ["--algo", f"{solution}:fa2_forward"]) == 0
    mine = json.loads(capsys.readouterr().out)
    assert main(base + ["--algo", "fa2"]) == 0
    builtin = json.loads(capsys.readouterr().out)
    assert mine["algorithm"] == f"{solution}:fa2_forward" and mine["tensors"] == builtin["tensors"]
    broken = tmp_path / "broken.py"
    broken.write_text("raise ValueError('nope')\n")
    for algo, message in ((f"{solution}:nothing", "defines no function nothing"),
                          (f"{tmp_path}/none.py:f", "no such file"),
                          (f"{broken}:f", "loading it raised ValueError: nope"),
                          ("fa3", "unknown algorithm 'fa3'")):
        with pytest.raises(SystemExit) as stop:
            main(base + ["--algo", algo])
        assert stop.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["profiles"],
    ["simulate", "--hw", "toy", "--algo", "fa2", "-N", "64", "-d", "16"],
    ["bounds", "--hw", "toy", "--algo", "fa2", "-N", "256", "-d", "16"],
    ["explore", "--hw", "toy", "--algo", "fa2", "-N", "128", "-d", "16", "--block-q", "16", "--block-kv", "16"],
    ["pebble", "-N", "2", "-d", "1", "-S", "8", "--schedule", "fa2"],
    ["grade", "{dave}"],
])
def test_every_json_output_carries_its_schema_version(tmp_path, capsys, argv):
    """Scripts can check the contract they read (issue 15): a top-level schema_version."""
    dave = tmp_path / "dave.py"
    dave.write_text("x = 1\n")                    # not gradable: the JSON says so, with a version
    assert main([a.format(dave=dave) for a in argv] + ["--format", "json"]) in (0, 1, 2)
    assert json.loads(capsys.readouterr().out)["schema_version"] == 1


def test_profiles_and_pebble_have_csv(capsys):
    """CSV for every subcommand's table (issue 15): profiles and pebble too."""
    import csv
    import io

    assert main(["profiles", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["name"] for r in rows} >= {"h100-sxm", "h200", "toy"} and all(r["sm_count"] for r in rows)
    assert main(["pebble", "-N", "2", "-d", "1", "-S", "8", "--schedule", "fa2", "--schedule", "fa1",
                 "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["seq_len"], r["schedule"]) for r in rows] == [("2", "fa2"), ("2", "fa1")] and int(rows[0]["io"]) > 0


@pytest.mark.parametrize("line,expected", [
    ("iosim sim", {"simulate"}),
    ("iosim simulate --hw h1", {"h100-pcie", "h100-sxm"}),
    ("iosim simulate --hw toy --algo fa", {"fa1", "fa2", "fa2-splitkv"}),
    ("iosim grade x.py --assign", {"--assignment"}),
])
def test_shell_completion(tmp_path, line, expected):
    """`eval "$(register-python-argcomplete iosim)"` completes subcommands, options and their
    values: argcomplete's protocol played on `python -m iosim` in a process of its own
    (argcomplete takes over the process's output streams)."""
    pytest.importorskip("argcomplete", reason="shell completion needs the optional argcomplete")
    out = tmp_path / "completions"
    env = {**os.environ, "_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)),
           "_ARGCOMPLETE_IFS": "\v", "_ARGCOMPLETE_STDOUT_FILENAME": str(out), "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "iosim"], env=env, cwd=tmp_path, timeout=60, capture_output=True)
    assert {word.strip() for word in out.read_text().split("\v")} >= expected


def test_simulate_says_when_the_kernels_run_a_padded_head_dim(capsys):
    """d = 100 runs as 104 under PyTorch's SDPA: the table says so, the JSON names it."""
    def argv(d):
        return ("simulate", "--hw", "h200", "--algo", "fa2", "--seq-len", "512", "--head-dim", str(d),
                "--kernel", "flash-attn-2", "--no-cache")
    code, out, _ = run(capsys, *argv(100))
    assert code == 0 and "the kernels run d=104" in out and "sqrt(100)" in out
    code, out, _ = run(capsys, *argv(100), "--format", "json")
    assert code == 0 and json.loads(out)["options"]["kernel_problem"]["head_dim"] == 104
    code, out, _ = run(capsys, *argv(104))
    assert code == 0 and "the kernels run" not in out


def test_explore_with_the_flash_preset_on_a_split_kv_launch(capsys):
    """One head at N = 2,048 runs split-KV, whose masked and unmasked blocks differ in which
    time units they have (a block that holds its SM alone waits for its tiles; an empty one
    does not): the tiles explore tries must all be timed, not end in a traceback."""
    code, out, err = run(capsys, "explore", "--hw", "h200", "--algo", "fa2", "-N", "2048", "--head-dim", "64",
                         "--kernel", "flash-attn-2", "--causal")
    assert code == 0 and "real kernel" in out and not err


def test_an_output_that_cannot_be_written_is_said_in_one_line(monkeypatch, capsys):
    """A full or broken output device is no bad input: one line on standard error, exit 1, no traceback."""
    import errno
    import io

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sys, "stdout", Full())
    assert main(["simulate", "--hw", "h200", "--algo", "fa2", "-N", "1024", "-d", "64"]) == 1
    assert capsys.readouterr().err == "iosim: error: No space left on device\n"


def test_validate_takes_no_warm_up_launch_if_asked(capsys):
    """--warmup 0 is a sensible request (time the first launch too); below 0 or past 1,000 is refused."""
    from iosim.cli.main import build_parser
    parser = build_parser("validate")
    assert parser.parse_args(["validate", "--hw", "h200", "-N", "64", "-d", "16", "--warmup", "0"]).warmup == 0
    for bad in ("-1", "1001"):
        with pytest.raises(SystemExit):
            parser.parse_args(["validate", "--hw", "h200", "-N", "64", "-d", "16", "--warmup", bad])
    assert "--warmup" in capsys.readouterr().err
