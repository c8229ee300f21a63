"""Assignments are data (issue 15): a folder with a manifest (assignment.yaml), graded with
`iosim grade FILE --assignment FOLDER` without a change to iosim; the built-in ones are
folders of the same format; `iosim assignment export` writes only the student's files; a bad
manifest is one line naming the file and the field, exit 2."""

import json
import math
import pathlib
import re
import shutil
import sys

import pytest
import yaml

from iosim import Problem
from iosim.cli.main import main
from iosim.grading import grade
from iosim.grading.assignments import ASSIGNMENTS, BUILTIN_FOLDERS, builtin_root
from iosim.grading.manifest import load_assignment_folder
from iosim.grading.specs import BlocksAssignment, Case, ManifestError, ScheduleAssignment

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "assignments"
INSTRUCTOR = EXAMPLES / "instructor"
SOLUTION = INSTRUCTOR / "fa2_solution.py"
tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")


# -- the built-in assignments, from their manifests -----------------------------------------------
def _todays_cases() -> tuple:
    """The eleven inputs fa1 and fa2 were graded on when they were written in iosim's source, and the
    twelfth (session 36), long enough that a row of scores or every query block's O, l, m does not fit
    on chip (a red-team pass's two-pass row and FA1 kept on chip passed without it)."""
    d = 32
    square = Problem(seq_len=128, head_dim=d, heads=2)
    ragged = Problem(seq_len=100, head_dim=d)
    causal = Problem(seq_len=128, head_dim=d, causal=True)
    causal_ragged = Problem(seq_len_q=70, seq_len_kv=100, head_dim=d, causal=True)
    return (
        Case("square N=128, 2 heads", square, purpose="the plain case: random scores of a few units"),
        Case("ragged N=100", ragged, purpose="N not a multiple of the blocks: the last block has 4 rows"),
        Case("causal N=128", causal, purpose="the causal mask; blocks above the diagonal are skipped"),
        Case("causal ragged N_q=70, N_kv=100", causal_ragged,
             purpose="the causal mask aligned bottom-right, N_q ≠ N_kv, ragged key blocks"),
        Case("long rows N=1024", Problem(seq_len=1024, head_dim=d),
             purpose="a row of scores (B_r x 1,024 in fp32) or every query block's O, l, m no longer fits the "
                     "toy's registers and shared memory: only the tiled loop order, one S_ij and (FA1) one O_i at "
                     "a time, fits"),
        Case("large scores N=96 (|S| up to ~1000)", Problem(seq_len=96, head_dim=d), score_scale=20.0,
             purpose="random scores beyond e^S's range: exponentiating without the running maximum overflows"),
        Case("max in the last key block (|S| ≈ 1e4)", square, kind="max_last",
             purpose="rows peak in the last key block, 6e3-2e4 above the first block's maximum (head 0; head 1 "
                     "either way): a shift frozen at the first block's max (+500) overflows"),
        Case("max in a middle key block (|S| ≈ 1e4)", square, kind="max_middle",
             purpose="rows peak in key block 1 (head 0) or 2 (head 1), 6e3-2e4 above the other blocks: a shift "
                     "corrected only at the last block has already overflowed"),
        Case("rising scores, ragged N=100 (|S| ≈ 1e4)", ragged, kind="ramp",
             purpose="the maximum grows at every key block (by ~2000-6500 between full blocks) and ends in the "
                     "ragged 4-key block (or sits at key 0): every block must rescale"),
        Case("ties and constant rows (|S| ≈ 1e4)", square, kind="ties",
             purpose="exactly equal maxima in the second and the last key block, far above the first (head 0); "
                     "rows constant at 0, +1e4 or −1e4 (head 1)"),
        Case("causal, one visible key in the first row (|S| ≈ 1e4)", causal, kind="ramp",
             purpose="row 0 sees only key 0 (a score of ±3e3 to ±1e4); each row's maximum at its last visible key, "
                     "on the diagonal block, or at key 0"),
        Case("causal ragged N_q=70, N_kv=100 (|S| ≈ 1e4)", causal_ragged, kind="ramp",
             purpose="bottom-right causal mask with the maximum at each row's last visible key, the ragged block "
                     "included, far above the first block's"),
    )


