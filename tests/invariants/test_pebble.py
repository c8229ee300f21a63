"""Red-blue pebbling of the attention DAG: the DAG, the rules, the schedules, the exact optimum, the CLI.

Node names (iosim/studies/pebbling/dag.py): inputs q[i,k], k[j,k], v[j,c]; partial dot products
t[i,j,k] ending in s[i,j]; e[i,j] = exp(s[i,j]); partial row sums l[i,j] (ℓ_i = l[i,N−1],
or e[i,0] when N = 1); partial P̃V sums u[i,c,j]; outputs o[i,c] = u[i,c,N−1] / ℓ_i.
"""

import json
import math

import numpy as np
import pytest

from iosim import Problem, simulate
from iosim.errors import IosimError
from iosim.studies.pebbling.comparison import compare, iosim_count, render
from iosim.studies.pebbling.dag import attention_dag, min_red_pebbles
from iosim.studies.pebbling.game import IllegalPebbling, play
from iosim.studies.pebbling.strategies import SCHEDULES, DoesNotFit, fit, peak_red
from iosim.studies.pebbling.search import SearchLimit, brute_force_io, minimum_io

from conftest import run


# --- the DAG -------------------------------------------------------------------------------------

@pytest.mark.parametrize("N,d", [(1, 1), (1, 3), (2, 1), (2, 2), (3, 2)])
def test_dag_size_and_shape(N, d):
    dag = attention_dag(N, d)
    # 3Nd inputs, N²d dot links, N² exponentials, N(N−1) row-sum links, N²d P̃V links, Nd outputs
    assert len(dag) == 3 * N * d + N * N * d + N * N + N * (N - 1) + N * N * d + N * d
    assert len(dag.inputs) == 3 * N * d and len(dag.outputs) == N * d
    assert min_red_pebbles(dag) == (3 if (N, d) == (1, 1) else 4)
    index = dag.index
    for node in dag.order:                      # the order is topological
        assert all(index[p] < index[node] for p in dag.preds(node))


def test_dag_computes_attention():
    """Evaluating the DAG node by node gives softmax(QKᵀ)V (no 1/√d: fold it into Q)."""
    N, d = 3, 2
    rng = np.random.default_rng(0)
    Q, K, V = rng.standard_normal((3, N, d))
    dag = attention_dag(N, d)
    val = {}
    for node in dag.order:
        letter, idx = node[0], [int(x) for x in node[2:-1].split(",")]
        ops = [val[p] for p in dag.preds(node)]
        if letter in "qkv":
            val[node] = {"q": Q, "k": K, "v": V}[letter][idx[0], idx[1]]
        elif letter in "ts" or letter == "u":
            val[node] = (ops[0] if len(ops) == 3 else 0.0) + ops[-2] * ops[-1]
        elif letter == "e":
            val[node] = math.exp(ops[0])
        elif letter == "l":
            val[node] = ops[0] + ops[1]
        else:
            val[node] = ops[0] / ops[1]
    S = Q @ K.T
    P = np.exp(S - S.max(axis=1, keepdims=True))
    O = (P / P.sum(axis=1, keepdims=True)) @ V
    assert np.allclose([[val[f"o[{i},{c}]"] for c in range(d)] for i in range(N)], O, rtol=1e-12)


def test_dag_rejects_bad_sizes():
    with pytest.raises(IosimError, match="seq_len"):
        attention_dag(0, 1)


# --- the rules -----------------------------------------------------------------------------------

ONE = [("load", "q[0,0]"), ("load", "k[0,0]"), ("compute", "s[0,0]"), ("delete", "q[0,0]"),
       ("delete", "k[0,0]"), ("compute", "e[0,0]"), ("delete", "s[0,0]"), ("load", "v[0,0]"),
       ("compute", "u[0,0,0]"), ("delete", "v[0,0]"), ("compute", "o[0,0]"), ("store", "o[0,0]")]


def test_play_counts_a_legal_pebbling():
    r = play(attention_dag(1, 1), ONE, red=3)
    assert (r.io, r.loads, r.stores, r.computes, r.deletes, r.peak_red) == (4, 3, 1, 4, 4, 3)
    assert r.loads_by_value == {"q": 1, "k": 1, "v": 1} and r.stores_by_value == {"o": 1}


