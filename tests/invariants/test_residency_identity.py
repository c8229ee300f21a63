"""Residency by identity: a schedule is charged for every tile it can still use, in every mode.

Each cheat below is a custom schedule passed to ``simulate``. It either raises
``ScheduleError`` (it uses a tile that is no longer on chip: released when its loop
iteration ended, or replaced under its name) or ``CapacityError`` (it holds the tiles
honestly, under distinct names, and they do not fit). Before residency by identity every
one of them ran, charged for one tile while it used all of them; the inputs cheats wrote
into the caller's arrays. The last tests check that the built-in schedules count the same
in the three modes, which the grouping of count mode (an iteration group runs as its
first member, then its second standing for the rest) must not change.
"""

import math

import pytest

from iosim import CapacityError, Options, Problem, ScheduleError, simulate
from iosim.engine.tiles import maximum

HW = "fa-paper-a100"
MODES = ("count", "trace", "numeric")
#: 4 query blocks × 4 key blocks of 64 rows, d = 32: Q_i, K_j, V_j are 4 KiB each in fp16
SMALL = Problem(seq_len=256, head_dim=32)
TILE = 64 * 32 * 2
RELEASED = "was released when its loop iteration ended; it is no longer on chip"
REPLACED = "put a new tile in its place; it is no longer on chip"


def run(schedule, mode, problem=SMALL, **options):
    return simulate(HW, schedule, problem, blocks=(64, 64), mode=mode, options=Options(**options))


# -- (a) all of K and V in one iteration ---------------------------------------------------

def load_every_key_block_in_one_iteration(ctx):
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        Ks = [ctx.load("K", j) for j in ctx.kv_blocks()]   # each K_j ends with its own iteration
        Vs = [ctx.load("V", j) for j in ctx.kv_blocks()]
        S = [Q_i @ K.T for K in Ks]
        ctx.store("O", i, sum(s @ V for s, V in zip(S, Vs)))


def load_collected_blocks_in_one_iteration(ctx):
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        blocks = list(ctx.kv_blocks())                      # the loop has run: its blocks are over
        Ks = [ctx.load("K", j) for j in blocks]
        ctx.store("O", i, sum(Q_i @ K.T for K in Ks) @ Ks[0])


def hold_every_key_block_under_its_own_name(ctx):
    t_c = math.ceil(ctx.problem.seq_len_kv / ctx.blocks.block_kv)
    for i in ctx.q_blocks():
        for n in range(t_c):                                # a small place per key block, here
            ctx.fill(f"K{n}", i, 0.0, role="input", cols=1)
        for j in ctx.kv_blocks():                           # ... filled with K_j in the inner loop
            ctx.keep(f"K{j.index}", ctx.load("K", j), role="input")


@pytest.mark.parametrize("mode", MODES)
def test_loading_all_keys_in_one_iteration_uses_released_tiles(mode):
    """ScheduleError: each K_j is loaded inside its own kv iteration, which ends as the
    comprehension moves on, so the list holds tiles that are no longer on chip."""
    with pytest.raises(ScheduleError, match=r"tile K_j \(loaded at iteration i=0, j=0\) " + RELEASED):
        run(load_every_key_block_in_one_iteration, mode)


@pytest.mark.parametrize("mode", MODES)
def test_blocks_cannot_be_used_after_their_iteration(mode):
    """ScheduleError: a block is a loop variable (in count mode it may stand for a group),
    so loading K_j with it after its iteration is refused."""
    with pytest.raises(ScheduleError, match=r"ctx.load\('K', …\): block j=0 is not the block of a loop iteration "
                                            r"running now"):
        run(load_collected_blocks_in_one_iteration, mode)


def test_holding_every_key_block_is_charged_in_every_mode():
    """Held honestly, under a name each in the enclosing iteration, the four K tiles are all
    charged: CapacityError in trace and numeric mode (16 KiB of K + the loaded K_j > 18 KiB).
    Count mode runs the group of key blocks 1..3 once, so it cannot see three different
    places being filled: ScheduleError, asking for trace mode, instead of a count that
    charges one."""
    for mode in ("trace", "numeric"):
        with pytest.raises(CapacityError, match="K0 4,096 B.*K1 4,096 B.*K2 4,096 B.*K3 4,096 B"):
            run(hold_every_key_block_under_its_own_name, mode, sram_bytes=18_000)
    with pytest.raises(ScheduleError, match="stands for a group of 3 iterations.*mode='trace'"):
        run(hold_every_key_block_under_its_own_name, "count", sram_bytes=18_000)