TODAY = {
    "fa1": ScheduleAssignment(
        name="fa1", function="fa1_forward", folder="fa1-forward",
        title="FlashAttention forward pass (Dao et al. 2022, Algorithm 1)",
        algorithm="fa1", algorithm_title="FlashAttention Algorithm 1", hw="toy", outputs=("O", "l", "m"),
        cases=_todays_cases(),
        io_hint=("Algorithm 1 loads K_j, V_j once per key block (outer loop) and, for every active (j, i), loads "
                 "Q_i, O_i, ℓ_i, m_i and writes O_i, ℓ_i, m_i back; causal runs visit only the query blocks "
                 "ctx.q_blocks(visible_to=j) returns.")),
    "fa2": ScheduleAssignment(
        name="fa2", function="fa2_forward", folder="fa2-forward",
        title="FlashAttention-2 forward pass (Dao 2023, Algorithm 1)",
        algorithm="fa2", algorithm_title="FlashAttention-2 Algorithm 1", hw="toy", outputs=("O", "L"),
        cases=_todays_cases(),
        io_hint=("FlashAttention-2 loads Q_i once per query block, K_j and V_j once per active (i, j), and writes "
                 "O_i and L_i once per query block; O_i, ℓ_i, m_i stay on chip (ctx.fill before the inner loop, "
                 "ctx.keep inside it)."),
        answer="WHY_TRAFFIC_DIFFERS", answer_prompt="two sentences on why FA2's HBM traffic differs from FA1's"),
    "blocks": BlocksAssignment(
        name="blocks", function="choose_blocks", folder="choose-blocks",
        title="Choose FlashAttention-2's block sizes for a GPU and a shape", algorithm="fa2",
        cases=(("h100-sxm", Problem(seq_len=8192, head_dim=128)), ("a100-40gb", Problem(seq_len=2048, head_dim=128)),
               ("toy", Problem(seq_len=1024, head_dim=32))),
        band=0.10, answer="JUSTIFICATION",
        answer_prompt="a justification of the choices with numbers from `iosim explore`"),
}


def test_the_builtins_load_from_their_manifests_and_equal_todays_specs():
    assert list(ASSIGNMENTS) == ["fa1", "fa2", "blocks"]
    for name, spec in ASSIGNMENTS.items():
        assert spec == TODAY[name], name
        assert spec.source.manifest == builtin_root() / spec.folder / "assignment.yaml"   # installed or not
        assert spec.source.manifest.read_bytes() == (EXAMPLES / spec.folder / "assignment.yaml").read_bytes()
        assert spec.readme == f"examples/assignments/{spec.folder}/README.md"
        assert load_assignment_folder(EXAMPLES / spec.folder) == spec
    for name in ("fa1", "fa2"):   # every adversarial input stays: six of twelve, each pattern at least once
        kinds = [c.kind for c in ASSIGNMENTS[name].cases]
        assert kinds.count("random") == 6 and {"max_last", "max_middle", "ramp", "ties"} <= set(kinds)


def test_a_builtin_is_its_manifest(tmp_path):
    """The spec comes from the file: a copy of fa2's folder with one field changed loads with
    that change and nothing else."""
    folder = tmp_path / "fa2-copy"
    shutil.copytree(EXAMPLES / "fa2-forward", folder)
    manifest = folder / "assignment.yaml"
    manifest.write_text(manifest.read_text().replace("outputs: [O, L]", "outputs: [O, L, m]"))
    spec = load_assignment_folder(folder)
    assert spec.outputs == ("O", "L", "m") and spec.folder == "fa2-copy"
    assert spec.cases == ASSIGNMENTS["fa2"].cases and spec.title == ASSIGNMENTS["fa2"].title


ASSIGNMENTS_BY_FOLDER = {spec.folder: spec for spec in ASSIGNMENTS.values()}


