"""`iosim grade`'s verdicts cannot be fooled (issue 12): the reference comes from the grader's
pristine inputs; adversarial inputs catch the shortcuts of the online softmax; an input
that does not finish fails every verdict it leaves open. (The seed, forged messages and
limits: test_grade_trust.py.)"""

import pathlib

import numpy as np
import pytest

from conftest import statuses, submission
from iosim.grading import ASSIGNMENTS, grade
from iosim.grading import grader as grader_module
from iosim.grading.assignments import SCORE_RANGE, build_inputs, reference_outputs
from iosim.hardware import load_profile

ROOT = pathlib.Path(__file__).resolve().parents[2]
INSTRUCTOR = ROOT / "examples" / "assignments" / "instructor"
SOLUTION = (INSTRUCTOR / "fa2_solution.py").read_text()
#: e^x overflows float64 above x ≈ 709.8: a shift frozen 500 above the first block's maximum
#: survives a later maximum up to ~1209 above that block's
FROZEN_SURVIVES = 500 + 709.8


def failing_inputs(report) -> set:
    return {c["input"] for c in report.check("exactness").cases if not c["ok"]}


def adversarial_names(assignment: str = "fa2") -> set:
    return {c.name for c in ASSIGNMENTS[assignment].cases if c.adversarial}


# -- the inputs ------------------------------------------------------------------------------------
def _scores(case, inputs):
    p = case.problem
    S = inputs["Q"] @ np.swapaxes(inputs["K"], -1, -2) / np.sqrt(p.head_dim)
    if p.causal:
        visible = np.arange(p.seq_len_kv)[None, :] <= np.arange(p.seq_len_q)[:, None] + (p.seq_len_kv - p.seq_len_q)
        S = np.where(visible, S, -np.inf)
    return S


def _case(name_start: str, assignment: str = "fa2"):
    return next(c for c in ASSIGNMENTS[assignment].cases if c.name.startswith(name_start))


B_C = 32  # the toy GPU's blocks at d = 32 (Algorithm 1's rule)


@pytest.mark.parametrize("assignment", ["fa1", "fa2"])
def test_every_adversarial_input_has_the_shape_of_a_random_one(assignment):
    cases = ASSIGNMENTS[assignment].cases
    random_shapes = {c.problem for c in cases if not c.adversarial}
    adversarial = [c for c in cases if c.adversarial]
    assert len(adversarial) >= 6 and all(c.purpose for c in cases)
    assert all(c.problem in random_shapes for c in adversarial)  # ctx.problem cannot tell them apart


def test_inputs_are_deterministic_from_the_seed():
    for case in ASSIGNMENTS["fa2"].cases:
        a, b, c = (build_inputs(case, B_C, s) for s in (5, 5, 6))
        p = case.problem
        assert a["Q"].shape == (p.batch, p.heads, p.seq_len_q, p.head_dim)
        assert a["K"].shape == a["V"].shape == (p.batch, p.kv_heads, p.seq_len_kv, p.head_dim)
        assert all(np.array_equal(a[n], b[n]) for n in "QKV")
        assert not np.array_equal(a["V"], c["V"])