# -- (b) every S_ij under one name ----------------------------------------------------------

def keep_scores_in_their_iteration(ctx):
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        row = []
        for j in ctx.kv_blocks():
            K_j = ctx.load("K", j)
            row.append(ctx.keep("S_ij", Q_i @ K_j.T, role="scores"))
        m = row[0].rowmax()
        for S in row[1:]:
            m = maximum(m, S.rowmax())


def keep_scores_under_one_name_of_the_outer_loop(ctx):
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        ctx.fill("S_ij", i, 0.0, role="scores", cols=64)    # resident in the query iteration...
        row = []
        for j in ctx.kv_blocks():
            K_j = ctx.load("K", j)
            row.append(ctx.keep("S_ij", Q_i @ K_j.T, role="scores"))   # ...so each S_ij replaces the last
        m = row[0].rowmax()
        for S in row[1:]:
            m = maximum(m, S.rowmax())


@pytest.mark.parametrize("mode", MODES)
def test_scores_kept_in_their_iteration_are_gone_after_it(mode):
    """ScheduleError: S_ij was kept in the kv iteration, and released when it ended."""
    with pytest.raises(ScheduleError, match=r"rowmax: tile S_ij \(kept at iteration i=0, j=0\) " + RELEASED):
        run(keep_scores_in_their_iteration, mode)


@pytest.mark.parametrize("mode", MODES)
def test_scores_kept_under_one_name_replace_each_other(mode):
    """ScheduleError: every keep of S_ij in the outer iteration's name takes the place of
    the previous one, which is released (count mode meets it in the group's second run)."""
    with pytest.raises(ScheduleError, match=r"tile S_ij \(kept at iteration i=0, j=0\) was released when ctx.keep"
                                            r"\('S_ij', …\) at iteration i=0, j(=1|∈group of 3) " + REPLACED):
        run(keep_scores_under_one_name_of_the_outer_loop, mode)


# -- (c) tiles stashed out of sight ------------------------------------------------------

STASH = []


class Holder:
    tile = None


def stash_in_list(ctx):
    stash = []
    for i in ctx.q_blocks():
        for j in ctx.kv_blocks():
            stash.append(ctx.load("K", j))
            if len(stash) > 1:
                stash[-2] + stash[-1]                        # last iteration's K with this one's


def stash_in_global(ctx):
    STASH.clear()
    for i in ctx.q_blocks():
        for j in ctx.kv_blocks():
            K_j = ctx.load("K", j)
            if STASH:
                STASH[0] + K_j
            STASH[:] = [K_j]


def stash_in_closure(ctx):
    held = None

    def remember(tile):
        nonlocal held
        previous, held = held, tile
        return previous

    for i in ctx.q_blocks():
        for j in ctx.kv_blocks():
            K_j = ctx.load("K", j)
            previous = remember(K_j)
            if previous is not None:
                previous + K_j


def stash_in_class_attribute(ctx):
    Holder.tile = None
    for i in ctx.q_blocks():
        for j in ctx.kv_blocks():
            K_j = ctx.load("K", j)
            if Holder.tile is not None:
                Holder.tile + K_j
            Holder.tile = K_j


def stash_in_generator(ctx):
    def keys():
        for j in ctx.kv_blocks():
            yield ctx.load("K", j)                          # suspended inside iteration j

    for i in ctx.q_blocks():
        it = keys()
        K_0 = next(it)
        K_1 = next(it)                                      # resuming ended iteration j = 0
        K_0 + K_1


def stash_a_temporary(ctx):
    stash = []
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        for j in ctx.kv_blocks():
            S = Q_i @ ctx.load("K", j).T                   # a temporary (register), never kept
            if stash:
                stash[-1] + S
            stash.append(S)


def carry_a_temporary_into_the_inner_loop(ctx):
    for i in ctx.q_blocks():
        Q_scaled = ctx.load("Q", i) * ctx.softmax_scale     # computed in the query iteration, never kept
        for j in ctx.kv_blocks():
            Q_scaled @ ctx.load("K", j).T


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("schedule", [stash_in_list, stash_in_global, stash_in_closure, stash_in_class_attribute,
                                      stash_in_generator])
def test_stashed_tiles_are_released_with_their_iteration(schedule, mode):
    """ScheduleError: wherever Python keeps a reference, K_j left the chip when its iteration ended."""
    with pytest.raises(ScheduleError, match=r"\+: tile K_j \(loaded at iteration i=0, j=0\) " + RELEASED):
        run(schedule, mode)


