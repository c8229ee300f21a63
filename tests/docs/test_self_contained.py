"""The project is self-contained: nothing it ships points outside the repository.

A user who clones or pip-installs iosim has only its own files, so

* no tracked file may refer to a path outside the repository — the outside drafts the
  spec and the hardware figures were once compiled in (the spec now lives in
  docs/spec/, the hardware sources in docs/sources.md);
* every relative Markdown link in README.md and docs/**/*.md resolves to a file or
  directory inside the repository;
* every source key a hardware profile cites is defined, with its public original, in
  docs/sources.md, and every repository path a profile cites exists.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = ROOT / "docs" / "sources.md"
PROFILES = sorted((ROOT / "hardware_profiles").glob("*.yaml"))

# Built from pieces so that this file does not match itself.
OUTSIDE = re.compile("|".join([
    re.escape("../" + "shared"),
    re.escape("shared" + "/reference"),
    re.escape("fa-io" + "-spec"),
    re.escape("gpu-" + "hardware.md"),
]))

SKIP_DIRS = {".git", ".venv", "venv", "build", "dist", "__pycache__", ".pytest_cache",
             ".mypy_cache", ".ruff_cache", "node_modules", ".tox"}


def tracked_files() -> list[pathlib.Path]:
    """The files git tracks; without git (an sdist, an unpacked archive), the tree."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True, timeout=60).stdout
        names = [n for n in out.decode("utf-8", "surrogateescape").split("\0") if n]
        if names:
            return [ROOT / n for n in names]
    except (OSError, subprocess.SubprocessError):
        pass
    files = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        files += [pathlib.Path(folder) / n for n in names]
    return files


def text_of(path: pathlib.Path) -> str | None:
    """The file's text, or None for a binary file (a NUL byte) or one that is gone."""
    try:
        data = path.read_bytes()
    except OSError:  # deleted in the work tree but still in the index
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def outside_references(files, root: pathlib.Path = ROOT) -> list[str]:
    """"file:line: text" of every line of ``files`` that names a path outside the repository."""
    found = []
    for path in files:
        text = text_of(path)
        if text is None or not OUTSIDE.search(text):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()[:160]}")
    return found


def test_no_reference_outside_the_repository():
    found = outside_references(tracked_files())
    assert not found, ("references to files outside the repository (cite docs/spec/ or "
                       "docs/sources.md instead):\n" + "\n".join(found))


def test_a_planted_reference_is_reported(tmp_path):
    """The check above can fail: each outside path is reported with its file and line."""
    planted = tmp_path / "planted.md"
    lines = ["fine", "see ../" + "shared/x", "shared" + "/reference/a.md", "fa-io" + "-spec §3.2",
             "gpu-" + "hardware.md key A100-WP", "docs/spec/algorithms.md §3.1 is fine"]
    planted.write_text("\n".join(lines) + "\n")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\0" + ("fa-io" + "-spec").encode())
    found = outside_references([planted, tmp_path / "image.png"], root=tmp_path)
    assert found == [f"planted.md:{n}: {lines[n - 1]}" for n in (2, 3, 4, 5)]


def test_without_git_the_tree_is_walked(monkeypatch):
    """An unpacked sdist has no .git: the scan walks the tree, skipping build outputs."""
    def no_git(*args, **kwargs):
        raise OSError("git is not installed")

    monkeypatch.setattr(subprocess, "run", no_git)
    files = {path.relative_to(ROOT).as_posix() for path in tracked_files()}
    assert {"README.md", "docs/spec/README.md", "docs/sources.md"} <= files
    assert not any(f.startswith(".git/") or ".egg-info/" in f or "__pycache__/" in f for f in files)


# -- Markdown links --------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"`+[^`]*`+")
EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//|#)")  # http:, mailto:, //host, #anchor