@pytest.mark.parametrize("moves,red,message", [
    (ONE, 2, "all S = 2 red pebbles are in use"),                        # capacity
    ([("load", "s[0,0]")] + ONE, 3, "no blue pebble"),                   # load of a value never stored
    ([("compute", "s[0,0]")], 3, "operand.*without a red pebble"),      # operands missing
    ([("compute", "q[0,0]")], 3, "an input cannot be computed"),
    ([("store", "q[0,0]")], 3, "no red pebble"),
    ([("load", "q[0,0]"), ("store", "q[0,0]")], 3, "already has a blue pebble"),
    ([("load", "q[0,0]"), ("load", "q[0,0]")], 3, "already has a red pebble"),
    ([("delete", "q[0,0]")], 3, "no red pebble to delete"),
    ([("fly", "q[0,0]")], 3, "unknown move"),
    ([("load", "x[9]")], 3, "no such node"),
    (ONE[:-1], 3, "output.*not in slow memory"),                         # o never stored
])
def test_play_rejects_illegal_moves(moves, red, message):
    with pytest.raises(IllegalPebbling, match=message):
        play(attention_dag(1, 1), moves, red)


# --- the loop orders as pebblings ------------------------------------------------------------------

def closed_form(name, N, d, block):
    """IO of the pebbling schedules, derived from their loops (see iosim/studies/pebbling/strategies.py)."""
    T = math.ceil(N / block)
    if name == "fa2":      # Q once, K and V once per row block, O once
        return 2 * N * d + 2 * T * N * d
    if name == "fa1":      # K, V once; Q per key block; u, ℓ read back and written T_c − 1 times; O once
        return 2 * N * d + T * N * d + 2 * (T - 1) * (N * d + N) + N * d
    # standard: Q once, K and V per row block, S written+read, P̃ written+read, ℓ written+read, O once
    return 2 * N * d + 2 * T * N * d + 4 * N * N + (2 * N if N > 1 else N)


@pytest.mark.parametrize("N,d", [(1, 1), (2, 1), (3, 2), (5, 2)])
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_io_matches_closed_form(name, N, d):
    dag = attention_dag(N, d)
    peaks = []
    for block in range(1, N + 1):
        r = play(dag, SCHEDULES[name](dag, block), red=len(dag))
        assert r.io == closed_form(name, N, d, block)
        assert r.recomputes == 0
        peaks.append(r.peak_red)
    assert peaks == sorted(peaks)                  # a larger block holds more: fit() may binary-search


@pytest.mark.parametrize("N,d", [(2, 1), (3, 2), (4, 2)])
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_differs_from_iosim_exactly_by_the_modelled_tensors(name, N, d):
    """Where the element-level pebbling and iosim's tile-level count part, to the element.

    fa2: iosim also writes L (N). fa1: iosim also moves m (2·T_c·N), reads the freshly
    initialised O and ℓ on the first pass (Nd + N, convention C6) and writes ℓ at the end
    (N). standard (tiled GEMMs): the pebbling also writes and reads ℓ (2N), since this DAG
    stores P̃ = exp(S) and normalises at the end.
    """
    dag = attention_dag(N, d)
    for block in range(1, N + 1):
        pebbled = play(dag, SCHEDULES[name](dag, block), red=len(dag)).io
        counted, _ = iosim_count(name, N, d, block)
        T = math.ceil(N / block)
        expected = {"fa2": -N, "fa1": -(2 * T * N + N * d + 2 * N), "standard": 2 * N}[name]
        assert pebbled - counted == expected


def test_fit_takes_the_largest_block_that_fits():
    dag = attention_dag(3, 2)
    block, pebbling = fit(dag, "fa2", red=14)
    assert block == 2 and pebbling.peak_red <= 14 and peak_red(dag, "fa2", 3) > 14
    with pytest.raises(DoesNotFit, match="needs S ≥ 8"):
        fit(dag, "fa2", red=7)
    with pytest.raises(DoesNotFit, match="block 3 needs"):
        fit(dag, "fa2", red=14, block=3)


# --- the exact optimum: hand-checked instances -------------------------------------------------------

def test_optimum_1x1_at_the_minimum_S():
    """N = 1, d = 1, S = 3 (the minimum, since s = q·k has two operands): optimum 4.

    Lower bound: q, k, v start only in slow memory and every one is an ancestor of the
    output, so each is loaded at least once (3), and o must be stored (1): IO ≥ 4.
    Upper bound: load q, load k, compute s [3 red], delete q, k, compute e, delete s
    [1 red], load v, compute u = e·v [3 red], delete v, compute o = u/e [3 red], store o:
    3 loads + 1 store = 4 with never more than 3 red pebbles. So the optimum is 4, and no
    S ≥ 3 does better. S = 2 admits no pebbling at all.
    """
    dag = attention_dag(1, 1)
    for S in (3, 4, 7):
        assert minimum_io(dag, S).io == 4
    assert play(dag, ONE, red=3).io == 4
    with pytest.raises(IllegalPebbling, match="S ≥ 3"):
        minimum_io(dag, 2)