@pytest.mark.parametrize("mode", MODES)
def test_temporaries_end_with_their_iteration(mode):
    """ScheduleError: a temporary is a register of the iteration that computed it."""
    with pytest.raises(ScheduleError, match=r"a temporary tile \(64, 64\) \(computed at iteration i=0, j=0, never "
                                            r"kept\) " + RELEASED):
        run(stash_a_temporary, mode)


@pytest.mark.parametrize("mode", MODES)
def test_temporaries_do_not_enter_nested_loops(mode):
    """ScheduleError: carried into the kv loop, the query iteration's temporary would be
    held for the whole loop uncharged; it must be kept under a name to go there."""
    with pytest.raises(ScheduleError, match=r"@: a temporary tile \(64, 32\) \(computed at iteration i=0, never "
                                            r"kept\) is used inside a nested loop iteration \(i=0, j=0\)"):
        run(carry_a_temporary_into_the_inner_loop, mode)


@pytest.mark.parametrize("mode", MODES)
def test_whole_tensor_reads_stay_out_of_the_loops(mode):
    """ScheduleError: ctx.read without resident_as has no residency (standard attention's
    idealised kernel), so it cannot stand in for the tiles of a blocked schedule."""
    def whole_keys_in_every_iteration(ctx):
        for i in ctx.q_blocks():
            ctx.store("O", i, ctx.load("Q", i) @ ctx.read("K").T @ ctx.read("V"))

    with pytest.raises(ScheduleError, match=r"ctx.read\('K'\) inside a loop \(iteration i=0\)"):
        run(whole_keys_in_every_iteration, mode)


@pytest.mark.parametrize("mode", MODES)
def test_loops_must_nest(mode):
    """ScheduleError: stepping two loops together (or resuming one after its enclosing
    iteration ended) would leave one iteration's tiles resident inside the other's."""
    def two_loops_in_step(ctx):
        for i in ctx.q_blocks():
            Q_i = ctx.load("Q", i)
            for j, j2 in zip(ctx.kv_blocks(), ctx.kv_blocks()):
                Q_i @ ctx.load("K", j).T

    def loops_made_in_an_iteration_run_after_it(ctx):
        loops = [ctx.kv_blocks() for i in ctx.q_blocks()]    # each belongs to its iteration i
        for loop in loops:
            for j in loop:
                ctx.load("K", j)

    with pytest.raises(ScheduleError, match=r"a loop was run or resumed outside the iteration it was made in \(at "
                                            r"iteration i=0\), which has another loop open inside it: loops must nest"):
        run(two_loops_in_step, mode)
    with pytest.raises(ScheduleError, match=r"a loop was run or resumed outside the iteration it was made in \(at "
                                            r"iteration i=0\), which has ended"):
        run(loops_made_in_an_iteration_run_after_it, mode)


# -- (d) one name, two tiles --------------------------------------------------------------

def load_k_twice(ctx):
    for i in ctx.q_blocks():
        for j in ctx.kv_blocks():
            first = ctx.load("K", j)
            second = ctx.load("K", j)
            first + second


def load_k_twice_under_two_names(ctx):
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        for j in ctx.kv_blocks():
            K_j, V_j = ctx.load("K", j), ctx.load("V", j)
            again = ctx.load("K", j, name="K_j again")
            ctx.keep("S_ij", Q_i @ K_j.T + Q_i @ again.T, role="scores") @ V_j


@pytest.mark.parametrize("mode", MODES)
def test_loading_a_tile_twice_under_one_name_replaces_it(mode):
    """ScheduleError: the second load of K_j takes the first one's place."""
    with pytest.raises(ScheduleError, match=r"\+: tile K_j \(loaded at iteration i=0, j=0\) was released when "
                                            r"ctx.load\('K', …\) at iteration i=0, j=0 " + REPLACED):
        run(load_k_twice, mode)


@pytest.mark.parametrize("mode", MODES)
def test_two_copies_under_two_names_are_both_charged(mode):
    """Both copies held: Q_i + 2 K_j + V_j = 16 KiB is the SRAM peak, and CapacityError below it."""
    r = run(load_k_twice_under_two_names, mode)
    assert r.sram.peak_bytes == 4 * TILE
    assert [name for name, _, _ in r.sram.peak_tiles] == ["Q_i", "K_j", "V_j", "K_j again"]
    with pytest.raises(CapacityError, match="K_j 4,096 B.*K_j again 4,096 B"):
        run(load_k_twice_under_two_names, mode, sram_bytes=4 * TILE - 1)
