"""The inputs' memory layout (Problem.layout): (B, H, N, d), a head's rows contiguous, or
(B, N, H, d), a row's heads side by side. The counts do not depend on it; the flash-attn-2
preset's L2 model plays the second as lines that neighbouring heads share
(iosim.kernels.strided_rows, iosim.models.cache.lines; docs/cache.md, "Layouts")."""

import json

import pytest

from conftest import run_untraced
from iosim import Options, Problem, prepare, simulate
from iosim.errors import ProblemError
from iosim.kernels.strided_rows import EXPANDED, strided_rows


def test_a_layout_is_one_of_two():
    assert Problem(head_dim=64, seq_len=128).layout == "bhnd"
    with pytest.raises(ProblemError, match="layout") as err:
        Problem(head_dim=64, seq_len=128, layout="bshd")
    assert err.value.field == "layout"


def test_which_tensors_hold_every_heads_rows():
    gqa = Problem(head_dim=40, seq_len=512, heads=8, kv_heads=2)
    strided = Problem(head_dim=40, seq_len=512, heads=8, kv_heads=2, layout="bnhd")
    assert strided_rows(gqa, True, "forward") == {"interleaved": (), "interleaved_reads": ()}
    assert strided_rows(strided, True, "forward") == {"interleaved": ("O",), "interleaved_reads": ("Q", "K", "V")}
    # the decode layout's query rows are one K/V head's group, contiguous in either layout
    assert strided_rows(strided, False, "forward") == {"interleaved": (), "interleaved_reads": ("K", "V")}
    assert strided_rows(gqa, True, "backward") == {"interleaved": EXPANDED, "interleaved_reads": ("O", "dO")}
    assert strided_rows(strided, True, "backward") == {"interleaved": EXPANDED + ("dQ", "dK", "dV"),
                                                       "interleaved_reads": ("O", "dO", "Q", "K", "V")}
    one = Problem(head_dim=40, seq_len=512, layout="bnhd")           # one head: no neighbours
    assert strided_rows(one, True, "backward") == {"interleaved": (), "interleaved_reads": ()}


def test_only_the_flash_attn_2_preset_plays_a_layout():
    strided = Problem(head_dim=64, seq_len=1024, heads=4, layout="bnhd")
    with pytest.raises(ProblemError, match="flash-attn-2") as err:
        prepare("h200", "fa2", strided, options=Options(cache=True))
    assert err.value.field == "layout"
    with pytest.raises(ProblemError, match="flash-attn-2"):
        prepare("h200", "fa2", strided, options=Options(cache=True, kernel="cudnn"))
    counted = simulate("h200", "fa2", strided, options=Options(cache=False))
    assert counted.hbm.total_bytes == simulate("h200", "fa2", Problem(head_dim=64, seq_len=1024, heads=4),
                                               options=Options(cache=False)).hbm.total_bytes


def test_a_gqa_decode_backward_of_strided_rows_reads_about_twice_as_much():
    """The d = 40 GQA decode backward of grid partial (2 × 16 heads on 4, 20,000 keys) read 39.2 MB from
    DRAM on the H200 with (B, H, N, d) inputs and 81.0 MB with (B, N, H, d) ones
    (docs/validation/2026-12-04-partial.md): a K/V row of 80 bytes shares lines with the next K/V head's,
    which its query heads read long after, and its cp.async loads fetch whole lines
    (docs/validation/2026-12-07-line-fetch.md). The loads are the same. The model read 0.999 of the measured
    with the rows played from a line's start (sessions 51-52), and 0.852 since they are played at their real
    offsets (docs/validation/2026-12-07-s52-device.md): less than the GPU, as GQA_DECODE_NOTE says of such
    decodes (0.72-1.00)."""
    def backward(layout):
        p = Problem(seq_len_q=1, seq_len_kv=20000, head_dim=40, batch=2, heads=16, kv_heads=4, layout=layout)
        r = simulate("h200", "fa2", p, passes="backward", options=Options(kernel="flash-attn-2", cache=True))
        return r.kernels["dq_dk_dv"], r.cache.kernels["dq_dk_dv"]
    (counts, contiguous), (same, strided) = backward("bhnd"), backward("bnhd")
    assert counts == same and strided.read_bytes == contiguous.read_bytes
    assert 1.5 * contiguous.dram_read_bytes < strided.dram_read_bytes
    assert round(strided.dram_read_bytes / 81_022_208, 3) == 0.852              # the H200's, (B, N, H, d)


