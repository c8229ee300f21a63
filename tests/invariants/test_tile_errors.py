"""Tile arithmetic a schedule gets wrong is a ScheduleError naming the problem, in every mode
(never a ValueError, TypeError or AttributeError from deep inside NumPy)."""

import numpy as np
import pytest

from iosim import Problem, ScheduleError, simulate

SMALL = Problem(seq_len=128, head_dim=32)


def product_of_mismatched_tiles(ctx):
    for i in ctx.q_blocks():
        Q_i = ctx.load("Q", i)
        Q_i @ Q_i                                      # (64, 32) @ (64, 32)


def row_vector_meets_matrix_without_col(ctx):
    for i in ctx.q_blocks():
        for j in ctx.kv_blocks():
            S = ctx.load("Q", i) @ ctx.load("K", j).T
            S - S.rowmax()                             # (64, 32) - (64,): needs .col()


def product_with_an_array(ctx):
    for i in ctx.q_blocks():
        ctx.load("Q", i) @ np.ones((32, 32))


def sum_with_a_string(ctx):
    for i in ctx.q_blocks():
        ctx.load("Q", i) + "1"


def column_of_a_matrix(ctx):
    for i in ctx.q_blocks():
        ctx.load("Q", i).col()


def transpose_of_a_vector(ctx):
    for i in ctx.q_blocks():
        ctx.load("Q", i).rowmax().T


@pytest.mark.parametrize("mode", ["count", "trace", "numeric"])
@pytest.mark.parametrize("schedule,message", [
    (product_of_mismatched_tiles, r"matmul shapes \(64, 32\) @ \(64, 32\) do not match"),
    (row_vector_meets_matrix_without_col, r"shapes \(64, 32\) and \(64,\) do not combine"),
    (product_with_an_array, r"a matrix product is of two tiles"),
    (sum_with_a_string, r"an operand is a tile or a number"),
    (column_of_a_matrix, r"col\(\) applies to a per-row vector"),
    (transpose_of_a_vector, r"\.T applies to a matrix tile"),
])
def test_wrong_tile_arithmetic_is_a_schedule_error(schedule, message, mode):
    with pytest.raises(ScheduleError, match=message):
        simulate("fa-paper-a100", schedule, SMALL, blocks=(64, 32), mode=mode)
