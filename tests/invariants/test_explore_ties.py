"""explore's default grid (tiles the hardware runs), the near-ties reported as a group, the
practical choice among them (iosim.studies.explore.ties.PRACTICAL_RULE), and the branch and
bound that replays the L2 model only where the ranking needs it."""

from __future__ import annotations

import pytest

from iosim import Problem
from iosim.cli.main import main
from iosim.studies.explore import Candidate, explore
from iosim.studies.explore.ties import rank


def cand(bq, bkv, t_lo, t_hi=None, hbm=1000, fits=True):
    t_hi = t_lo if t_hi is None else t_hi
    return Candidate(bq, bkv, 1 if fits else 3, 2, 0, None, hbm, 0, t_lo, t_hi, "tensor cores")


def ranked(cands, tie=0.01, kernel=None, budget=8, truth=None):
    table = {(c.block_q, c.block_kv): c for c in cands}
    log = []

    def resolve(c):
        log.append((c.block_q, c.block_kv))
        t = truth[(c.block_q, c.block_kv)]
        return cand(c.block_q, c.block_kv, t, hbm=c.hbm_read_bytes)

    return rank(table, "time", False, tie, budget, resolve, kernel), log


def keys(cs):
    return {(c.block_q, c.block_kv) for c in cs}


# -- the practical choice ------------------------------------------------------------------
TIES = [cand(496, 2, 1.000), cand(80, 48, 1.001), cand(128, 128, 1.002), cand(128, 64, 1.005), cand(64, 64, 1.2)]


def test_practical_choice_prefers_the_real_kernels_tile():
    r, _ = ranked(TIES, kernel=(128, 64))
    assert keys(r.members) == {(496, 2), (80, 48), (128, 128), (128, 64)}
    assert (r.best.block_q, r.best.block_kv) == (496, 2)
    assert (r.practical.block_q, r.practical.block_kv, r.practical_reason) == (128, 64, "the real kernel's tile")


def test_practical_choice_then_powers_of_two_closest_to_square():
    r, _ = ranked(TIES, kernel=(64, 64))                  # the kernel's tile is no near-tie: 20 % slower
    assert (r.practical.block_q, r.practical.block_kv) == (128, 128)
    assert r.practical_reason == "powers of two, closest to square"
    r, _ = ranked([cand(256, 64, 1.0), cand(64, 128, 1.0), cand(96, 96, 1.0)])
    assert (r.practical.block_q, r.practical.block_kv) == (64, 128)       # |log2 ratio| 1 beats 2; 96 is no 2^k


def test_practical_choice_without_powers_of_two_is_the_closest_to_square():
    r, _ = ranked([cand(496, 2, 1.0), cand(240, 8, 1.004), cand(80, 48, 1.009)])
    assert (r.practical.block_q, r.practical.block_kv) == (80, 48)
    assert r.practical_reason.startswith("closest to square")


def test_equally_square_tiles_go_to_the_best_exactly():
    """192 × 256 and 192 × 144 are equally square (4 : 3): the faster wins. |log2| in floating point made
    192 × 144 the squarer by one ulp (an audit, session 48)."""
    r, _ = ranked([cand(192, 256, 1.000), cand(192, 144, 1.002), cand(192, 112, 1.004)])
    assert (r.practical.block_q, r.practical.block_kv) == (192, 256)
    assert cand(192, 256, 1.0).squareness() == cand(192, 144, 1.0).squareness() == cand(144, 192, 1.0).squareness()


def test_the_tolerance_draws_the_group():
    r, _ = ranked(TIES, tie=0.0)
    assert keys(r.members) == {(496, 2)}
    r, _ = ranked(TIES, tie=0.0015)
    assert keys(r.members) == {(496, 2), (80, 48)}
    r, _ = ranked(TIES, tie=0.25)
    assert len(r.members) == 5


# -- branch and bound ----------------------------------------------------------------------
def test_replays_only_what_the_ranking_needs():
    truth = {(16, 16): 5.0, (32, 32): 2.0, (64, 64): 1.0, (128, 64): 1.001, (256, 16): 3.0}
    cands = [cand(16, 16, 4.0, 9.0), cand(32, 32, 1.5, 3.0), cand(64, 64, 0.9, 2.0), cand(128, 64, 0.95, 1.6),
             cand(256, 16, 3.0)]
    r, log = ranked(cands, truth=truth, kernel=(128, 64))
    assert (r.best.block_q, r.best.block_kv) == (64, 64) and r.best_proven
    # 64×64 (lowest bound) first, then 128×64 (its bound 0.95 < 1.0); 32×32 is 1.5 > 1.0: never replayed
    assert log == [(64, 64), (128, 64)]
    assert (r.practical.block_q, r.practical.block_kv) == (128, 64) and r.replays == 2