def test_optimum_1x2_at_the_minimum_S():
    """N = 1, d = 2, S = 4 (the minimum: s = t + q01·k01 has three operands): optimum 8.

    Lower bound: the 6 inputs are each loaded at least once and the 2 outputs stored: 8.
    Upper bound with 4 red pebbles: load q00, k00, compute t [3]; delete q00, k00; load
    q01, k01, compute s [4]; delete t, q01, k01; compute e, delete s [1]; then for c = 0, 1:
    load v0c, compute u0c = e·v0c [3], delete v0c, compute o0c = u0c/e [3], store o0c,
    delete o0c, u0c. 6 loads + 2 stores = 8.
    """
    assert minimum_io(attention_dag(1, 2), 4).io == 8


EIGHT = """load k[0,0]; load q[0,0]; load q[1,0]; compute s[0,0]; compute s[1,0]; delete k[0,0];
compute e[0,0]; delete s[0,0]; compute e[1,0]; delete s[1,0]; load v[0,0]; compute u[0,0,0];
compute u[1,0,0]; delete v[0,0]; load k[1,0]; compute s[0,1]; delete q[0,0]; compute e[0,1]; delete s[0,1];
compute l[0,1]; delete e[0,0]; compute s[1,1]; delete q[1,0]; delete k[1,0]; compute e[1,1]; delete s[1,1];
compute l[1,1]; delete e[1,0]; load v[1,0]; compute u[0,0,1]; delete u[0,0,0]; delete e[0,1];
compute o[0,0]; store o[0,0]; delete o[0,0]; delete u[0,0,1]; delete l[0,1]; compute u[1,0,1];
compute o[1,0]; store o[1,0]"""


def test_optimum_2x1_with_8_red_pebbles_is_compulsory():
    """N = 2, d = 1, S = 8: optimum 8 = the compulsory 6 loads + 2 stores.

    Lower bound: as above, 6 inputs loaded and 2 outputs stored at least once each.
    Upper bound (``EIGHT``, checked move by move): load k0, q0, q1 and form s00, s10 and
    their exponentials e00, e10 while k0 is red (k0 then goes); load v0 and form both
    u_i0 = e_i0·v0; load k1 and form, one row at a time, s_i1 → e_i1 → ℓ_i = e_i0 + e_i1,
    dropping q_i and e_i0 as soon as they are used up; load v1, finish u_01 and o_0, then
    u_11 and o_1. Every input is loaded once and nothing but the outputs is stored; the
    red count peaks at 8 (e.g. q1, e00, e10, u00, u10, k1, s01, e01). Hence 8 is optimal,
    and the search must find a pebbling that needs no store or reload at all.
    """
    dag = attention_dag(2, 1)
    moves = [tuple(m.split()) for m in EIGHT.replace("\n", " ").split(";")]
    r = play(dag, moves, red=8)
    assert (r.io, r.peak_red) == (8, 8)
    best = minimum_io(dag, 8)
    assert best.io == 8 and best.pebbling.io == 8 and best.pebbling.peak_red <= 8


@pytest.mark.parametrize("N,d,S", [(1, 1, 3), (1, 1, 4), (1, 1, 5), (1, 2, 4)])
def test_search_agrees_with_brute_force(N, d, S):
    """Plain 0-1 BFS over every move of the game (no reductions) gives the same optimum."""
    dag = attention_dag(N, d)
    assert minimum_io(dag, S).io == brute_force_io(dag, S)


@pytest.mark.slow  # about 4 s
def test_optimum_2x1_below_8_pebbles_costs_more():
    """N = 2, d = 1, S = 7: optimum 9 (search result, not derived by hand).

    The search proves no 8-IO pebbling fits 7 red pebbles (every compulsory-only pebbling
    needs 8, see the test above); the 9-IO pebbling it returns is replayed by the checker.
    FA2 with B_r = 1 (peak 5) costs 12 here, FA1 with B_c = 2 needs S ≥ 8.
    """
    best = minimum_io(attention_dag(2, 1), 7)
    assert best.io == 9 and best.pebbling.peak_red <= 7 and best.lower_bound == 8


