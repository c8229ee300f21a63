"""Block-mask files are read bounded and strictly (issue 16): special files refused up front,
a size cap from the tiling, .npy headers checked before any data is read, only real 0/1
entries, and short messages. Through the Python API and ``iosim simulate --block-mask``."""

import io
import os
import time

import numpy as np
import pytest

from conftest import run
from iosim.errors import ProblemError
from iosim.hardware.limits import MASK_BYTES_PER_BLOCK, MASK_FILE_SLACK, MAX_MASK_BLOCKS
from iosim.workload.masks import parse_block_mask


SHAPE = (4, 6)
SIM = ("simulate", "--hw", "toy", "--algo", "fa1", "-N", "256", "-d", "16", "--block-q", "64", "--block-kv", "64")


def refused(spec, shape=SHAPE) -> str:
    start = time.perf_counter()
    with pytest.raises(ProblemError) as info:
        parse_block_mask(spec, *shape, 64, 64)
    assert time.perf_counter() - start < 10
    message = str(info.value)
    assert len(message) < 400 and "\n" not in message, message
    return message


def npy(array: np.ndarray, **kwargs) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, **kwargs)
    return buf.getvalue()


# --------------------------------------------------------------------------- files


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("name", ["/dev/zero", "/dev/null"])
def test_devices_are_refused_up_front(name):
    assert refused(name) == f"block mask file '{name}': cannot read: it is a character device, not a regular file"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "mask.txt"
    os.mkfifo(fifo)
    assert "it is a FIFO (named pipe)" in refused(str(fifo))


def test_a_directory_is_refused(tmp_path):
    assert "it is a directory" in refused(str(tmp_path))


def test_a_missing_mask_file(tmp_path):
    assert "cannot read: No such file" in refused(str(tmp_path / "mask.npy"))


def test_the_size_cap_follows_the_tiling(tmp_path):
    limit = MASK_FILE_SLACK + MASK_BYTES_PER_BLOCK * SHAPE[0] * SHAPE[1]
    path = tmp_path / "mask.txt"
    path.write_text("# padding\n" * (limit // 10) + "1 1 1 1 1 1\n" * 4)
    assert path.stat().st_size > limit
    assert f"larger than the limit of {limit:,} bytes for a 4 × 6 mask" in refused(str(path))
    path.write_text("# padding\n" * (limit // 20) + "1 1 1 1 1 1\n" * 4)
    assert parse_block_mask(str(path), *SHAPE, 64, 64).all()


def test_too_many_blocks_for_any_spec():
    side = int(MAX_MASK_BLOCKS ** 0.5) + 1
    for spec in ("dense", "local:2", "random:0.5", np.ones((1, 1), dtype=bool)):
        assert "over the limit of 67,108,864 blocks" in refused(spec, (side, side))


# --------------------------------------------------------------------------- .npy


@pytest.mark.parametrize("dtype", [bool, np.int8, np.int64, np.uint8, np.float32, np.float64])
def test_real_npy_masks_load(tmp_path, dtype):
    mask = np.eye(*SHAPE, dtype=dtype)
    path = tmp_path / "mask.npy"
    path.write_bytes(npy(mask))
    assert (parse_block_mask(str(path), *SHAPE, 64, 64) == mask.astype(bool)).all()


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, "U1", object])
def test_complex_string_and_object_masks_are_refused(tmp_path, dtype):
    path = tmp_path / "mask.npy"
    path.write_bytes(npy(np.ones(SHAPE).astype(dtype), allow_pickle=True))
    assert "expected bool, integer or real entries (not complex, strings or objects)" in refused(str(path))


@pytest.mark.parametrize("dtype", [np.complex128, object])
def test_complex_and_object_arrays_are_refused(dtype):
    assert "(not complex, strings or objects)" in refused(np.ones(SHAPE, dtype=dtype))


def test_a_header_claiming_a_huge_shape_is_refused_before_reading(tmp_path):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)})
    path = tmp_path / "mask.npy"
    path.write_bytes(buf.getvalue() + b"\0" * 64)
    assert refused(str(path)) == "block mask has shape (1000000, 1000000), but the tiling needs T_r × T_c = (4, 6)"


@pytest.mark.parametrize("data", [b"", b"\x93NUMPY", b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8', 'fortran_",
                                  b"\x93NUMPY\x09\x00garbage", npy(np.ones(SHAPE))[:-5]])
def test_broken_npy_files_are_problem_errors(tmp_path, data):
    path = tmp_path / "mask.npy"
    path.write_bytes(data)
    assert refused(str(path)).startswith(f"block mask file '{path}'")


# --------------------------------------------------------------------------- text


def test_text_masks_with_commas_and_comments(tmp_path):
    path = tmp_path / "mask.txt"
    path.write_text("# a mask\n1 0 0 0 0 1\n1,1,0,0,0,0\n\n  0, 0, 1, 1, 0, 0\n1 1 1 1 1 1\n")
    mask = parse_block_mask(str(path), *SHAPE, 64, 64)
    assert mask.sum() == 2 + 2 + 2 + 6 and mask.dtype == bool


@pytest.mark.parametrize("text,fragment", [
    ("1 1 1 1 1 1\n" * 5, "line 5 is row 5, but the tiling needs T_r × T_c = (4, 6)"),
    ("1 1 1 1 1 1\n" * 3, "3 rows, but the tiling needs T_r × T_c = (4, 6)"),
    ("1 1 1 1 1\n" * 4, "line 1 has 5 entries"),
    ("1 1 1 1 1 1\n1 1 2 1 1 1\n", "line 2: entry '2' is not 0 or 1"),
    ("1 1 1 1 1 " + "9" * 5000 + "\n", "entry '99999999999999999999'… (5,000 characters) is not 0 or 1"),
    ("root:x:0:0:root:/root:/bin/bash\n", "line 1 has 1 entries"),
])
def test_bad_text_masks_say_where_in_short(tmp_path, text, fragment):
    path = tmp_path / "mask.txt"
    path.write_text(text)
    message = refused(str(path))
    assert fragment in message and "root:x" not in message


def test_binary_garbage_is_not_utf8(tmp_path):
    path = tmp_path / "mask.txt"
    path.write_bytes(b"1 1 \xff\xfe\n")
    assert "byte 4 is not UTF-8 text" in refused(str(path))


def test_a_long_spec_is_quoted_as_an_excerpt():
    assert "(100,000 characters)" in refused("s" * 100_000)


# --------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("case", ["device", "directory", "complex", "huge header"])
def test_simulate_reports_bad_mask_files_in_one_line_and_exit_2(capsys, tmp_path, case):
    path = tmp_path / "mask.npy"
    if case == "device":
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero")
        path = "/dev/zero"
    elif case == "directory":
        path = tmp_path
    elif case == "complex":
        path.write_bytes(npy(np.ones((4, 4), dtype=complex)))
    else:
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": (99999, 99999)})
        path.write_bytes(buf.getvalue())
    code, out, err = run(capsys, *SIM, "--block-mask", str(path))
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith("iosim: error: ") and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("spec,fragment", [("random:0.5:-1", "SEED must be ≥ 0"), ("random:nan", "S must be in (0, 1]"),
                                           ("random:0.5:" + "9" * 5000, "expected random:S or random:S:SEED"),
                                           ("local:" + "9" * 5000, "expected local:W with an integer")])
def test_generator_specs_with_odd_numbers(spec, fragment):
    assert fragment in refused(spec)