def test_an_exhausted_budget_is_reported():
    truth = {(16, 16): 1.0, (32, 32): 0.5}
    r, log = ranked([cand(16, 16, 0.1, 2.0), cand(32, 32, 0.2, 2.0)], truth=truth, budget=1)
    assert len(log) == 1 and not r.best_proven
    r, log = ranked([cand(16, 16, 0.1, 2.0), cand(32, 32, 0.2, 2.0)], truth=truth, budget=2)
    assert (r.best.block_q, r.best.block_kv) == (32, 32) and r.best_proven


def test_branch_and_bound_finds_the_best_of_a_full_replay():
    """On a small problem, the best of explore (few replays) is the best of every tile replayed."""
    problem = Problem(seq_len=512, head_dim=32)
    res = explore("toy", "fa2", problem, objective="time", block_q=[16, 32, 48, 64, 96], block_kv=[16, 32, 64],
                  replays=1000, jobs=1)
    assert res.ranking.best_proven
    from iosim import Options, simulate
    times = {(c.block_q, c.block_kv): simulate("toy", "fa2", problem, blocks=(c.block_q, c.block_kv),
                                               options=Options(cache=True)).time.predicted_s
             for c in res.candidates if c.eligible(False)}
    assert res.best.predicted_s == min(times.values())
    line = res.best.predicted_s * 1.01
    assert keys(res.ranking.members) | keys(res.ranking.undecided) >= {k for k, t in times.items() if t <= line}
    assert sum(c.replayed for c in res.candidates) < len(times)


# -- the grid ------------------------------------------------------------------------------
def test_default_grid_is_tensor_core_tiles():
    res = explore("h100-sxm", "fa2", Problem(seq_len=8192, head_dim=128), cache=False, jobs=1)
    grid = [c for c in res.candidates if "grid" in c.sources]
    assert all(c.block_q % 16 == 0 and c.block_kv % 16 == 0 for c in grid)
    assert min(c.block_q for c in grid) == 16 and min(c.block_kv for c in grid) == 16
    assert (res.best.block_q % 16, res.best.block_kv % 16) == (0, 0)       # today's grid picked 496×2
    everything = explore("h100-sxm", "fa2", Problem(seq_len=8192, head_dim=128), cache=False, grid="all", jobs=1,
                         block_kv=[1, 2, 64])
    assert {1, 2, 4, 8} <= {c.block_q for c in everything.candidates}
    assert (everything.best.block_q, everything.best.block_kv) == (496, 2)


def test_impractical_near_ties_are_grouped_at_128k(capsys):
    """At N = 128k (the L2 model on, played for the tiles the report names), the near-ties are
    one group and the practical choice is a tile real kernels run."""
    assert main(["explore", "--hw", "h100-sxm", "--algo", "fa2", "-N", "128k", "-d", "128", "--objective", "time",
                 "--block-kv", "16:128:+16", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "times: roofline with the L2 model" in out
    line = next(l for l in out.splitlines() if l.startswith("near-ties within 1.0% of the best:"))
    assert int(line.split(": ")[1].split(" ")[0].replace(",", "")) > 1
    practical = next(l for l in out.splitlines() if l.startswith("practical choice"))
    bq, bkv = map(int, practical.split()[2].split("×"))
    assert bq % 16 == 0 and bkv % 16 == 0 and bkv >= 16 and f"{bq}×{bkv}" in line


@pytest.mark.parametrize("hw,d", [("mi300x", 128), ("a100-80gb", 128)])
def test_every_default_pick_is_a_tensor_core_tile(hw, d):
    res = explore(hw, "fa2", Problem(seq_len=4096, head_dim=d), objective="time", cache=False, jobs=1)
    for c in (res.best, res.practical, *res.ranking.members):
        assert c.block_q % 16 == 0 and c.block_kv % 16 == 0 or "paper" in c.sources or "kernel" in c.sources


def test_the_top_table_opens_with_the_best_and_its_ties(capsys):
    """By DRAM bytes, a tile the L2 model was not played for has a lower bound of 0 B: sorted by bounds alone, such
    tiles filled the table and the best (mi300x, N = 2,048, d = 96: 86 × 86 at 1.5 MiB) was row 96 (an audit,
    session 48)."""
    assert main(["explore", "--hw", "mi300x", "--algo", "fa2", "-N", "2048", "-d", "96", "--objective", "dram",
                 "--top", "12"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = out[out.index(next(line for line in out if line.startswith("top 12 by DRAM bytes"))) + 3:]
    tags = [row.split()[-1] for row in rows]                # the tags, or the registers where a row has none
    assert "best" in tags[0] and rows[0].split()[0] == "86×86"
    members = sum("tie" in t for t in tags)
    assert members >= 1 and all("tie" in t for t in tags[1:1 + members])