def markdown_pages() -> list[pathlib.Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def relative_links(page: pathlib.Path):
    """(line number, target) of each relative link outside code blocks and code spans."""
    in_fence = False
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            target = match.group(1)
            if not EXTERNAL.match(target):
                yield number, target


def broken_links(pages, root: pathlib.Path = ROOT) -> list[str]:
    broken = []
    for page in pages:
        for number, target in relative_links(page):
            path = target.split("#", 1)[0].split("?", 1)[0]
            if not path:
                continue
            base = root if path.startswith("/") else page.parent
            resolved = (base / path.lstrip("/")).resolve()
            inside = resolved == root or root in resolved.parents
            if not inside or not resolved.exists():
                broken.append(f"{page.relative_to(root)}:{number}: ({target})"
                              + ("" if inside else " leaves the repository"))
    return broken


def test_markdown_links_resolve_inside_the_repository():
    pages = markdown_pages()
    assert ROOT / "docs" / "spec" / "README.md" in pages
    broken = broken_links(pages)
    assert not broken, "relative links that do not resolve to a file in the repository:\n" + "\n".join(broken)


def test_a_broken_link_is_reported(tmp_path):
    """The link check can fail: a link to a missing file, or out of the repository."""
    root = tmp_path / "repo"
    (root / "docs" / "spec").mkdir(parents=True)
    (root / "docs" / "spec" / "README.md").write_text("x")
    page = root / "docs" / "page.md"
    page.write_text("ok [spec](spec/README.md), [root](/docs/spec/), [web](https://x.org/a.md), [top](#a)\n"
                    "```\n[in a fence](nowhere.md)\n```\n"
                    "bad [x](missing.md#a) and `[code](nowhere.md)` and [out](../../outside.md)\n")
    (tmp_path / "outside.md").write_text("x")
    assert broken_links([page], root=root.resolve()) == [
        "docs/page.md:5: (missing.md#a)", "docs/page.md:5: (../../outside.md) leaves the repository"]


# -- Hardware profile sources ----------------------------------------------------------

KEY_ROW = re.compile(r"^\|\s*([A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*)\s*\|(.*)\|\s*$")
# A key-shaped word: capitalised, hyphenated (A100-WP, CUDA-PG, CC-H100, ROCm-SPECS).
KEY_SHAPED = re.compile(r"(?<![\w/.-])[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+(?![\w-])")
REPO_PATH = re.compile(r"\b(?:docs|benchmarks|hardware_profiles|iosim)/[\w./-]*\w")


def defined_keys() -> dict[str, str]:
    """Source key -> its row, from the "Source keys" table of docs/sources.md."""
    text = SOURCES.read_text()
    section = text.split("## Source keys", 1)[1].split("\n## ", 1)[0]
    keys = {}
    for line in section.splitlines():
        match = KEY_ROW.match(line)
        if match and match.group(1) != "key":
            keys[match.group(1)] = match.group(2)
    return keys


def profile_sources() -> list[tuple[str, str]]:
    """(file: field path, source string) of every quantity in every profile."""
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "source" and isinstance(value, str):
                    found.append((where, value))
                else:
                    walk(value, f"{where}{'' if where.endswith(':') else '.'}{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}[{index}]")

    for path in PROFILES:
        walk(yaml.safe_load(path.read_text()), path.name + ":")
    return found


def source_problems(sources, keys) -> list[str]:
    problems = []
    for where, text in sources:
        cited = {k for k in keys if re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", text)}
        for word in KEY_SHAPED.findall(text):
            if word not in keys:
                problems.append(f"{where} cites {word!r}, which docs/sources.md does not define")
        paths = REPO_PATH.findall(text)
        for path in paths:
            if not (ROOT / path).exists():
                problems.append(f"{where} cites {path}, which is not in the repository")
        if not cited and not paths and "illustrative" not in text:
            problems.append(f"{where} names no source key of docs/sources.md and no file: {text[:80]!r}")
    return problems


def test_every_profile_source_key_is_defined():
    keys = defined_keys()
    assert {"A100-WP", "CUDA-PG", "H100-WP", "CDNA3-WP", "GPUB", "FA1"} <= set(keys)
    for key, row in keys.items():
        assert len(row.strip(" |")) > 40, f"docs/sources.md: key {key} has no source"
    sources = profile_sources()
    assert len(sources) > 100
    problems = source_problems(sources, keys)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("text,expected", [
    ("NEW-WP: 5 TB/s; peak (vendor)", "cites 'NEW-WP', which docs/sources.md does not define"),
    ("measured: docs/validation/no-such-run/rates.json", "cites docs/validation/no-such-run/rates.json"),
    ("a vendor said so", "names no source key"),
])
def test_an_undefined_source_is_reported(text, expected):
    problems = source_problems([("x.yaml: clock", text)], defined_keys())
    assert any(expected in problem for problem in problems), problems
