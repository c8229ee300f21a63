"""`iosim validate` without CuPy or without a GPU: a DependencyError naming what is missing
(the CLI turns it into exit code 2). Runs on any machine: CuPy's absence, or a CuPy that sees
no device, is simulated, so these tests also pass where a GPU is present."""

import argparse
import sys
import types

import pytest

import iosim.gpu  # must not import cupy
from iosim.cli import validate_command as validate
from iosim.errors import DependencyError


def parse(*argv):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    validate.register(sub)
    return parser.parse_args(["validate", *argv])


ARGS = ("--hw", "h200", "--seq-len", "256", "--head-dim", "64")


def test_importing_iosim_gpu_does_not_import_cupy():
    assert "cupy" not in vars(iosim.gpu)


def test_without_cupy_validate_raises_dependency_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` now raises ImportError
    with pytest.raises(DependencyError) as info:
        validate.run(parse(*ARGS))
    msg = str(info.value)
    assert "CuPy is not installed" in msg
    assert 'pip install "iosim[gpu]"' in msg
    assert "NVIDIA GPU" in msg


def test_without_a_gpu_validate_raises_dependency_error(monkeypatch):
    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 0))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(DependencyError) as info:
        validate.run(parse(*ARGS))
    assert "no NVIDIA GPU is visible" in str(info.value)


def test_a_driver_error_is_reported_as_a_missing_gpu(monkeypatch):
    def no_driver():
        raise RuntimeError("cudaErrorInsufficientDriver")

    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=no_driver))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(DependencyError) as info:
        validate.run(parse(*ARGS))
    assert "no usable NVIDIA GPU" in str(info.value) and "cudaErrorInsufficientDriver" in str(info.value)


def test_cli_exits_2_with_the_message(monkeypatch, capsys):
    cli = pytest.importorskip("iosim.cli.main")
    monkeypatch.setitem(sys.modules, "cupy", None)
    code = cli.main(["validate", *ARGS])
    err = capsys.readouterr().err
    assert code == 2
    assert "iosim: error:" in err and "CuPy is not installed" in err and "pip install" in err


def test_algo_list_is_checked():
    assert parse(*ARGS, "--algo", "fa2,standard").algo == ["fa2", "standard"]
    with pytest.raises(SystemExit):
        parse(*ARGS, "--algo", "fa3")


def test_rectangular_or_grouped_shapes_are_refused(monkeypatch):
    """The kernels are square MHA only; past the dependency check that is a ProblemError."""
    from iosim.errors import ProblemError

    monkeypatch.setattr(iosim.gpu, "require", lambda: None)
    for extra in (("--seq-len-q", "128", "--seq-len-kv", "256"), ("--heads", "4", "--kv-heads", "2")):
        argv = ["--hw", "h200", "--head-dim", "64", *extra]
        if "--seq-len-q" not in extra:
            argv += ["--seq-len", "256"]
        with pytest.raises(ProblemError, match="square multi-head"):
            validate.run(parse(*argv))


def test_vendor_without_torch_exits_2(monkeypatch, capsys):
    cli = pytest.importorskip("iosim.cli.main")
    monkeypatch.setitem(sys.modules, "torch", None)
    code = cli.main(["validate", "--vendor", "torch-sdpa", *ARGS])
    err = capsys.readouterr().err
    assert code == 2 and "PyTorch is not importable" in err


def test_vendor_without_ncu_exits_2(monkeypatch, capsys):
    cli = pytest.importorskip("iosim.cli.main")
    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(is_available=lambda: True)
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.setattr("os.path.exists", lambda path: False)
    code = cli.main(["validate", "--vendor", "torch-sdpa", *ARGS])
    assert code == 2 and "Nsight Compute" in capsys.readouterr().err


def test_vendor_takes_what_pytorchs_flash_kernels_take(monkeypatch):
    """fp16 or bf16, GQA/MQA and unequal lengths go to PyTorch (here: to a stub measuring
    nothing); fp32 and a causal mask of unequal lengths (PyTorch aligns it top-left, flash-attn
    bottom-right) are refused before anything runs."""
    from iosim.errors import ProblemError
    from iosim.gpu import sdpa

    with pytest.raises(ProblemError, match="fp16 or bf16"):
        validate.run(parse(*ARGS, "--vendor", "torch-sdpa", "--dtype", "fp32"))
    with pytest.raises(ProblemError, match="top-left"):
        validate.run(parse("--hw", "h200", "--head-dim", "64", "--seq-len-q", "128", "--seq-len-kv", "256",
                           "--causal", "--vendor", "torch-sdpa"))
    asked = []
    monkeypatch.setattr(sdpa, "require_torch", lambda: None)
    monkeypatch.setattr(sdpa, "measure", lambda problem, seed=0: asked.append(sdpa.config_of(problem)) or [])
    argv = ("--hw", "h200", "--head-dim", "64", "--seq-len-q", "16", "--seq-len-kv", "4096", "--heads", "8",
            "--kv-heads", "2", "--dtype", "bf16", "--vendor", "torch-sdpa")
    assert validate.run(parse(*argv)) == 0
    assert asked == [{"seq_len": 16, "head_dim": 64, "batch": 1, "heads": 8, "causal": False, "seq_len_q": 16,
                      "seq_len_kv": 4096, "kv_heads": 2, "dtype": "bf16"}]
    from iosim import Problem
    assert sdpa.problem_of(asked[0]) == Problem(seq_len_q=16, seq_len_kv=4096, head_dim=64, heads=8, kv_heads=2,
                                                dtype="bf16")
