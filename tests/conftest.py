"""Fixtures, and helpers the test files import (``from conftest import ...``).

The tests sit in folders by kind (counts/, invariants/, numeric/, golden/, cli/, gpu/, docs/);
this file's fixtures apply to all of them, and the helper modules next to it (this one and
closed_forms.py) are imported by their plain names from every folder: this folder is put on
sys.path here, whatever --import-mode or folder pytest is run with.
"""

import importlib.util
import pathlib
import sys

import pytest

from iosim import load_profile
from iosim.cli.main import main

TESTS = str(pathlib.Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

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
