"""The package's shape, checked from its source: stages import only the stages below them,
no cycles, no model below the run stage, no module over 400 lines, no function over 60, no
two modules with one name, and only the four shared modules at the top."""

import ast
import os
from collections import Counter

import networkx as nx
import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "iosim")

#: the pipeline, bottom to top: a module may import its own stage and the stages before it
STAGES = ["errors", "dtypes", "hardware", "workload", "engine", "schedules", "kernels", "models", "run", "studies",
          "report", ("gpu", "grading"), "cli", ("__init__", "__main__")]
LEVEL = {name: i for i, s in enumerate(STAGES) for name in (s if isinstance(s, tuple) else (s,))}
LEVEL["errors"] = LEVEL["dtypes"] = 0


def _modules() -> dict[str, str]:
    """dotted module name -> path, for every module of the package."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                dotted = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].replace(os.sep, ".")
                out[dotted.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _imports(module: str, path: str) -> set[str]:
    """The iosim modules ``module`` imports (anywhere in the file, TYPE_CHECKING included)."""
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:  # "from . import x" imports a module when x is one
                found.add(f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target)
    return {m for m in found if m.split(".")[0] == "iosim"}


GRAPH = nx.DiGraph((m, t) for m, p in MODULES.items() for t in _imports(m, p) if t != m)


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_stages_import_only_stages_below():
    wrong = [(a, b) for a, b in GRAPH.edges if LEVEL[_stage(b)] > LEVEL[_stage(a)]]
    assert not wrong, f"imports against the pipeline: {wrong}"


def test_no_import_cycles():
    assert list(nx.simple_cycles(GRAPH)) == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _stage(m) == "engine") + ["iosim.run.result"])
def test_no_model_below_the_models(module):
    assert not [t for t in GRAPH.successors(module) if _stage(t) == "models"] if module in GRAPH else True


def test_only_the_shared_modules_at_the_top():
    top = {m.split(".")[1] for m in MODULES if m.count(".") == 1 and not os.path.isdir(os.path.join(PACKAGE, m.split(".")[1]))}
    assert top == {"__main__", "errors", "dtypes"}


def test_no_two_modules_share_a_name():
    names = Counter(m.rsplit(".", 1)[1] for m, p in MODULES.items() if not p.endswith("__init__.py"))
    packages = {m.rsplit(".", 1)[-1] for m, p in MODULES.items() if p.endswith("__init__.py")}
    assert [n for n, c in names.items() if c > 1 or n in packages] == []


def test_no_package_hides_a_module_behind_a_name():
    # ``from .replay import replay`` in a package's __init__ makes ``import pkg.replay`` give
    # the function, not the module: monkeypatching and doc references then miss silently
    hidden = []
    for m, p in MODULES.items():
        if p.endswith("__init__.py"):
            exported = {n.asname or n.name for node in ast.walk(ast.parse(open(p).read()))
                        if isinstance(node, ast.ImportFrom) for n in node.names}
            hidden += [f"{m}.{n}" for n in exported if f"{m}.{n}" in MODULES]
    assert hidden == []


def test_no_module_over_400_lines():
    assert {m: n for m, p in MODULES.items() if (n := open(p).read().count("\n")) > 400} == {}


def test_no_function_over_60_lines():
    long = {}
    for m, p in MODULES.items():
        for node in ast.walk(ast.parse(open(p).read())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 60:
                long[f"{m}.{node.name}"] = node.end_lineno - node.lineno + 1
    assert long == {}


def _scripts() -> list[str]:
    """Every .py of benchmarks/ and examples/ (the scripts users read beside the package)."""
    root = os.path.dirname(PACKAGE)
    return [os.path.join(folder, f) for top in ("benchmarks", "examples")
            for folder, _, files in os.walk(os.path.join(root, top)) for f in files if f.endswith(".py")]


def test_scripts_keep_the_same_sizes():
    """benchmarks/ and examples/ keep the package's limits: modules ≤ 400 lines, functions ≤ 60."""
    over = {}
    for p in _scripts():
        src = open(p).read()
        if src.count("\n") > 400:
            over[p] = src.count("\n")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 60:
                over[f"{p}:{node.name}"] = node.end_lineno - node.lineno + 1
    assert len(_scripts()) > 50 and over == {}
