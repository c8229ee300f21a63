"""Read an assignment's folder: its ``assignment.yaml``, checked field by field, into a spec.

The format is documented in docs/grading.md ("Adding an assignment"); the built-in
assignments (``examples/assignments/*/assignment.yaml``) use it too. The YAML is read with
``yaml.safe_load`` (a duplicate key is refused too: PyYAML would keep the last one silently),
then every field is checked; the first problem is a :class:`~.specs.ManifestError` of one
line naming the file and the field (``…/assignment.yaml: cases[2].problem.seq_len: expected
a positive whole number, got the string 'abc'``), which the command line reports with exit
code 2.

What a manifest cannot do is weaken the grade: a schedule assignment runs every adversarial
pattern of :data:`~.patterns.PATTERNS` at least once (the manifest chooses their shapes, not
whether they run), compares O with the reference, and every check still runs and decides
pass or fail (weights only share out the score).

A reference given as ``FILE.py:FUNCTION`` is loaded here, in the grader's process, from
inside the folder; it is never sent to the student's process nor exported in the student
pack, and it is run once per input in count mode before the manifest is accepted, so a
broken reference is the instructor's error (exit 2), never a student's failing grade.
"""

from __future__ import annotations

import importlib.util
import pathlib
import re

import yaml

from ..hardware import list_profiles, load_profile
from ..hardware.fields import describe
from ..hardware.limits import InputRefused, excerpt, one_line, read_bounded
from ..run import choose_blocks, simulate
from ..schedules.registry import SCHEDULES
from ..studies.schedule_files import exit_call
from ..workload.problem import sram_elements
from .manifest_fields import Fields, problem_of
from .patterns import PATTERNS
from .specs import (BLOCKS_BAND, BLOCKS_CHECKS, SCHEDULE_CHECKS, BlocksAssignment, Case, GradingInputError,
                    ManifestError, ScheduleAssignment, Source)

#: the manifest's file name in an assignment's folder
MANIFEST = "assignment.yaml"
SCHEMA_VERSION = 1
MAX_MANIFEST_BYTES = 256 << 10
#: the most inputs a schedule assignment runs, and the most cases of a blocks assignment
MAX_INPUTS = 64
MAX_BLOCKS_CASES = 16
KINDS = ("schedule", "blocks")
#: what the float64 reference computes (assignments.reference_outputs)
OUTPUTS = ("O", "l", "m", "L")
_COMMON = ("schema_version", "name", "kind", "function", "title", "reference", "cases", "student")
_COMMON_OPTIONAL = ("weights", "hints", "answer", "instructor")
_BY_KIND = {"schedule": (("hw", "outputs"), ("reference_title",)),
            "blocks": ((), ("band",))}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


# -- reading -------------------------------------------------------------------------------------
def manifest_path(path) -> pathlib.Path:
    """The manifest a path names: ``FOLDER/assignment.yaml``, or the file itself; a path that
    names neither is :class:`~.specs.GradingInputError` (no manifest to blame yet)."""
    path = pathlib.Path(path)
    if path.is_dir():
        if not (path / MANIFEST).is_file():
            raise GradingInputError(f"{path}: no {MANIFEST} in this folder (an assignment's folder holds its "
                                    "manifest)", field="assignment")
        return path / MANIFEST
    if path.is_file():
        return path
    what = "no such folder or file" if not path.exists() else "not a folder or a file"
    raise GradingInputError(f"{path}: {what} (an assignment is a built-in name or a folder with its {MANIFEST})",
                            field="assignment")


def _duplicate_key(node, where: str = "", visited: set | None = None) -> str | None:
    """The field path of the first key written twice in a mapping of the composed YAML, if any
    (each node once: an alias is the node it names, not a copy)."""
    visited = set() if visited is None else visited
    if id(node) in visited:
        return None
    visited.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen = set()
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else "?"
            if name in seen:
                return f"{where}.{name}" if where else name
            seen.add(name)
            found = _duplicate_key(value, f"{where}.{name}" if where else name, visited)
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for k, item in enumerate(node.value):
            found = _duplicate_key(item, f"{where}[{k}]", visited)
            if found:
                return found
    return None


