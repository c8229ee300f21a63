"""Numeric mode multiplies small tiles on one BLAS thread (issue 15: a threaded OpenBLAS made
a run 50× slower on a busy machine), and gives the caller's thread settings back after."""

from threadpoolctl import threadpool_info

from iosim import Problem, simulate


def blas_threads() -> list:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_numeric_runs_use_one_blas_thread_and_restore_the_setting():
    seen = []

    def schedule(ctx):
        for i in ctx.q_blocks():
            Q_i = ctx.load("Q", i)
            seen.append(blas_threads())
            ctx.store("O", i, Q_i * 0.0)

    before = blas_threads()
    simulate("toy", schedule, Problem(seq_len=64, head_dim=16), blocks=(32, 32), mode="numeric")
    assert seen and all(threads == [1] * len(before) for threads in seen)
    assert blas_threads() == before
