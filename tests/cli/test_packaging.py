"""`pip install .` ships every subpackage and the YAML profiles."""

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")


def test_every_subpackage_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    on_disk = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for path in (ROOT / "iosim").rglob("__init__.py")
    }
    assert on_disk <= listed, f"add to pyproject's packages: {sorted(on_disk - listed)}"
    assert config["package-dir"]["iosim.hardware_profiles"] == "hardware_profiles"
    assert "*.yaml" in config["package-data"]["iosim.hardware_profiles"]
    assert "*.json" in config["package-data"]["iosim.kernels"]     # the triton-fa2 preset's measured steps


def test_builtin_profiles_are_found():
    from iosim import list_profiles

    assert {"a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "mi300x", "fa-paper-a100", "toy"} <= set(list_profiles())


def test_version_and_typing_marker(capsys):
    """`iosim --version` prints the package's version (exit 0), and the package ships
    py.typed (PEP 561), so type checkers read its annotations."""
    import iosim
    from iosim.cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"iosim {iosim.__version__}"
    assert (pathlib.Path(iosim.__file__).parent / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["iosim"]
    assert config["project"]["optional-dependencies"]["gpu"] == ["cupy-cuda13x"]


def test_the_public_api_is_exported_lazily():
    """Every name of iosim.__all__ is there, imported on first use: `import iosim` loads no
    stage (and no numpy) until a name is asked for."""
    import subprocess

    code = ("import sys, iosim; before = {m for m in sys.modules if m.startswith(('iosim.', 'numpy'))}; "
            "[getattr(iosim, n) for n in iosim.__all__]; print(sorted(before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "['iosim.errors']"
    import iosim
    for name in ("check_bounds", "explore", "plot_bounds", "plot_explore", "grade", "simulate"):
        assert callable(getattr(iosim, name)) and name in iosim.__all__ and name in dir(iosim)