def test_the_builtin_folders_ship_without_the_instructor_material():
    """pip install . ships each built-in folder (package data iosim.assignments) and never instructor/."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"]["iosim.assignments"] == "examples/assignments"
    assert "iosim.assignments" in config["packages"]
    patterns = config["package-data"]["iosim.assignments"]
    assert sorted(patterns) == sorted(f"{folder}/*" for folder in BUILTIN_FOLDERS)
    with_manifest = {p.parent.name for p in EXAMPLES.glob("*/assignment.yaml")}
    assert with_manifest == set(BUILTIN_FOLDERS) and "instructor" not in with_manifest
    root = builtin_root().resolve()   # the package data when installed (CI), else the checkout's folder
    for folder in BUILTIN_FOLDERS:
        for name in ("assignment.yaml", *ASSIGNMENTS_BY_FOLDER[folder].source.student):
            assert (root / folder / name).read_bytes() == (EXAMPLES / folder / name).read_bytes(), (folder, name)
    if root != EXAMPLES.resolve():
        assert not (root / "instructor").exists()


# -- a new assignment, as a folder ---------------------------------------------------------------
def _manifest(**changes) -> dict:
    square = {"seq_len": 64, "head_dim": 16, "heads": 2}
    causal = {"seq_len_q": 50, "seq_len_kv": 90, "head_dim": 16, "causal": True}
    manifest = {
        "schema_version": 1, "name": "fa2-small", "kind": "schedule", "function": "fa2_forward",
        "title": "FlashAttention-2 at d = 16", "hw": "toy", "reference": "reference.py:my_reference",
        "outputs": ["O", "L"],
        "cases": [
            {"name": "square", "problem": square, "count": 2},
            {"name": "causal ragged", "problem": causal, "purpose": "the bottom-right mask"},
            {"name": "last", "problem": square, "pattern": "max_last"},
            {"name": "middle", "problem": {"seq_len": 200, "head_dim": 16, "heads": 2}, "pattern": "max_middle"},
            {"name": "ramp", "problem": causal, "pattern": "ramp"},
            {"name": "ties", "problem": square, "pattern": "ties"},
        ],
        "hints": {"io": "Q once per query block, K and V once per visible pair."},
        "student": ["README.md", "fa2_forward.py"],
        "instructor": ["solution.py"],
    }
    manifest.update(changes)
    return {k: v for k, v in manifest.items() if v is not None}


def _folder(tmp_path, manifest=None, reference_from=SOLUTION, name="my-fa2") -> pathlib.Path:
    """An assignment's folder: the manifest, reference.py (``reference_from``'s fa2_forward,
    renamed my_reference), README, starter and the instructor's solution."""
    folder = tmp_path / name
    folder.mkdir()
    manifest = _manifest() if manifest is None else manifest
    text = manifest if isinstance(manifest, str) else yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True)
    (folder / "assignment.yaml").write_text(text)
    (folder / "reference.py").write_text(reference_from.read_text().replace("def fa2_forward(", "def my_reference("))
    (folder / "README.md").write_text("# FlashAttention-2 at d = 16\n")
    shutil.copy(EXAMPLES / "fa2-forward" / "fa2_forward.py", folder / "fa2_forward.py")
    shutil.copy(SOLUTION, folder / "solution.py")
    return folder


