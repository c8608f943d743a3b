import json
import math
from dataclasses import dataclass

import mpmath
import numpy as np
import pytest
from hypothesis import given, strategies as st

from attnphase.errors import ParameterError
from attnphase.jsonio import dumps
from attnphase.params import check_choice, check_int, check_real, check_real_list


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_check_real_accepts_exactly_the_finite_values_in_range(x):
    inside = math.isfinite(x) and 0.0 < x <= 1.0
    if inside:
        assert check_real("omega", x, 0.0, 1.0, low_open=True) == x
    else:
        with pytest.raises(ParameterError, match=r"omega.*\(0, 1\]"):
            check_real("omega", x, 0.0, 1.0, low_open=True)


@pytest.mark.parametrize("value", [None, True, [1.0], "abc", "nan", "inf", complex(1, 0)])
def test_check_real_rejects_wrong_types(value):
    with pytest.raises(ParameterError, match="sigma"):
        check_real("sigma", value, 0.0)


def test_check_int_and_choice():
    assert check_int("L", "16", 2) == 16
    assert check_int("L", 16.0, 2) == 16
    for bad in (1, 2.5, "two", True, float("nan")):
        with pytest.raises(ParameterError, match=r"L.*\[2, inf\)"):
            check_int("L", bad, 2)
    assert check_choice("attention", "softmax", ["softmax", "linear"]) == "softmax"
    with pytest.raises(ParameterError, match="attention.*'softmax', 'linear'"):
        check_choice("attention", "relu", ["softmax", "linear"])


def test_check_real_list():
    assert check_real_list("A", "0.6,0.4,0.4,0.6", 4) == [0.6, 0.4, 0.4, 0.6]
    with pytest.raises(ParameterError, match="exactly 4"):
        check_real_list("A", "0.6,0.4", 4)
    with pytest.raises(ParameterError, match="A"):
        check_real_list("A", "0.6,nan,0.4,0.6", 4)
    # audit b17 L1: an empty entry was dropped, so "0.6,0.4,,0.4,0.6" ran as four numbers; now refused as typed
    assert check_real_list("A", " 0.6, 0.4 ,0.4,0.6 ", 4) == [0.6, 0.4, 0.4, 0.6]
    for typed in ("0.6,0.4,,0.4,0.6", "0.6,0.4,0.4,0.6,", ",0.6,0.4,0.4,0.6"):
        with pytest.raises(ParameterError, match="no entry empty") as refused:
            check_real_list("A", typed, 4)
        assert refused.value.value == typed
    with pytest.raises(ParameterError, match="a non-empty list of numbers"):
        check_real_list("A", " ")


def test_json_never_prints_non_finite_numbers():
    @dataclass
    class Result:
        value: float
        values: np.ndarray
        precise: object

    text = dumps({"r": Result(float("nan"), np.array([1.0, np.inf]), mpmath.mpf("0.5")), "n": np.int64(3)})
    assert json.loads(text) == {"r": {"value": None, "values": [1.0, None], "precise": 0.5}, "n": 3}


def test_a_results_arrays_are_read_only_and_the_callers_stay_writeable():
    """Audit a17: `curve.J[0] = 99.0` changed a signal-recovery curve (and its to_pandas()) in place."""
    from attnphase.api import signal_recovery as sr
    from attnphase.results import Result, Status

    curve = sr.curve(sr.make_parameters(16, 64, 8, 1.0), [0.0, 0.5])
    before = curve.J.copy()
    with pytest.raises(ValueError, match="read-only"):
        curve.J[0] = 99.0
    assert np.array_equal(curve.J, before) and curve.to_pandas()["J"].tolist() == before.tolist()

    @dataclass(frozen=True)
    class Values(Result):
        x: np.ndarray
        status: Status
        message: str

    given = np.arange(3.0)
    held = Values(given, Status.CONVERGED, "")
    given[0] = 7.0  # the caller's array is not frozen by handing it over
    assert not held.x.flags.writeable and held.x[0] == 7.0 and given.flags.writeable


def test_arrays_in_a_results_frozen_parts_are_read_only_and_a_mutable_part_is_left_alone():
    """Audit c18: `c_trace[0] = 99` on a chain of a `simulate_hysteresis` point changed the result (the arrays of
    a result's parts were writeable). Frozen parts in tuples, at any depth, hold read-only views; a mutable
    dataclass (a solver's cache) and lists stay the caller's."""
    from attnphase.results import Result, Status

    @dataclass(frozen=True)
    class Chain:
        trace: np.ndarray

    @dataclass(frozen=True)
    class Point:
        chains: tuple

    @dataclass
    class Cache:
        values: np.ndarray

    @dataclass(frozen=True)
    class Run(Result):
        points: tuple
        cache: Cache
        listed: list
        status: Status
        message: str

    trace, cached, in_list = np.arange(3.0), np.zeros(2), np.ones(2)
    run = Run((Point((Chain(trace),)),), Cache(cached), [in_list], Status.CONVERGED, "")
    with pytest.raises(ValueError, match="read-only"):
        run.points[0].chains[0].trace[0] = 99.0
    assert run.points[0].chains[0].trace[0] == 0.0 and trace.flags.writeable
    run.cache.values[0] = 5.0  # a mutable part is the caller's to change
    run.listed[0][0] = 5.0
    assert cached[0] == 5.0 and in_list[0] == 5.0
