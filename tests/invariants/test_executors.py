"""Sweeps on an executor: chunks of equal estimated cost, results in the order asked, the
bar advancing as chunks finish; the Dask path on a local cluster (loopback only)."""

import io

import pytest

from iosim.errors import ProblemError
from iosim.studies.bounds import check_bounds
from iosim.studies.executors import DaskExecutor, InlineExecutor, LocalExecutor, make_executor
from iosim.studies.progress import cost_chunks, progress_map


def _negate(x):
    return -x


def test_chunks_balance_cost_and_cover_every_item_once():
    cost = [1] * 20 + [50] + [1] * 20
    chunks = cost_chunks(len(cost), cost, 4)
    assert sorted(i for c in chunks for i in c) == list(range(len(cost)))
    assert 20 in chunks[0]  # the costliest run starts first
    assert all(c == list(range(c[0], c[-1] + 1)) for c in chunks)  # runs of consecutive items


@pytest.mark.parametrize("executor", [InlineExecutor(), LocalExecutor(2)])
def test_results_come_back_in_item_order(executor):
    items = list(range(-300, 300))
    assert progress_map(_negate, items, executor=executor, cost=[abs(i) for i in items]) == [-i for i in items]


def test_the_bar_advances_as_chunks_finish():
    stream = io.StringIO()
    progress_map(_negate, range(1000), executor=LocalExecutor(2), progress=True, stream=stream)
    assert stream.getvalue() == "" or "1,000/1,000" in stream.getvalue()  # drawn only after delay_s


def test_executor_choices_are_checked():
    with pytest.raises(ProblemError, match="unknown executor"):
        make_executor("spark")
    with pytest.raises(ProblemError, match="needs scheduler"):
        make_executor("dask")
    with pytest.raises(ProblemError, match="goes with executor='dask'"):
        make_executor("local", scheduler="tcp://127.0.0.1:8786")


def test_bounds_on_a_local_dask_cluster_equals_local_processes():
    distributed = pytest.importorskip("distributed", reason="the Dask executor needs dask.distributed")
    args = dict(seq_lens=[1024, 2048], head_dims=[64], progress=False)
    local = check_bounds("fa-paper-a100", ["fa1", "fa2"], **args, jobs=2)
    # worker threads in this process, but the scheduler and workers talk TCP on the loopback
    # address: every task is pickled and shipped as it would be to another machine
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        dask = check_bounds("fa-paper-a100", ["fa1", "fa2"], **args,
                            executor=make_executor("dask", scheduler=cluster.scheduler_address))
    assert dask.to_dict() == local.to_dict()


def test_an_absent_scheduler_is_a_clear_error():
    pytest.importorskip("distributed", reason="the Dask executor needs dask.distributed")
    with pytest.raises(ProblemError, match="no Dask scheduler answers"):
        check_bounds("fa-paper-a100", ["fa1"], seq_lens=[1024], head_dims=[64], progress=False,
                     executor=DaskExecutor("tcp://127.0.0.1:9", connect_timeout_s=1))


@pytest.mark.parametrize("address", ["200", "tcp://", "127.0.0.1", "tcp://127.0.0.1:port", "a b:1"])
def test_a_malformed_scheduler_address_is_refused_before_connecting(address):
    pytest.importorskip("distributed", reason="the Dask executor needs dask.distributed")
    with pytest.raises(ProblemError, match="is not a Dask scheduler address"):
        make_executor("dask", scheduler=address)


def test_every_iosim_error_crosses_a_process_boundary_whole():
    """A sweep's worker raises; the parent re-raises what it unpickles: same type, message, fields."""
    import pickle

    from iosim.errors import CapacityError, ProfileError

    for exc in (ProblemError("bad N", field="seq_len"), CapacityError("too big", "choose smaller blocks", ("B_r=64",)),
                ProfileError("x.yaml", ["no levels"])):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc) and back.__dict__ == exc.__dict__