def test_a_new_assignment_folder_is_graded(tmp_path, capsys):
    """A correct submission passes every check against the folder's own assignment (its shapes,
    its reference), a wrong one fails exactness, with no change to iosim."""
    folder = _folder(tmp_path)
    assert main(["grade", str(SOLUTION), "--assignment", str(folder), "--seed", "0", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["assignment"] == "fa2-small" and report["passed"] and report["score"] == 100
    assert [c["name"] for c in report["checks"]] == ["loads", "runs", "exactness", "capacity", "io"]
    assert "16 × 64" in report["setup"] and "7 inputs, 3 random and 4 built to break shortcuts" in report["setup"]
    exactness = next(c for c in report["checks"] if c["name"] == "exactness")
    assert [c["input"] for c in exactness["cases"]][:3] == ["square (1 of 2)", "square (2 of 2)", "causal ragged"]
    wrong = INSTRUCTOR / "cheats" / "no_rescale.py"
    assert main(["grade", str(wrong), "--assignment", str(folder), "--seed", "0", "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {c["name"]: c["status"] for c in report["checks"]} == {
        "loads": "pass", "runs": "pass", "exactness": "fail", "capacity": "fail", "io": "fail"}
    assert report["score"] == 40.0     # not attention on the ordinary inputs: its tiles and bytes are not credited


def test_the_folders_reference_and_weights_decide(tmp_path):
    """The traffic must equal the folder's reference.py, not the built-in FA2: with a reference
    that reloads Q_i per key block, the exact FA2 fails io and the reloading one passes it; the
    manifest's weights share out the score (io 3, the others 1)."""
    folder = _folder(tmp_path, _manifest(weights={"io": 3}), reference_from=INSTRUCTOR / "cheats" / "extra_traffic.py")
    report = grade(SOLUTION, folder, seed=1)
    assert {c.name: c.status for c in report.checks} == {
        "loads": "pass", "runs": "pass", "exactness": "pass", "capacity": "pass", "io": "fail"}
    assert "Q read" in report.check("io").detail and "the reference schedule" in report.check("io").detail
    assert report.score == round(100 * 4 / 7, 1) and report.exit_code == 1
    reloads = grade(INSTRUCTOR / "cheats" / "extra_traffic.py", folder, seed=1)
    assert reloads.passed and reloads.score == 100, reloads.render()


def test_the_folders_function_is_the_graded_one(tmp_path, capsys):
    folder = _folder(tmp_path, _manifest(function="my_attention"))
    assert main(["grade", str(SOLUTION), "--assignment", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "does not define my_attention(ctx)" in err and str(folder / "README.md") in err


def test_a_class_folder_holding_the_assignment_grades_only_the_students(tmp_path, capsys):
    """The folder's reference.py and solution.py are no student's submissions."""
    klass = tmp_path / "class"
    klass.mkdir()
    folder = _folder(klass)
    shutil.copy(SOLUTION, klass / "alice.py")
    assert main(["grade", str(klass), "--assignment", str(folder), "--seed", "0", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [row["student"] for row in data["gradebook"]] == ["alice"] and data["reports"][0]["passed"]


# -- bad manifests: one line, naming the file and the field, exit 2 --------------------------------
def _first_problem(**problem):
    """An edit: the first input's problem replaced by ``problem``."""
    return lambda m: {**m, "cases": [{**m["cases"][0], "problem": problem}] + m["cases"][1:]}


def _without_ties(m: dict) -> dict:
    m["cases"] = [c for c in m["cases"] if c.get("pattern") != "ties"]
    return m


BAD = {
    "missing field": (lambda m: {**m, "title": None}, "title: missing"),
    "wrong type": (_first_problem(seq_len="abc", head_dim=16), "cases[0].problem.seq_len: expected a whole number"),
    "wrong type of a list": (lambda m: {**m, "student": "README.md"}, "student: expected a non-empty list"),
    "unknown kind": (lambda m: {**m, "kind": "scheduel"}, "kind: unknown kind 'scheduel'"),
    "unknown field": (lambda m: {**m, "hint": {"io": "x"}}, "hint: unknown field; did you mean 'hints'?"),
    "reference file missing": (lambda m: {**m, "reference": "nothere.py:my_reference"},
                               "reference: no file 'nothere.py'"),
    "reference function missing": (lambda m: {**m, "reference": "reference.py:nope"},
                                   "reference: reference.py defines no function nope"),
    "reference outside the folder": (lambda m: {**m, "reference": "../reference.py:my_reference"},
                                     "reference: the string '../reference.py' is not a relative path"),
    "unknown built-in reference": (lambda m: {**m, "reference": "fa3"}, "reference: no built-in schedule 'fa3'"),
    "an adversarial pattern left out": (_without_ties, "cases: no input with pattern ties"),
    "no random input": (lambda m: {**m, "cases": [c for c in m["cases"] if c.get("pattern")]},
                        "cases: no random input"),
    "O not compared": (lambda m: {**m, "outputs": ["L"]}, "outputs: O is not listed"),
    "every weight 0": (lambda m: {**m, "weights": {k: 0 for k in ("loads", "runs", "exactness", "capacity", "io")}},
                       "weights: every weight is 0"),
    "a weight that is no number": (lambda m: {**m, "weights": {"io": True}}, "weights.io: expected a number"),
    "the student gets the reference": (lambda m: {**m, "student": ["README.md", "reference.py"]},
                                       "student: 'reference.py' is the manifest, the reference"),
    "the student gets the solution": (lambda m: {**m, "student": ["README.md", "solution.py"]},
                                      "student: 'solution.py' is the manifest, the reference"),
    "a student file outside": (lambda m: {**m, "student": ["README.md", "/etc/hostname"]},
                               "student[1]: the string '/etc/hostname' is not a relative path"),
    "a student file missing": (lambda m: {**m, "student": ["README.md", "starter.py"]},
                               "student[1]: 'starter.py': no such file"),
    "a shape the GPU cannot hold": (_first_problem(seq_len=64, head_dim=4096),
                                    "reference: the reference schedule fails on input 'square (1 of 2)' (toy): "
                                    "CapacityError"),
    "unknown hardware": (lambda m: {**m, "hw": "h900"}, "hw: no built-in profile 'h900'"),
    "a problem iosim refuses": (_first_problem(seq_len=64, head_dim=16, heads=3, kv_heads=2),
                                "cases[0].problem: heads (3) must be a multiple"),
    "blocks with unknown hardware": (lambda m: {**{k: v for k, v in m.items() if k not in ("hw", "outputs")},
                                                "kind": "blocks", "reference": "fa2",
                                                "cases": [{"hw": "h900", "problem": {"seq_len": 64, "head_dim": 16}}]},
                                     "cases[0].hw: no built-in profile 'h900'"),
    "YAML syntax error": ("schema_version: 1\nname: [unclosed\n", "line 3: not valid YAML"),
    "a key written twice": ("schema_version: 1\nname: a\nname: b\n", "name: written twice"),
    "not a mapping": ("- a\n- b\n", "expected a mapping of the manifest's fields, got a list"),
}


def _bad_folder(tmp_path, how):
    edit, _ = BAD[how]
    manifest = edit if isinstance(edit, str) else edit(_manifest())
    return _folder(tmp_path, {k: v for k, v in manifest.items() if v is not None}
                   if isinstance(manifest, dict) else manifest)


@pytest.mark.parametrize("how", sorted(BAD))
def test_a_bad_manifest_is_one_line_naming_the_file_and_the_field(tmp_path, capsys, how):
    folder = _bad_folder(tmp_path, how)
    expected = BAD[how][1]
    for argv in (["grade", str(SOLUTION), "--assignment", str(folder), "--format", "json"],
                 ["assignment", "export", str(folder), str(tmp_path / "pack")]):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1, err
        assert err.startswith(f"iosim: error: {folder / 'assignment.yaml'}: ") and expected in err, err
    assert not (tmp_path / "pack").exists()


def test_a_reference_that_raises_is_the_manifests_error(tmp_path, capsys):
    folder = _folder(tmp_path)
    (folder / "reference.py").write_text("raise ValueError('not today\\nnor tomorrow')\n")
    with pytest.raises(ManifestError, match=r"reference: loading reference.py raised ValueError: not today"):
        grade(SOLUTION, folder)
    assert main(["grade", str(SOLUTION), "--assignment", str(folder)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_reference_that_fails_on_an_input_is_the_manifests_error(tmp_path, capsys):
    """The grader runs the reference once per input (counts only) before it accepts the manifest."""
    folder = _folder(tmp_path)
    text = (folder / "reference.py").read_text()
    (folder / "reference.py").write_text(text.replace("    d = ctx.problem.head_dim\n", (
        "    d = ctx.problem.head_dim\n"
        "    if ctx.problem.causal:\n"
        "        raise RuntimeError('causal: not written yet')\n"), 1))
    assert main(["assignment", "export", str(folder), str(tmp_path / "pack")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("reference: the reference schedule fails on input 'causal ragged' (toy): "
                                     "RuntimeError: causal: not written yet") in err, err


@pytest.mark.parametrize("given,expected", [
    ("fa9", "unknown assignment 'fa9'; choose one of fa1, fa2, blocks, or give the folder"),
    ("{tmp}/nothing", "nothing: no such folder or file"),
    ("{tmp}", "no assignment.yaml in this folder"),
])
def test_an_assignment_that_is_not_there(tmp_path, capsys, given, expected):
    assert main(["grade", str(SOLUTION), "--assignment", given.format(tmp=tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err, err


# -- the student pack -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fa1", "fa2", "blocks"])
def test_export_of_a_builtin_writes_the_student_files_only(tmp_path, capsys, name):
    spec = ASSIGNMENTS[name]
    pack = tmp_path / "pack"
    assert main(["assignment", "export", name, str(pack)]) == 0
    written = sorted(p.relative_to(pack).as_posix() for p in pack.rglob("*"))
    assert written == sorted(["README.md", f"{spec.function}.py"])
    for rel in written:
        assert (pack / rel).read_bytes() == (EXAMPLES / spec.folder / rel).read_bytes()
    solutions = [p.read_text() for p in INSTRUCTOR.glob("*_solution.py")]
    assert not any((pack / rel).read_text() == text for rel in written for text in solutions)
    assert str(pack / "README.md") in capsys.readouterr().out


def test_export_of_a_folder_leaves_the_reference_and_the_solution_out(tmp_path, capsys):
    folder = _folder(tmp_path)
    pack = tmp_path / "class" / "pack"             # made, with its parents
    assert main(["assignment", "export", str(folder), str(pack)]) == 0
    assert sorted(p.name for p in pack.iterdir()) == ["README.md", "fa2_forward.py"]
    assert {p.name for p in folder.iterdir()} >= {"reference.py", "solution.py", "assignment.yaml"}


@pytest.mark.parametrize("target", ["non-empty", "a file"])
def test_export_refuses_a_non_empty_folder(tmp_path, capsys, target):
    destination = tmp_path / "pack"
    if target == "a file":
        destination.write_text("mine\n")
    else:
        destination.mkdir()
        (destination / "notes.txt").write_text("mine\n")
    assert main(["assignment", "export", "fa2", str(destination)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"iosim: error: {destination}: "), err
    assert ("not empty" if target == "non-empty" else "not a folder") in err
    kept = destination if target == "a file" else destination / "notes.txt"
    assert kept.read_text() == "mine\n" and not (tmp_path / "pack" / "README.md").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["assignment", "export", "fa2", str(empty)]) == 0      # an empty folder is fine


# -- docs/grading.md's example ----------------------------------------------------------------------
def _docs_example() -> tuple[str, str]:
    page = (ROOT / "docs" / "grading.md").read_text()
    section = page[page.index("## Adding an assignment"):]
    manifest = re.search(r"`my-fa2/assignment.yaml`:\n\n```yaml\n(.*?)```", section, re.S).group(1)
    reference = re.search(r"`my-fa2/reference.py`.*?```python\n(.*?)```", section, re.S).group(1)
    return manifest, reference


def test_the_docs_example_is_graded_and_exported(tmp_path, capsys, monkeypatch):
    """The page's folder, built as the page says, passes the instructor's FA2 and exports two files."""
    manifest, reference = _docs_example()
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "my-fa2"
    folder.mkdir()
    shutil.copy(EXAMPLES / "fa2-forward" / "fa2_forward.py", folder)
    (folder / "README.md").write_text("# FlashAttention-2 at d = 16\n")
    (folder / "assignment.yaml").write_text(manifest)
    (folder / "reference.py").write_text(reference)
    assert main(["grade", str(SOLUTION), "--assignment", "my-fa2", "--seed", "2", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["assignment"] == "fa2-d16" and report["passed"] and report["score"] == 100
    io = next(c for c in report["checks"] if c["name"] == "io")
    assert "my FlashAttention-2" in io["detail"] and "on 8 inputs" in io["detail"]
    assert main(["assignment", "export", "my-fa2", "pack/"]) == 0
    assert sorted(p.name for p in (tmp_path / "pack").iterdir()) == ["README.md", "fa2_forward.py"]
    spec = load_assignment_folder(folder)
    assert dict(spec.weights)["io"] == 2 and not math.isclose(dict(spec.weights)["runs"], 2)


def test_the_readmes_count_the_inputs_the_manifests_hold():
    """What a student and the tutorial read of the inputs is what the grader runs: the schedule assignments'
    inputs counted in words, and how many of them are random and how many built to break shortcuts."""
    words = {5: "five", 6: "six", 11: "eleven", 12: "twelve", 13: "thirteen"}
    texts = {path: " ".join(path.read_text().lower().split()) for path in (
        EXAMPLES / "fa1-forward" / "README.md", EXAMPLES / "README.md", ROOT / "docs" / "tutorial.md")}
    for name in ("fa1", "fa2"):
        cases = ASSIGNMENTS[name].cases
        built = sum(bool(c.adversarial) for c in cases)
        for path, text in texts.items():
            assert f"on {words[len(cases)]} inputs" in text, (name, path)
            assert re.search(rf"{words[len(cases) - built]} (are )?random", text), (name, path)
            assert re.search(rf"{words[built]} (are )?built to break", text), (name, path)
    assert "the same twelve inputs" in (EXAMPLES / "fa2-forward" / "README.md").read_text()
    assert len(ASSIGNMENTS["fa2"].cases) == 12
