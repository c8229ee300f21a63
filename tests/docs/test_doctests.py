"""Every example in the package's docstrings runs and prints what it says."""

import doctest
import importlib
import pkgutil

import pytest

import iosim

MODULES = sorted(m.name for m in pkgutil.walk_packages(iosim.__path__, "iosim.")
                 if not m.name.endswith("__main__") and ".gpu." not in m.name)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
