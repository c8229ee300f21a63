"""What `iosim simulate` reports where a QA pass found it silent or inexact: the block mask in
the table's head, sizes written as explore and bounds take them (8k), the profile names a
typo starts, CSV without a blank last line, the default --gemm, and a note (not an error)
for a shape whose tensors exceed the profile's HBM capacity."""

import csv
import io
import json

import pytest

from iosim import Options, Problem, simulate
from iosim.errors import ProfileError
from iosim.hardware import load_profile

from conftest import run_untraced as _run


TOY = ("simulate", "--hw", "toy", "-d", "16")


@pytest.mark.parametrize("algo", ["fa1", "fa2"])
def test_the_tables_head_names_the_block_mask(capsys, algo):
    masked = ("--algo", algo, "-N", "1024", "--block-q", "64", "--block-kv", "64", "--block-mask", "local:2",
              "--no-cache")
    code, out, _ = _run(capsys, *TOY, *masked, "--format", "json")
    assert code == 0 and json.loads(out)["options"]["block_density"] == 46 / 256     # 16 × 16 blocks, a band of 3
    code, out, _ = _run(capsys, *TOY, *masked)
    assert code == 0
    title = out.splitlines()[0]
    assert title.endswith(", block mask local:2, density 0.1797"), title
    code, out, _ = _run(capsys, *TOY, "--algo", algo, "-N", "1024", "--no-cache")
    assert code == 0 and "block mask" not in out.splitlines()[0]


def test_sizes_take_8k_as_explore_and_bounds_do(capsys):
    code, short, _ = _run(capsys, "simulate", "--hw", "h100-sxm", "--algo", "fa2", "-N", "8k", "-d", "16", "-H", "2",
                          "--batch", "1", "--kv-heads", "1", "--block-q", "1k", "--block-kv", "1K", "--format", "json",
                          "--no-cache")
    assert code == 0, short
    code, long, _ = _run(capsys, "simulate", "--hw", "h100-sxm", "--algo", "fa2", "-N", "8192", "-d", "16", "-H", "2",
                         "--batch", "1", "--kv-heads", "1", "--block-q", "1024", "--block-kv", "1024", "--format",
                         "json", "--no-cache")
    assert code == 0 and json.loads(short) == json.loads(long)
    code, out, _ = _run(capsys, *TOY[:3], "--algo", "fa2", "-d", "16", "--seq-len-q", "1", "--seq-len-kv", "4k",
                        "--format", "json", "--no-cache")
    assert code == 0 and json.loads(out)["problem"]["seq_len_kv"] == 4096
    code, _, err = _run(capsys, *TOY, "--algo", "fa2", "-N", "8m")
    assert code == 2 and "--seq-len/-N" in err and "8192 or 8k" in err


def test_n_with_one_of_the_lengths_still_sets_the_other(capsys):
    code, out, _ = _run(capsys, *TOY, "--algo", "fa2", "-N", "512", "--seq-len-q", "1", "--format", "json",
                        "--no-cache")
    assert code == 0
    problem = json.loads(out)["problem"]
    assert (problem["seq_len_q"], problem["seq_len_kv"]) == (1, 512)


def test_an_unknown_profile_suggests_the_names_it_starts(capsys):
    code, _, err = _run(capsys, "simulate", "--hw", "h100", "--algo", "fa2", "-N", "64", "-d", "16")
    assert code == 2 and "did you mean 'h100-pcie' or 'h100-sxm'?" in err and "'h200'?" not in err
    with pytest.raises(ProfileError, match="did you mean 'h200'\\?"):      # no name starts so: the closest
        load_profile("h300")


def test_csv_ends_with_its_last_row(capsys):
    code, out, _ = _run(capsys, *TOY, "--algo", "fa2", "-N", "256", "--format", "csv", "--no-cache")
    assert code == 0
    assert out.endswith("\n") and not out.endswith("\n\n")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[-1][1] == "total" and all(rows)


def test_gemm_default_and_given_with_standard(capsys):
    code, out, _ = _run(capsys, *TOY, "--algo", "standard", "-N", "256", "--format", "json", "--no-cache")
    assert code == 0 and json.loads(out)["options"]["gemm"] == "idealised"       # recorded, as before
    code, out, _ = _run(capsys, *TOY, "--algo", "standard", "-N", "256", "--gemm", "tiled", "--format", "json",
                        "--no-cache")
    assert code == 0 and json.loads(out)["options"]["gemm"] == "tiled"
    code, out, _ = _run(capsys, *TOY, "--algo", "fa2", "-N", "256", "--format", "json", "--no-cache")
    assert code == 0 and "gemm" not in json.loads(out)["options"]


# toy: 1 GiB of HBM. N = 64k, d = 64, 64 heads, fp16: Q, K, V, O take 512 MiB each
BIG = (*TOY[:3], "--algo", "fa2", "-d", "64", "-H", "64", "-N", "64k", "--no-cache")
NOTE = ("the tensors Q, K, V and O alone take 2,147,483,648 B (Q 536,870,912 B, K 536,870,912 B, V 536,870,912 B, "
        "O 536,870,912 B), more than toy's HBM capacity of 1,073,741,824 B: this shape could not run on that GPU "
        "(counted all the same)")


def test_tensors_past_the_hbm_capacity_are_counted_with_a_note(capsys):
    code, out, err = _run(capsys, *BIG)
    assert code == 0 and err == ""
    assert f"note: {NOTE}" in out.split("\n\n")[0]              # in the table's head
    code, out, _ = _run(capsys, *BIG, "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["notes"] == [NOTE] and data["hbm"]["total_bytes"] > 0
    code, out, err = _run(capsys, *BIG, "--format", "csv")
    assert code == 0 and err.strip() == f"iosim: note: {NOTE}" and "note" not in out
    r = simulate("toy", "fa2", Problem(seq_len=65536, head_dim=64, heads=64), options=Options(cache=False))
    assert r.notes == (NOTE,) and r.to_dict()["notes"] == [NOTE]


def test_tensors_that_fill_the_hbm_exactly_have_no_note(capsys):
    code, out, _ = _run(capsys, *BIG[:-2], "32k", "--no-cache", "--format", "json")    # 4 × 256 MiB = 1 GiB
    assert code == 0 and "notes" not in json.loads(out)
    r = simulate("toy", "fa2", Problem(seq_len=32768, head_dim=64, heads=64), options=Options(cache=False))
    assert r.notes == ()