def test_the_cli_takes_a_layout_and_says_it(capsys):
    code, out, _ = run_untraced(capsys, "simulate", "--hw", "h200", "--algo", "fa2", "-N", "1024", "-d", "40",
                                "-H", "4", "--kernel", "flash-attn-2", "--layout", "bnhd", "--format", "json")
    assert code == 0 and json.loads(out)["problem"]["layout"] == "bnhd"
    code, _, err = run_untraced(capsys, "simulate", "--hw", "h200", "--algo", "fa2", "-N", "1024", "-d", "40",
                                "--layout", "bnhd", "--cache")
    assert code == 2 and "layout" in err and "Traceback" not in err
    code, _, err = run_untraced(capsys, "validate", "--hw", "h200", "--algo", "fa2", "-N", "1024", "-d", "64",
                                "--layout", "bnhd", "--vendor", "cudnn")
    assert code == 2 and "--layout bnhd is for --vendor torch-sdpa" in err


def test_a_padded_head_dim_runs_contiguous_copies_whatever_the_layout():
    """PyTorch pads a head dim that is no multiple of 8 with ``at::pad``, which makes new tensors contiguous in
    their (B, H, N, d) shape: flash-attn then reads (B, H, N, d) rows whatever the inputs' strides. The H200
    read the same DRAM bytes in both layouts at d = 84, 114, 179 and 180 (docs/validation/2026-12-06-s46-check.md),
    and so does the model."""
    from iosim.workload.layouts import sdpa_padded
    assert sdpa_padded(Problem(head_dim=84, seq_len=256, heads=4, layout="bnhd")).layout == "bhnd"
    assert sdpa_padded(Problem(head_dim=88, seq_len=256, heads=4, layout="bnhd")).layout == "bnhd"

    def dram(d, layout):
        p = Problem(head_dim=d, seq_len=4096, heads=6, batch=16, layout=layout)
        r = simulate("h200", "fa2", p, passes="forward", options=Options(kernel="flash-attn-2", cache=True))
        return r.cache.kernels["main"].dram_read_bytes
    assert dram(84, "bnhd") == dram(84, "bhnd")
    assert dram(88, "bnhd") > 1.5 * dram(88, "bhnd")           # unpadded: its rows share lines, fetched whole


def test_the_cli_says_a_padded_head_dim_leaves_the_layout_behind(capsys):
    args = ("simulate", "--hw", "h200", "--algo", "fa2", "-N", "1024", "-d", "84", "-H", "4",
            "--kernel", "flash-attn-2")
    code, out, _ = run_untraced(capsys, *args, "--layout", "bnhd")
    assert code == 0 and "the inputs' layout bnhd does not reach the kernels" in out
    code, out, err = run_untraced(capsys, *args, "--layout", "bnhd", "--format", "csv")
    assert code == 0 and "the inputs' layout bnhd does not reach the kernels" in err
    code, out, _ = run_untraced(capsys, *args)
    assert code == 0 and "pads the head dim" in out and "does not reach" not in out
    code, out, _ = run_untraced(capsys, *args, "--layout", "bnhd", "--format", "json")
    got = json.loads(out)
    assert code == 0 and got["problem"]["layout"] == "bnhd" and got["options"]["kernel_problem"]["layout"] == "bhnd"


def test_explore_says_a_padded_head_dim_leaves_the_layout_behind(capsys):
    """explore runs every tile as simulate does, so it says the same of a padded head dim's layout."""
    args = ("explore", "--hw", "h200", "--algo", "fa2", "-N", "1024", "-H", "4", "--kernel", "flash-attn-2",
            "--block-q", "64", "--block-kv", "64", "-d", "84")
    code, out, _ = run_untraced(capsys, *args, "--layout", "bnhd")
    assert code == 0 and "note: PyTorch pads the head dim 84" in out and "bnhd does not reach the kernels" in out
    code, out, err = run_untraced(capsys, *args, "--layout", "bnhd", "--format", "csv")
    assert code == 0 and "bnhd does not reach the kernels" in err
    code, out, _ = run_untraced(capsys, *args, "--layout", "bnhd", "--format", "json")
    assert code == 0 and any("does not reach the kernels" in n for n in json.loads(out)["notes"])
    code, out, _ = run_untraced(capsys, *args[:-1], "88", "--layout", "bnhd", "--format", "json")
    assert code == 0 and json.loads(out)["notes"] == []