def test_search_limits_are_errors():
    with pytest.raises(SearchLimit, match="limited to 40"):
        minimum_io(attention_dag(3, 1), 8)
    with pytest.raises(SearchLimit, match="gave up after seeing 10 states"):
        minimum_io(attention_dag(2, 1), 5, max_states=10)


# --- comparison and CLI ----------------------------------------------------------------------------

def test_optimum_is_never_above_a_schedule():
    for S in (8, 9):
        report = compare(2, 1, S)
        opt = report.row("optimal").io
        for name in SCHEDULES:
            row = report.row(name)
            assert row.io is None or row.io >= opt
        assert report.prop3_scale == 4 / S and report.compulsory == 8


def test_compare_reports_what_does_not_fit():
    report = compare(2, 1, 5, ("standard", "fa1", "fa2"))
    assert report.row("fa1").io is None and "S ≥ 6" in report.row("fa1").note
    assert report.row("fa2").io == 12 and report.row("fa2").block == 1
    assert "N²d²/S" in render(report)


def test_cli_table(capsys):
    code, out, _ = run(capsys, "pebble", "--seq-len", "2", "--head-dim", "1", "--red", "8")
    assert code == 0
    assert "optimal" in out and "standard" in out and "N²d²/S = 0.5" in out


def test_cli_json_and_moves(capsys):
    code, out, _ = run(capsys, "pebble", "-N", "2", "-d", "1", "-S", "8", "--schedule", "fa1", "--format", "json")
    data = json.loads(out)
    assert code == 0 and [r["schedule"] for r in data["rows"]] == ["fa1"]
    row = data["rows"][0]
    assert (row["io"], row["block"], row["iosim_elements"]) == (8, 2, 18)
    assert row["iosim_by_value"]["m"] == [2, 2]
    code, out, _ = run(capsys, "pebble", "-N", "1", "-d", "1", "-S", "3", "--schedule", "optimal", "--moves")
    assert code == 0 and "store    o[0,0]" in out


@pytest.mark.parametrize("argv,message", [
    (["-N", "2", "-d", "1", "-S", "3"], "S ≥ 4"),                              # below the minimum
    (["-N", "3", "-d", "2", "-S", "8"], "limited to 40"),                      # too large to search
    (["-N", "2", "-d", "1", "-S", "4", "--schedule", "fa2"], "needs S ≥ 5"),   # does not fit
    (["-N", "200", "-d", "64", "-S", "99", "--schedule", "fa2"], "too large to play"),
    (["-N", "2", "-d", "1", "-S", "8", "--block", "2"], "exactly one --schedule"),
])
def test_cli_bad_input_exits_2(capsys, argv, message):
    code, _, err = run(capsys, "pebble", *argv)
    assert code == 2 and message in err and err.startswith("iosim: error:")


def test_iosim_count_is_simulate():
    elements, tensors = iosim_count("fa2", 4, 2, 2)
    r = simulate("toy", "fa2", Problem(seq_len=4, head_dim=2), blocks=(2, 1))
    assert elements == r.hbm.total_elements and set(tensors) == {"Q", "K", "V", "O", "L"}


def test_the_exact_search_gives_up_at_its_time_budget(capsys):
    """A search the budget cannot finish ends in one line, exit 2 (the command line's default
    budget is 10 s: N = 2, d = 1, S = 4 needs about 50 s)."""
    code, _, err = run(capsys, "pebble", "-N", "2", "-d", "1", "-S", "4", "--schedule", "optimal", "--max-seconds", "1")
    assert code == 2 and "gave up after 1 s" in err and "--max-seconds" in err


def test_the_node_count_is_known_before_the_dag_is_built(capsys):
    """dag_nodes gives len(attention_dag) without building it, so an exact search too large for its limit is
    refused at once (it used to build N = d = 100's two million nodes first: 47 s)."""
    from iosim.cli.main import main
    from iosim.studies.pebbling.dag import dag_nodes
    for n, d in ((1, 1), (2, 1), (1, 3), (3, 2), (4, 5)):
        assert dag_nodes(n, d) == len(attention_dag(n, d)), (n, d)
    assert main(["pebble", "-N", "4000", "-d", "4000", "--red", "10", "--schedule", "optimal"]) == 2
    assert f"DAG has {dag_nodes(4000, 4000)} nodes; the exact search is limited to" in capsys.readouterr().err
