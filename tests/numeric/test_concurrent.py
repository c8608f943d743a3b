"""Jobs side by side on worker threads: the results of the jobs in turn, on their own threads, one numba thread each."""

from __future__ import annotations

import threading

import numba
import pytest

from attnphase.numeric.concurrent import map_side_by_side

two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                 reason="needs a machine where numba may use two threads (two cores)")


@pytest.fixture
def numba_threads():
    """Sets the test's numba thread count (`numba_threads(n)`) and gives the caller's back afterwards (the suite's
    workers run on one: tests/conftest.py)."""
    previous = numba.get_num_threads()
    yield numba.set_num_threads
    numba.set_num_threads(previous)


@two_threads
def test_jobs_run_at_once_on_workers_with_one_numba_thread_and_keep_their_order(numba_threads):
    numba_threads(2)
    meeting = threading.Barrier(2, timeout=30)  # broken (an exception) unless two jobs wait on it at the same time
    caller = threading.get_ident()

    def job(k):
        meeting.wait()
        return k * k, threading.get_ident(), numba.get_num_threads()

    results = map_side_by_side(job, [3, 1, 2, 5])
    assert [r[0] for r in results] == [9, 1, 4, 25]
    assert {r[2] for r in results} == {1}
    assert caller not in {r[1] for r in results} and len({r[1] for r in results}) == 2
    assert numba.get_num_threads() == 2  # the caller's count is its own


def test_one_numba_thread_runs_the_jobs_in_the_callers_thread(numba_threads):
    numba_threads(1)
    caller = threading.get_ident()
    assert map_side_by_side(lambda k: (k + 1, threading.get_ident()), [1, 2]) == [(2, caller), (3, caller)]


@pytest.mark.parametrize("threads", [1, 2])
def test_a_jobs_exception_reaches_the_caller(numba_threads, threads):
    """In the caller's thread and from a worker (two numba threads), the job's own exception, raised in the caller."""
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("needs a machine where numba may use two threads (two cores)")
    numba_threads(threads)
    caller = threading.get_ident()
    raised_on = []

    def job(k):
        if k == 2:
            raised_on.append(threading.get_ident())
            raise ValueError("job 2")
        return k

    with pytest.raises(ValueError, match="job 2"):
        map_side_by_side(job, [1, 2, 3])
    assert (raised_on == [caller]) == (threads == 1)