def _parse(manifest: pathlib.Path) -> dict:
    try:
        text = read_bounded(manifest, MAX_MANIFEST_BYTES).decode("utf-8")
    except InputRefused as exc:
        raise ManifestError(f"{manifest}: {exc}") from None
    except UnicodeDecodeError:
        raise ManifestError(f"{manifest}: not UTF-8 text") from None
    try:
        data = yaml.safe_load(text)
        duplicate = _duplicate_key(yaml.compose(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        what = getattr(exc, "problem", None) or str(exc)
        raise ManifestError(one_line(f"{manifest}: {where}not valid YAML: {what}", 300)) from None
    except RecursionError:
        raise ManifestError(f"{manifest}: not valid YAML: nested too deeply") from None
    if duplicate:
        raise ManifestError(f"{manifest}: {duplicate}: written twice (YAML would keep only the last one)")
    if not isinstance(data, dict):
        raise ManifestError(f"{manifest}: expected a mapping of the manifest's fields, got {describe(data)}")
    return data


def load_assignment_folder(path, *, builtin: bool = False):
    """The spec of the assignment in ``path`` (its folder, or its manifest file); a problem
    with it is a one-line :class:`~.specs.ManifestError`."""
    manifest = manifest_path(path)
    data = _parse(manifest)
    f = Fields(manifest)
    kind = data.get("kind")
    if "kind" in data and kind not in KINDS:
        f.fail("kind", f"unknown kind {excerpt(kind)}; expected one of {', '.join(KINDS)}")
    required, optional = _BY_KIND.get(kind, ((), ()))
    f.keys(data, "", _COMMON + required, _COMMON_OPTIONAL + optional)
    f.integer(data, "schema_version", "", lowest=1)
    if data["schema_version"] != SCHEMA_VERSION:
        f.fail("schema_version", f"this iosim reads version {SCHEMA_VERSION}, got {data['schema_version']}")
    name = f.string(data, "name", "")
    if not _NAME.fullmatch(name):
        f.fail("name", f"{excerpt(name)} is not a name: letters, digits, '.', '_', '-', at most 64")
    directory = manifest.parent
    private = _instructor_files(f, data, directory)
    build = _schedule if kind == "schedule" else _blocks
    return build(f, data, directory, private, builtin)


def _source(f: Fields, data: dict, directory: pathlib.Path, private: tuple, builtin: bool) -> Source:
    student = f.files(data, "student", directory)
    manifest_name = f.manifest.name
    for rel in student:
        if rel == manifest_name or rel in private:
            f.fail("student", f"{rel!r} is the manifest, the reference or an instructor's file: a student never "
                              "gets it")
    readme = next((r for r in student if pathlib.PurePath(r).name.lower().startswith("readme")), None)
    shown = "" if builtin else str(directory / readme) if readme else str(f.manifest)
    return Source(directory, f.manifest, student, private, shown, builtin)


def _instructor_files(f: Fields, data: dict, directory: pathlib.Path) -> tuple:
    return f.files(data, "instructor", directory, empty=True) if "instructor" in data else ()


def _common(f: Fields, data: dict, kind_checks: tuple) -> dict:
    """The fields both kinds share (name, function, title, answer, weights), checked."""
    function = f.string(data, "function", "")
    if not function.isidentifier():
        f.fail("function", f"{excerpt(function)} is not a Python function name")
    answer, prompt = None, ""
    if "answer" in data:
        f.keys(data["answer"], "answer", ("variable", "prompt"), ())
        answer = f.string(data["answer"], "variable", "answer")
        if not answer.isidentifier():
            f.fail("answer.variable", f"{excerpt(answer)} is not a Python variable name")
        prompt = f.string(data["answer"], "prompt", "answer")
    hints = {}
    if "hints" in data:
        f.keys(data["hints"], "hints", (), ("io",))
        hints = {k: f.string(data["hints"], k, "hints") for k in data["hints"]}
    return {"name": data["name"], "function": function, "title": f.string(data, "title", ""), "answer": answer,
            "answer_prompt": prompt, "weights": _weights(f, data, kind_checks), "hints": hints}


def _weights(f: Fields, data: dict, checks: tuple) -> tuple:
    """(check, weight) for every scored check of the kind; a check left out weighs 1."""
    given = data.get("weights", {})
    if "weights" in data:
        f.keys(given, "weights", (), checks)
    weights = []
    for check in checks:
        weights.append((check, f.number(given, check, "weights", lowest=0, highest=1000) if check in given else 1))
    if not sum(w for _, w in weights) > 0:
        f.fail("weights", "every weight is 0: the score would have nothing to count")
    return tuple(weights)


# -- schedule assignments --------------------------------------------------------------------------
def _schedule(f: Fields, data: dict, directory: pathlib.Path, private: tuple, builtin: bool) -> ScheduleAssignment:
    common = _common(f, data, SCHEDULE_CHECKS)
    hw = f.string(data, "hw", "")
    if hw not in list_profiles():
        f.fail("hw", f"no built-in profile {excerpt(hw)}; one of {', '.join(list_profiles())}")
    outputs = _outputs(f, data)
    cases = _schedule_cases(f, data["cases"])
    if "io" not in common["hints"]:
        f.fail("hints.io", "missing: a schedule assignment's io check explains the reference's traffic in a hint")
    reference, title, private = _reference(f, data, directory, private)
    if "reference_title" in data:
        title = f.string(data, "reference_title", "")
    source = _source(f, data, directory, private, builtin)
    spec = ScheduleAssignment(
        name=common["name"], function=common["function"], title=common["title"], folder=directory.name,
        algorithm=reference, algorithm_title=title, hw=hw, outputs=outputs, cases=cases,
        io_hint=common["hints"]["io"], answer=common["answer"], answer_prompt=common["answer_prompt"],
        weights=common["weights"], source=source)
    if not builtin:
        _try_reference(f, spec)
    return spec


def _outputs(f: Fields, data: dict) -> tuple:
    outputs = f.string_list(data, "outputs", "")
    for k, name in enumerate(outputs):
        if name not in OUTPUTS:
            f.fail(f"outputs[{k}]", f"unknown output {excerpt(name)}; the reference computes {', '.join(OUTPUTS)}")
    if len(set(outputs)) != len(outputs):
        f.fail("outputs", "an output is listed twice")
    if "O" not in outputs:
        f.fail("outputs", "O is not listed: every schedule assignment checks the output O")
    return tuple(outputs)


def _schedule_cases(f: Fields, cases) -> tuple:
    """The inputs, in the report's order; each ``pattern`` at least once, at least one random one."""
    f.nonempty_list(cases, "cases")
    out = []
    for k, case in enumerate(cases):
        where = f"cases[{k}]"
        f.keys(case, where, ("name", "problem"), ("pattern", "purpose", "score_scale", "count"))
        name = f.string(case, "name", where)
        problem = problem_of(f, case["problem"], f"{where}.problem")
        kind = case.get("pattern", "random")
        if kind != "random" and kind not in PATTERNS:
            f.fail(f"{where}.pattern", f"unknown pattern {excerpt(kind)}; random or one of {', '.join(PATTERNS)}")
        if kind != "random" and ("score_scale" in case or "count" in case):
            f.fail(where, "score_scale and count are for random inputs (an adversarial pattern sets its own scores)")
        scale = f.number(case, "score_scale", where, lowest=1e-3, highest=1e3) if "score_scale" in case else 1.0
        count = f.integer(case, "count", where, lowest=1, highest=MAX_INPUTS) if "count" in case else 1
        purpose = f.string(case, "purpose", where, empty=True) if "purpose" in case else ""
        names = [name] if count == 1 else [f"{name} ({n} of {count})" for n in range(1, count + 1)]
        out += [Case(each, problem, float(scale) if scale != 1.0 else 1.0, kind, purpose) for each in names]
        if len(out) > MAX_INPUTS:
            f.fail("cases", f"more than {MAX_INPUTS} inputs")
    seen = set()
    for case in out:
        if case.name in seen:
            f.fail("cases", f"two inputs are named {case.name!r}")
        seen.add(case.name)
    missing = [p for p in PATTERNS if p not in {c.kind for c in out}]
    if missing:
        f.fail("cases", f"no input with pattern {', '.join(missing)}: every schedule assignment runs each adversarial "
                        f"pattern ({', '.join(PATTERNS)}) at least once; the manifest chooses their shapes")
    if not any(c.kind == "random" for c in out):
        f.fail("cases", "no random input: every schedule assignment runs at least one")
    return tuple(out)


def _reference(f: Fields, data: dict, directory: pathlib.Path, private: tuple) -> tuple:
    """(the reference: a built-in schedule's name or the function of FILE.py:FUNCTION, its
    default title, the private files with the reference's added)."""
    text = f.string(data, "reference", "")
    if ":" not in text:
        if text not in SCHEDULES:
            f.fail("reference", f"no built-in schedule {excerpt(text)}; one of {', '.join(SCHEDULES)}, or "
                                "FILE.py:FUNCTION for a schedule in the assignment's folder")
        return text, f"the built-in {text} schedule", private
    file, _, function = text.rpartition(":")
    rel = f.inside(file, "reference", directory)
    path = directory / rel
    if not path.is_file():
        f.fail("reference", f"no file {rel!r} in the assignment's folder {directory}")
    if not function.isidentifier():
        f.fail("reference", f"{excerpt(function)} is not a Python function name (FILE.py:FUNCTION)")
    module_spec = importlib.util.spec_from_file_location(f"_iosim_reference_{abs(hash(str(path)))}", path)
    try:
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    except SystemExit as exc:   # sys.exit() in the file: a refusal to report, not the grader's exit
        f.fail("reference", f"{rel} exited ({exit_call(exc)}) while being imported")
    except Exception as exc:  # noqa: BLE001 — the instructor's file, reported on one line
        f.fail("reference", f"loading {rel} raised {type(exc).__name__}: {exc}")
    schedule = getattr(module, function, None)
    if not callable(schedule):
        f.fail("reference", f"{rel} defines no function {function}")
    return schedule, "the reference schedule", private + (rel,)


def _try_reference(f: Fields, spec: ScheduleAssignment) -> None:
    """Run the reference once per input (count mode, the blocks the grader will use): a
    reference that fails, or a shape that does not fit the GPU, is the manifest's problem."""
    profile = load_profile(spec.hw)
    for case in spec.cases:
        try:
            blocks, _ = choose_blocks(case.problem, sram_elements(profile.scratchpad.per_block_bytes,
                                                                 case.problem.dtype))
            simulate(profile, spec.algorithm, case.problem, blocks=blocks)
        except Exception as exc:  # noqa: BLE001 — the instructor's schedule or shape, on one line
            f.fail("reference", f"the reference schedule fails on input {case.name!r} ({profile.name}): "
                                f"{type(exc).__name__}: {exc}")


# -- choosing blocks ----------------------------------------------------------------------------
def _blocks(f: Fields, data: dict, directory: pathlib.Path, private: tuple, builtin: bool) -> BlocksAssignment:
    common = _common(f, data, BLOCKS_CHECKS)
    reference = f.string(data, "reference", "")
    if reference not in SCHEDULES:
        f.fail("reference", f"no built-in schedule {excerpt(reference)}; a blocks assignment compares with "
                            f"`iosim explore` on a built-in one: {', '.join(SCHEDULES)}")
    band = f.number(data, "band", "", lowest=0, highest=10) if "band" in data else BLOCKS_BAND
    f.nonempty_list(data["cases"], "cases")
    if len(data["cases"]) > MAX_BLOCKS_CASES:
        f.fail("cases", f"more than {MAX_BLOCKS_CASES} cases")
    cases, profiles = [], list_profiles()
    for k, case in enumerate(data["cases"]):
        where = f"cases[{k}]"
        f.keys(case, where, ("hw", "problem"), ())
        hw = f.string(case, "hw", where)
        if hw not in profiles:
            f.fail(f"{where}.hw", f"no built-in profile {excerpt(hw)} (the student's function is given the "
                                  f"name); one of {', '.join(profiles)}")
        cases.append((hw, problem_of(f, case["problem"], f"{where}.problem")))
    return BlocksAssignment(
        name=common["name"], function=common["function"], title=common["title"], folder=directory.name,
        algorithm=reference, cases=tuple(cases), band=float(band), answer=common["answer"],
        answer_prompt=common["answer_prompt"], io_hint=common["hints"].get("io", ""), weights=common["weights"],
        source=_source(f, data, directory, private, builtin))