@pytest.mark.parametrize("seed", [0, 1, 2024])
def test_adversarial_inputs_have_the_structure_they_claim(seed):
    for case in ASSIGNMENTS["fa2"].cases:
        if not case.adversarial:
            continue
        S = _scores(case, build_inputs(case, B_C, seed))
        ref = reference_outputs(build_inputs(case, B_C, seed), case.problem)
        assert all(np.isfinite(v).all() for v in ref.values()), case.name     # the reference itself is exact
        assert 0.5 * SCORE_RANGE < np.abs(S[np.isfinite(S)]).max() < 1.1 * SCORE_RANGE, case.name
        row_max, first_max = S.max(-1), S[..., :B_C].max(-1)
        # the frozen shift overflows on some rows of every adversarial input
        assert (row_max - first_max > FROZEN_SURVIVES).any(), case.name
    square_last = _scores(_case("max in the last"), build_inputs(_case("max in the last"), B_C, seed))
    assert (square_last[0, 0].argmax(-1) >= 128 - B_C).all()                 # head 0: max in the last block
    middle = _scores(_case("max in a middle"), build_inputs(_case("max in a middle"), B_C, seed))
    assert set(middle[0, 0].argmax(-1) // B_C) == {1} and set(middle[0, 1].argmax(-1) // B_C) == {2}
    ramp = _scores(_case("rising"), build_inputs(_case("rising"), B_C, seed))[0, 0]
    rising = ramp.argmax(-1) == 99                                            # in the ragged 4-key block
    assert rising.any() and (ramp.argmax(-1)[~rising] == 0).all()
    block_max = np.stack([ramp[:, j * B_C:(j + 1) * B_C].max(-1) for j in range(4)], -1)
    jumps = np.diff(block_max[rising], axis=-1)
    assert (jumps[:, :2] > 1900).all() and (jumps[:, 2] > 200).all()         # every block must rescale
    ties = _scores(_case("ties"), build_inputs(_case("ties"), B_C, seed))
    tied = (ties[0, 0] == ties[0, 0].max(-1, keepdims=True)).sum(-1)
    assert (tied == 4).all()                                                  # exact, to the last bit
    constant = np.ptp(ties[0, 1], axis=-1) == 0
    assert set(np.round(ties[0, 1][constant, 0] / SCORE_RANGE).tolist()) == {-1.0, 0.0, 1.0}
    causal = _scores(_case("causal, one visible"), build_inputs(_case("causal, one visible"), B_C, seed))
    assert np.isfinite(causal[0, 0, 0]).sum() == 1 and abs(causal[0, 0, 0, 0]) > 0.25 * SCORE_RANGE


def test_the_reference_comes_from_a_pristine_copy_made_before_the_student_runs(monkeypatch):
    profile = load_profile("toy")
    runs = grader_module._prepare(ASSIGNMENTS["fa2"], profile, seed=3)
    assert sorted(r.order for r in runs) == list(range(len(runs)))          # the order drawn from the seed
    assert [r.order for r in runs] != [r.order for r in grader_module._prepare(ASSIGNMENTS["fa2"], profile, 4)]
    for run in runs:
        assert run.reference is not None and run.expected is not None       # before any student process
        for array in (*run.inputs.values(), *run.reference.values()):
            assert not array.flags.writeable
        fresh = build_inputs(run.case, run.blocks.block_kv, 3 + ASSIGNMENTS["fa2"].cases.index(run.case))
        assert all(np.array_equal(run.inputs[n], fresh[n]) for n in "QKV")

    # What the engine is handed is a copy: a schedule that overwrites its inputs in the
    # engine's HBM cannot move the grader's copy, nor the reference made from it.
    seen = []
    real = grader_module.simulate

    def spy(*args, **kwargs):
        if kwargs.get("inputs") is not None:
            seen.append(kwargs["inputs"])
            for array in kwargs["inputs"].values():
                array[...] = 0.0
        return real(*args, **kwargs)

    monkeypatch.setattr(grader_module, "simulate", spy)
    report = grade(INSTRUCTOR / "fa2_solution.py", seed=3)
    assert seen and report.check("exactness").status == "fail"             # zeros are not the pristine answer


def test_a_schedule_that_poisons_its_inputs_is_judged_on_the_pristine_ones(tmp_path):
    # Zero V before running FA2: O then is 0 everywhere, consistent with the V the engine holds
    # (if the engine lets the write through), but not with the grader's inputs.
    path = submission(tmp_path, SOLUTION.replace('    d = ctx.problem.head_dim\n',
                                            '    d = ctx.problem.head_dim\n    ctx.init("V", 0.0)\n', 1))
    report = grade(path, seed=0)
    assert not report.passed
    assert report.check("exactness").status == "fail" or report.check("runs").status == "fail", report.render()


# -- numerical shortcuts -------------------------------------------------------------------------
_LOOP_HEAD = '''
from iosim.engine.tiles import maximum

def fa2_forward(ctx):
    p, d = ctx.problem, ctx.problem.head_dim
    n_kv = -(-p.seq_len_kv // ctx.blocks.block_kv)
    for i in ctx.q_blocks():
        last = n_kv - 1
        if p.causal:
            last = min(last, (i.start + i.rows - 1 + p.seq_len_kv - p.seq_len_q) // ctx.blocks.block_kv)
        Q_i = ctx.load("Q", i)
        O_i = ctx.fill("O_i", i, 0.0, role="output", cols=d)
        l_i = ctx.fill("l_i", i, 0.0, role="stats")
        m_i = ctx.fill("m_i", i, 0.0, role="stats")
        first = True
        for j in ctx.kv_blocks(visible_to=i):
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)
            S_ij = ctx.keep("S_ij", ctx.mask((Q_i @ K_j.T) * ctx.softmax_scale, i, j), role="scores")
'''
_LOOP_TAIL = '''
            P_ij = ctx.keep("S_ij", (S_ij - m_i.col()).exp(), role="scores")
            l_i = ctx.keep("l_i", l_i + P_ij.rowsum(), role="stats")
            O_i = ctx.keep("O_i", O_i + P_ij @ V_j, role="output")
        ctx.store("O", i, ctx.keep("O_i", l_i.reciprocal().col() * O_i, role="output"))
        ctx.store("L", i, ctx.keep("L_i", m_i + l_i.log(), role="stats"))
'''
CHEATS = {
    # the shift is the first key block's row maximum + 500, never updated: e^{S − m} overflows
    # once a later block's scores exceed it by ~709
    "frozen_shift": _LOOP_HEAD + '''
            if first:
                m_i = ctx.keep("m_i", S_ij.rowmax() + 500.0, role="stats")
                first = False
''' + _LOOP_TAIL,
    # the same, but rescaled properly at the last key block: too late when a middle block overflowed
    "frozen_shift_rescale_last": _LOOP_HEAD + '''
            if first:
                m_i = ctx.keep("m_i", S_ij.rowmax() + 500.0, role="stats")
                first = False
            elif j.index == last:
                m_new = maximum(m_i, S_ij.rowmax())
                rescale = (m_i - m_new).exp()
                l_i = ctx.keep("l_i", rescale * l_i, role="stats")
                O_i = ctx.keep("O_i", rescale.col() * O_i, role="output")
                m_i = ctx.keep("m_i", m_new, role="stats")
''' + _LOOP_TAIL,
    # no maximum subtracted at all: e^S overflows (S > 709) or underflows to a 0/0 (all S < −745)
    "no_max_subtraction": _LOOP_HEAD + '''
            pass
''' + _LOOP_TAIL,
    # the first key block's maximum, exactly, as the shift for the whole row
    "first_block_max": _LOOP_HEAD + '''
            if first:
                m_i = ctx.keep("m_i", S_ij.rowmax(), role="stats")
                first = False
''' + _LOOP_TAIL,
}


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_numerical_shortcut_fails_exactness_on_the_adversarial_inputs(tmp_path, cheat):
    report = grade(submission(tmp_path, CHEATS[cheat], f"{cheat}.py"), "fa2", seed=0)
    # It computes the right thing with the right bytes and tiles: only exactness can catch it...
    assert statuses(report) == {"loads": "pass", "runs": "pass", "exactness": "fail", "capacity": "pass",
                                "io": "pass", "answer": "fail"}, report.render()
    failing = failing_inputs(report)
    large = adversarial_names() | {"large scores N=96 (|S| up to ~1000)"}
    # ... and it does, on the inputs built for it (exact on the ordinary random ones).
    assert failing and failing <= large, failing
    assert "overflow" in report.check("exactness").hint
    if cheat.startswith("frozen_shift"):
        # what the old single large-score input (|S| ≲ 1000) could not catch
        assert "large scores N=96 (|S| up to ~1000)" not in failing
        assert {"max in a middle key block (|S| ≈ 1e4)", "rising scores, ragged N=100 (|S| ≈ 1e4)",
                "causal ragged N_q=70, N_kv=100 (|S| ≈ 1e4)"} <= failing
    if cheat == "frozen_shift":
        assert "max in the last key block (|S| ≈ 1e4)" in failing
    if cheat == "no_max_subtraction":  # constant rows at −1e4 underflow to 0/0
        assert "ties and constant rows (|S| ≈ 1e4)" in failing


@pytest.mark.parametrize("seed", [1, 77])
def test_the_frozen_shift_fails_on_every_seed(tmp_path, seed):
    report = grade(submission(tmp_path, CHEATS["frozen_shift"]), "fa2", seed=seed)
    assert report.check("exactness").status == "fail"


def test_a_running_maximum_started_at_zero_fails(tmp_path):
    # m_i = 0 in place of −∞: right whenever a row's maximum is above −745, as on random inputs
    path = submission(tmp_path, SOLUTION.replace('m_i = ctx.fill("m_i", i, -math.inf, role="stats")',
                                            'm_i = ctx.fill("m_i", i, 0.0, role="stats")'))
    report = grade(path, seed=0)
    assert report.check("exactness").status == "fail"
    assert failing_inputs(report) <= adversarial_names()


def test_the_instructor_solutions_are_exact_on_every_input():
    for file in ("fa1_solution.py", "fa2_solution.py"):
        report = grade(INSTRUCTOR / file, seed=12345)
        exact = report.check("exactness")
        assert exact.passed and f"on {len(ASSIGNMENTS['fa2'].cases)} inputs" in exact.detail, report.render()


# -- all or nothing ------------------------------------------------------------------------------
DODGE = SOLUTION.replace('def fa2_forward(ctx):\n', 'def fa2_forward(ctx):\n    __DODGE__\n')


@pytest.mark.parametrize("dodge,status,reason", [
    ('if ctx.problem.seq_len_q == 100:\n        ctx.read("K")', "capacity", "stopped at the capacity check"),
    ('if ctx.problem.seq_len_q == 100:\n        raise RuntimeError("not this one")', "exception",
     "stopped with an exception"),
    ('if ctx.problem.seq_len_q == 100:\n        import os; os._exit(0)', "crash",
     "ended with the student's process dying"),
])
def test_an_input_that_does_not_finish_fails_exactness_and_io(tmp_path, dodge, status, reason):
    # A schedule that stops on purpose on the inputs where it would be wrong (or does anything
    # else than finish them) cannot keep a passing exactness or io from the others.
    report = grade(submission(tmp_path, DODGE.replace("__DODGE__", dodge)), seed=0)
    for name in ("exactness", "io", "capacity"):
        check = report.check(name)
        assert check.status == "fail", report.render()
        if status != "capacity" or name != "capacity":
            assert check.detail.startswith("not judged: input "), check.detail
            assert reason in check.detail
    assert not report.passed and all(c.status in ("pass", "fail") for c in report.checks)
