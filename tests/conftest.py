"""Fixtures, and helpers the test files import (``from conftest import ...``)."""

import importlib.util

import pytest

from iosim import load_profile
from iosim.cli.main import main

#: a small grid for the bounds checks: quick, and enough points to fit the exponents
SMALL = {"seq_lens": [512, 1024, 2048, 4096], "head_dims": [32, 64], "jobs": 1}


def run(capsys, *argv):
    """``iosim ARGV...`` in this process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def load_module(name, path):
    """The Python file at ``path``, imported as a module called ``name`` (not in sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def paper_a100():
    """The FlashAttention paper's illustrative A100 (M = 98,304 fp16 elements)."""
    return load_profile("fa-paper-a100")


@pytest.fixture(scope="session")
def h100():
    return load_profile("h100-sxm")
