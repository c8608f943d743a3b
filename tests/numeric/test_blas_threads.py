"""numpy's BLAS on one thread while the positional-semantic solvers run, the caller's limits restored afterwards."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from attnphase.models.positional_semantic import curve, point, thresholds
from attnphase.numeric.blas_threads import one_blas_thread


def blas_threads() -> set[int]:
    return {library["num_threads"] for library in threadpool_info() if library["user_api"] == "blas"}


class Reached(Exception):
    """Raised by a stand-in for a solver's first step: the call got that far."""


def recording(seen: list):
    def first_step(*args, **kwargs):
        seen.append(blas_threads())
        raise Reached
    return first_step


@pytest.fixture
def two_blas_threads():
    """The caller's BLAS on two threads (the pool numpy starts on a two-core machine), whatever the environment set."""
    np.ones(1) @ np.ones(1)  # numpy's BLAS loaded
    with threadpool_limits(limits=2, user_api="blas"):
        if blas_threads() != {2}:
            pytest.fail(f"the BLAS pool did not take two threads: {threadpool_info()}")
        yield


def test_one_blas_thread_inside_and_the_callers_count_after(two_blas_threads):
    with one_blas_thread():
        assert blas_threads() == {1}
    assert blas_threads() == {2}


@pytest.mark.parametrize("entry, patched, call", [
    ("threshold", (thresholds, "linear_baseline"), lambda: thresholds.threshold(0.3)),
    ("phase_curve", (curve, "linear_baseline"), lambda: curve.phase_curve([0.3, 0.2])),
    ("solve_along", (point, "follow"), lambda: list(point.solve_along(0.3, [1.25]))),
])
def test_the_solvers_run_with_one_blas_thread(two_blas_threads, monkeypatch, entry, patched, call):
    seen: list = []
    monkeypatch.setattr(*patched, recording(seen))
    with pytest.raises(Reached):
        call()
    assert seen == [{1}], entry
    assert blas_threads() == {2}, f"{entry} left the caller's BLAS limited"
