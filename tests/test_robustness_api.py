"""Bad input to the public Python entry points: a ParameterError naming the parameter and its allowed
range, or a result whose status says it failed; never another exception, never a NaN behind a
success status.

Covered: attnphase.api.copy_heads (solve, threshold, scaling, simulate), attnphase.numeric
(gaussian_expectation, sobol_expectation, solve_fixed_point and its solvers, follow_until_lost, find_crossing,
integrate_drift, fixed_points_1d, fit_power_law), derive.codegen.compile_kernel, validate (select_device,
generator, compare), store.ResultStore and grids.parse_grid.

Each test counts the inputs it tried in TALLY; `pytest -s` prints the table at the end of the module.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st

from attnphase.api import copy_heads as ch
from attnphase.derive.codegen import compile_kernel
from attnphase.errors import ParameterError
from attnphase.grids import parse_grid
from attnphase.models.copy_heads import DEFAULT, Convention
from attnphase.numeric import (
    Anderson,
    Damped,
    Hybr,
    find_crossing,
    fit_power_law,
    fixed_points_1d,
    follow_until_lost,
    gaussian_expectation,
    integrate_drift,
    sobol_expectation,
    solve_fixed_point,
)
from attnphase.store import ResultStore
from attnphase.validate.compare import compare
from attnphase.validate.device import select_device
from attnphase.validate.seeds import generator

TALLY: Counter = Counter()
# The hypothesis profile of tests/conftest.py sets the number of examples and the randomness; a test
# sets a smaller count only where each example is expensive, as a fraction of the profile's count.
PROFILE_EXAMPLES = settings.default.max_examples


@pytest.fixture(scope="module", autouse=True)
def print_tally():
    yield
    print("\ninputs tried per entry point (test_robustness_api):")
    for name, count in sorted(TALLY.items()):
        print(f"  {name:40s} {count:6d}")


# -- strategies --------------------------------------------------------------------------------------
NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])
WRONG_TYPE = st.sampled_from([None, "abc", "", [1.0], {"a": 1}, object(), True, 1j])
NEGATIVE = st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=False)
HUGE = st.floats(min_value=1e300, max_value=1.7e308)
TINY = st.floats(min_value=5e-324, max_value=1e-300)


def bad_positive():
    """Values that a parameter allowed in (0, inf) must reject."""
    return st.one_of(NON_FINITE, WRONG_TYPE, NEGATIVE, st.just(0.0), st.just(-0.0))


def bad_int(low: int, none_allowed: bool = False):
    """Values that an integer parameter in [low, ...] must reject (None too, unless it means a default)."""
    wrong = WRONG_TYPE.filter(lambda v: v is not None) if none_allowed else WRONG_TYPE
    return st.one_of(NON_FINITE, wrong, st.integers(max_value=low - 1), st.sampled_from([2.5, -1.5, 1e400]))


def raises_named(name: str, fn, *args, **kwargs) -> ParameterError:
    """fn(*args) must raise ParameterError naming `name` with a non-empty allowed range."""
    with pytest.raises(ParameterError) as info:
        fn(*args, **kwargs)
    err = info.value
    assert err.name == name, f"error names {err.name!r}, expected {name!r}: {err}"
    assert err.allowed and name in str(err)
    return err


def finite_numbers(obj) -> bool:
    """True when every float inside obj (dataclasses, dicts, lists, arrays) is finite."""
    import dataclasses

    if isinstance(obj, (bool, str)) or obj is None:
        return True
    if isinstance(obj, (int, float, np.floating, np.integer)):
        return math.isfinite(float(obj))
    if isinstance(obj, np.ndarray):
        return bool(np.all(np.isfinite(obj))) if obj.dtype.kind in "fc" else True
    if dataclasses.is_dataclass(obj):
        return all(finite_numbers(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    if isinstance(obj, dict):
        return all(finite_numbers(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(finite_numbers(v) for v in obj)
    return True


# -- copy heads: bad parameters ---------------------------------------------------------------------
@given(which=st.sampled_from(["L", "V", "P", "attention", "convention"]), data=st.data())
def test_copy_heads_solve_rejects_bad_parameters(which, data):
    TALLY["copy_heads.solve (bad)"] += 1
    args = {"attention": "softmax", "L": 8, "V": 4, "P": 100.0, "convention": DEFAULT}
    bad = {"L": bad_int(2), "V": bad_int(2), "P": bad_positive(),
           "attention": st.one_of(WRONG_TYPE, st.sampled_from(["Softmax", "relu", "linear "])),
           "convention": st.one_of(WRONG_TYPE, st.just({"beta": 1.0}))}[which]
    args[which] = data.draw(bad)
    raises_named(which, ch.solve, args["attention"], args["L"], args["V"], args["P"], args["convention"])


@given(field=st.sampled_from(["beta", "tau0", "sigma2", "s1", "boundary", "P_counts", "loss", "remainder"]), data=st.data())
def test_copy_heads_convention_rejects_bad_fields(field, data):
    TALLY["copy_heads.Convention (bad)"] += 1
    value = data.draw(bad_positive() if field in ("beta", "tau0", "sigma2", "s1") else st.one_of(WRONG_TYPE, st.just("x")))
    raises_named(field, Convention, **{field: value})


def test_copy_heads_drop_first_needs_three_positions():
    TALLY["copy_heads.solve (bad)"] += 1
    err = raises_named("L", ch.solve, "softmax", 2, 4, 10.0, DEFAULT.with_(boundary="drop-first"))
    assert ">= 3" in err.allowed


@given(which=st.sampled_from(["L", "V", "digits", "reduction", "attention"]), data=st.data())
def test_copy_heads_threshold_rejects_bad_parameters(which, data):
    TALLY["copy_heads.threshold (bad)"] += 1
    args = {"attention": "linear", "L": 8, "V": 4, "digits": 15, "reduction": "convention-a"}
    bad = {"L": bad_int(2), "V": bad_int(2), "digits": st.one_of(bad_int(1), st.integers(min_value=101)),
           "reduction": st.one_of(WRONG_TYPE, st.just("convention-b")), "attention": st.just("tanh")}[which]
    args[which] = data.draw(bad)
    raises_named(which, ch.threshold, args["attention"], args["L"], args["V"], args["digits"], DEFAULT,
                 reduction=args["reduction"])


@given(L_min=st.integers(2, 40), span=st.integers(-40, 0))
def test_copy_heads_scaling_needs_three_values_of_L(L_min, span):
    """Reversed ranges and ranges holding fewer than 3 values of L name L_max (the fit needs 3)."""
    TALLY["copy_heads.scaling (bad)"] += 1
    L_max = L_min + span  # L_max <= L_min: reversed or a single value
    if L_max < 2:
        raises_named("L_max", ch.scaling, "softmax", 4, L_min, max(L_max, -5))
        return
    raises_named("L_max", ch.scaling, "softmax", 4, L_min, L_max)


def test_copy_heads_scaling_bad_lists():
    for values in ([], [16], [16, 16, 32], [16, 32, math.nan], [16, 32, 1]):
        TALLY["copy_heads.scaling (bad)"] += 1
        raises_named("L_values", ch.scaling, "softmax", 4, 16, 64, L_values=values)
    for values in ([], [4, 8], [4, 8, 1.5]):
        TALLY["copy_heads.scaling_in_V (bad)"] += 1
        raises_named("V_values", ch.scaling_in_V, "linear", 16, values)


@given(which=st.sampled_from(["P", "L", "trials", "steps", "algorithm", "device", "seed", "qk_width"]), data=st.data())
def test_copy_heads_simulate_rejects_bad_parameters(which, data):
    TALLY["copy_heads.simulate (bad)"] += 1
    args = {"P": 16.0, "L": 4, "trials": 2, "steps": 10, "algorithm": "mala", "device": "cpu", "seed": 0, "qk_width": None}
    bad = {"P": st.one_of(bad_positive(), st.floats(1e12, 1e300)),  # huge P: more sequences than memory holds
           "L": st.one_of(bad_int(2), st.integers(10**4, 10**6)),  # huge L: L²V² statistics per chain
           "trials": st.one_of(bad_int(1), st.integers(4097, 10**9)),
           "steps": st.one_of(bad_int(10), st.integers(10**7 + 1, 10**12)),
           "algorithm": st.sampled_from(["hmc", "sgld"]), "device": st.one_of(st.just("gpu"), st.just(3)),
           "seed": st.one_of(st.integers(max_value=-1), st.integers(min_value=2**63), st.just(1.5)),
           "qk_width": st.one_of(st.integers(-5, -1), st.integers(1, 3))}[which]  # 0: the wide limit; else >= L
    args[which] = data.draw(bad)
    raises_named(which, ch.simulate, "softmax", args.pop("L"), 4, args.pop("P"), **args)


# -- copy heads: extreme but valid parameters ---------------------------------------------------------
LOG_REAL = st.floats(-700, 700).map(math.exp)  # 1e-304 .. 1e304, log-uniform


@settings(max_examples=max(1, PROFILE_EXAMPLES * 3 // 10))  # each example solves the reduced action
@given(attention=st.sampled_from(ch.ATTENTIONS), L=st.integers(2, 64), V=st.integers(2, 64), P=LOG_REAL,
       sigma2=LOG_REAL, tau0=LOG_REAL, beta=LOG_REAL)
def test_copy_heads_solve_extremes_are_finite_or_failed(attention, L, V, P, sigma2, tau0, beta):
    """Huge P, huge σ², tiny τ and friends: a converged result holds only finite numbers and a
    stable global minimum; otherwise the status says "failed" with a message."""
    TALLY["copy_heads.solve (extreme)"] += 1
    conv = DEFAULT.with_(sigma2=sigma2, tau0=tau0, beta=beta)
    r = ch.solve(attention, L, V, P, conv)
    assert r.status in ("converged", "failed")
    if r.status == "converged":
        assert finite_numbers(r.minima) and math.isfinite(r.n)
        assert r.global_minimum.stable
        assert all(mn.action >= r.global_minimum.action for mn in r.minima if mn.stable)
    else:
        assert r.global_index is None and "solvable range" in r.message


@settings(max_examples=max(1, PROFILE_EXAMPLES // 16))  # each example locates a threshold (about a second)
@given(attention=st.sampled_from(ch.ATTENTIONS), L=st.integers(2, 12), V=st.integers(2, 6), digits=st.integers(1, 12),
       sigma2=st.floats(-5, 7).map(math.exp))
def test_copy_heads_threshold_statuses_are_honest(attention, L, V, digits, sigma2):
    TALLY["copy_heads.threshold (valid)"] += 1
    r = ch.threshold(attention, L, V, digits, DEFAULT.with_(sigma2=sigma2))
    assert r.status in ("converged", "limited", "not_found", "failed")
    if r.status == "converged":
        assert math.isfinite(r.P_star) and r.P_star > 0 and math.isfinite(r.error) and r.error >= 0
        assert len(r.P_star_digits.replace(".", "").replace("-", "").split("e")[0].lstrip("0")) <= digits + 1
    if r.status == "not_found":
        assert r.order == "none" and r.message


def test_copy_heads_threshold_huge_prior_variance():
    """σ² = 800 overflowed e^{σ²} (the participation of the non-copy weights) before the fix."""
    for attention in ch.ATTENTIONS:
        TALLY["copy_heads.threshold (valid)"] += 1
        r = ch.threshold(attention, 16, 4, 10, DEFAULT.with_(sigma2=800.0))
        assert r.status in ("converged", "not_found", "limited", "failed")
        assert r.status != "converged" or math.isfinite(r.P_star)


def test_copy_heads_simulate_tiny_runs_are_finite():
    for attention, trials in (("softmax", 2), ("linear", 2)):
        TALLY["copy_heads.simulate (valid)"] += 1
        out = ch.simulate(attention, 4, 2, 8.0, trials=trials, steps=40, device="cpu")
        assert out.status in ("converged", "poor_mixing")
        for chain in out.chains:
            assert finite_numbers(chain)
        for comparison in out.comparisons:
            assert math.isfinite(comparison.theory) and math.isfinite(comparison.mean)


# -- numeric ------------------------------------------------------------------------------------------
def _mean_square(z):
    return np.sum(z**2, axis=1)


@given(which=st.sampled_from(["tol", "rtol", "method", "nodes_per_dim", "max_nodes_per_dim", "seed", "mean", "cov"]),
       data=st.data())
def test_gaussian_expectation_rejects_bad_parameters(which, data):
    TALLY["numeric.gaussian_expectation (bad)"] += 1
    kwargs = {"mean": [0.0, 0.0], "cov": [[1.0, 0.2], [0.2, 1.0]]}
    bad = {"tol": bad_positive(), "rtol": st.one_of(NON_FINITE, NEGATIVE, st.floats(1.0001, 1e300)),
           "method": st.one_of(WRONG_TYPE, st.just("gauss")), "nodes_per_dim": bad_int(1, none_allowed=True),
           "max_nodes_per_dim": bad_int(2, none_allowed=True), "seed": st.integers(max_value=-1),
           "mean": st.one_of(st.just([math.nan, 0.0]), st.just([[0.0, 1.0]]), st.just([math.inf])),
           "cov": st.sampled_from([[[1.0, 0.5], [0.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]], [1.0, 2.0, 3.0],
                                   [[1.0, 0.0, 0.0]] * 3, [[math.nan, 0.0], [0.0, 1.0]], -1.0])}[which]
    kwargs[which] = data.draw(bad)
    raises_named(which, gaussian_expectation, _mean_square, **kwargs)


def test_gaussian_expectation_bad_integrands():
    TALLY["numeric.gaussian_expectation (bad)"] += 3
    raises_named("f", gaussian_expectation, lambda z: np.ones(3), 0.0, 1.0)
    for method in ("hermite", "sobol"):
        r = gaussian_expectation(lambda z: np.where(z[:, 0] > 0, np.nan, 1.0), 0.0, 1.0, method=method)
        assert not r.converged and "non-finite" in r.message


@given(which=st.sampled_from(["n_points", "replicates", "seed"]), data=st.data())
def test_sobol_expectation_rejects_bad_parameters(which, data):
    TALLY["numeric.sobol_expectation (bad)"] += 1
    kwargs = {"n_points": 2**8, "replicates": 4, "seed": 0}
    kwargs[which] = data.draw({"n_points": st.one_of(bad_int(2), st.sampled_from([3, 100, 2**21])),
                               "replicates": bad_int(2), "seed": st.integers(max_value=-1)}[which])
    raises_named(which, sobol_expectation, _mean_square, [0.0], 1.0, **kwargs)


@given(which=st.sampled_from(["solver", "damping", "tol", "memory", "map_error", "max_iter", "x0", "transforms"]),
       data=st.data())
def test_solve_fixed_point_rejects_bad_parameters(which, data):
    """Bad settings of the solve, and of the solver values themselves (Damped, Anderson, Hybr)."""
    TALLY["numeric.solve_fixed_point (bad)"] += 1
    from attnphase.numeric import Positive

    kwargs = {"x0": [0.5, 0.5]}
    solver_fields = {"damping": (st.one_of(NON_FINITE, NEGATIVE, st.floats(1.0, 1e300)), (Damped, Anderson)),
                     "memory": (bad_int(1), (Anderson,)), "max_iter": (bad_int(1), (Damped, Anderson))}
    if which in solver_fields:
        strategy, solvers = solver_fields[which]
        solver = data.draw(st.sampled_from(solvers))
        raises_named(which, solver, **{which: data.draw(strategy)})
        return
    bad = {"solver": st.sampled_from(["newton", 3, object()]), "tol": bad_positive(),
           "map_error": st.one_of(NON_FINITE, NEGATIVE),
           "x0": st.sampled_from([[], [math.nan, 0.0], [[math.inf]], [-1.0, 1.0]]),
           "transforms": st.sampled_from([[Positive()], ["log", "log"], [Positive()] * 3])}[which]
    kwargs[which] = data.draw(bad)
    if which == "x0" and kwargs["x0"] == [-1.0, 1.0]:
        kwargs["transforms"] = Positive()  # -1 is outside (0, inf)
    raises_named(which, solve_fixed_point, lambda x: 0.5 * x, **kwargs)


@given(a=st.floats(-3, 3), b=st.floats(-1e3, 1e3), solver=st.sampled_from([Hybr(max_evaluations=2000),
                                                                             Anderson(max_iter=2000),
                                                                             Damped(max_iter=2000)]))
def test_solve_fixed_point_affine_maps(a, b, solver):
    """x = a x + b: the fixed point b/(1 − a) exists for a != 1; whatever the solver reports, a
    success is a true fixed point with a finite value whose spectral radius |a| lies within its error (and is
    called stable exactly when it is below 1 by more than that), and a failure has a status and a message."""
    TALLY["numeric.solve_fixed_point (maps)"] += 1
    r = solve_fixed_point(lambda x: a * x + b, 0.0, solver, tol=1e-9)
    if r.success:
        assert math.isfinite(r.value) and abs(a * r.value + b - r.value) <= 1e-9
        assert abs(r.spectral_radius - abs(a)) <= r.spectral_radius_error
        assert r.stable == (r.spectral_radius < 1 - r.spectral_radius_error)
        if abs(abs(a) - 1) > 2 * r.spectral_radius_error:  # otherwise marginal: either side of 1 is possible
            assert r.stable == (abs(a) < 1)
        else:
            assert not r.stable or "marginal" not in r.message
    else:
        assert r.status in ("max_iter", "diverged", "failed") and r.message


@given(which=st.sampled_from(["start", "stop", "step", "tol"]), data=st.data())
def test_follow_until_lost_rejects_bad_controls(which, data):
    TALLY["numeric.follow_until_lost (bad)"] += 1
    kwargs = {"start": 0.0, "stop": 1.0, "step": 0.1, "tol": 1e-3}
    kwargs[which] = data.draw(st.one_of(NON_FINITE, WRONG_TYPE) if which in ("start", "stop") else bad_positive())
    raises_named(which, follow_until_lost, lambda c, guess: c, lambda solution, prediction: None,
                 lambda solution: np.array([solution]), **kwargs)


@given(which=st.sampled_from(["lo", "hi", "digits", "n_scan", "f_error"]), data=st.data())
def test_find_crossing_rejects_bad_parameters(which, data):
    TALLY["numeric.find_crossing (bad)"] += 1
    kwargs = {"lo": 0.0, "hi": 2.0, "digits": 10, "n_scan": 16, "f_error": None}
    bad = {"lo": st.one_of(NON_FINITE, WRONG_TYPE), "hi": st.one_of(NON_FINITE, st.floats(-1e300, 0.0)),
           "digits": st.one_of(bad_int(1), st.integers(1001, 10**9)), "n_scan": bad_int(1),
           "f_error": st.one_of(NON_FINITE, NEGATIVE)}[which]
    kwargs[which] = data.draw(bad)
    lo, hi = kwargs.pop("lo"), kwargs.pop("hi")
    raises_named(which, find_crossing, lambda x: x - 1.0, lo, hi, **kwargs)


@given(shift=st.floats(-10, 10), poison=st.sampled_from([None, "nan", "raise", "inf"]))
def test_find_crossing_statuses(shift, poison):
    TALLY["numeric.find_crossing (functions)"] += 1

    def f(x):
        if poison == "raise" and x > 1.5:
            raise ValueError("outside")
        if poison in ("nan", "inf") and x > 1.5:
            return math.nan if poison == "nan" else math.inf
        return x - shift

    r = find_crossing(f, 0.0, 2.0, digits=12)
    assert r.status in ("converged", "limited", "not_found", "failed") and r.message
    if r.status == "converged":
        assert math.isfinite(r.value) and abs(r.value - shift) <= 1e-12 * max(1, abs(shift)) + r.error
    else:
        assert r.status != "converged"


@given(which=st.sampled_from(["method", "rtol", "atol", "t_span", "x0", "t_eval", "bounds"]), data=st.data())
def test_integrate_drift_rejects_bad_parameters(which, data):
    TALLY["numeric.integrate_drift (bad)"] += 1
    kwargs = {"x0": [1.0], "t_span": (0.0, 1.0)}
    bad = {"method": st.just("RK4"), "rtol": bad_positive(), "atol": bad_positive(),
           "t_span": st.sampled_from([(0.0, 0.0), (0.0,), (0.0, math.nan), "0,1", (math.inf, 1.0)]),
           "x0": st.sampled_from([[], [math.nan], [math.inf, 1.0]]),
           "t_eval": st.sampled_from([[2.0], [math.nan], [-1.0, 0.5]]),
           "bounds": st.sampled_from([[(0.0, 2.0), (0.0, 2.0)], [(2.0, None)], [(math.nan, None)]])}[which]
    kwargs[which] = data.draw(bad)
    x0, t_span = kwargs.pop("x0"), kwargs.pop("t_span")
    name = "x0" if which == "bounds" and kwargs["bounds"] == [(2.0, None)] else which
    name = "bounds[0]" if which == "bounds" and kwargs["bounds"] == [(math.nan, None)] else name
    if which == "t_span" and t_span == (0.0, math.nan):
        name = "t_span[1]"
    if which == "t_span" and t_span == (math.inf, 1.0):
        name = "t_span[0]"
    raises_named(name, integrate_drift, lambda x: -x, x0, t_span, **kwargs)


@given(rate=st.floats(-50, 50), poison=st.sampled_from([None, "nan", "raise"]))
def test_integrate_drift_statuses(rate, poison):
    TALLY["numeric.integrate_drift (drifts)"] += 1

    def drift(x):
        if poison == "raise" and abs(x) > 3:
            raise OverflowError("boom")
        if poison == "nan" and abs(x) > 3:
            return math.nan
        return rate * x

    tr = integrate_drift(drift, 1.0, (0.0, 1.0), rtol=1e-8, atol=1e-10)
    assert tr.status in ("converged", "failed", "lost") and tr.message
    if tr.success:
        assert np.all(np.isfinite(tr.x)) and abs(tr.x[-1] - math.exp(rate)) <= 1e-6 * math.exp(rate) + 1e-8


@given(which=st.sampled_from(["lo", "hi", "n_grid"]), data=st.data())
def test_fixed_points_1d_rejects_bad_parameters(which, data):
    TALLY["numeric.fixed_points_1d (bad)"] += 1
    kwargs = {"lo": -1.0, "hi": 1.0, "n_grid": 11}
    kwargs[which] = data.draw({"lo": st.one_of(NON_FINITE, WRONG_TYPE), "hi": st.one_of(NON_FINITE, st.floats(-1e300, -1.0)),
                               "n_grid": bad_int(3)}[which])
    raises_named(which, fixed_points_1d, lambda x: -x, kwargs["lo"], kwargs["hi"], n_grid=kwargs["n_grid"])


def test_fixed_points_1d_nonfinite_drift_gives_no_false_roots():
    TALLY["numeric.fixed_points_1d (drifts)"] += 1
    pts = fixed_points_1d(lambda x: np.where(np.abs(x) < 0.5, np.nan, x), -1.0, 1.0, n_grid=101)
    assert pts == []  # the sign change of x is inside the NaN region: nothing may be invented


@given(which=st.sampled_from(["x", "y", "confidence", "log_power", "y_error", "corrections"]), data=st.data())
def test_fit_power_law_rejects_bad_parameters(which, data):
    TALLY["numeric.fit_power_law (bad)"] += 1
    kwargs = {"x": [2.0, 4.0, 8.0, 16.0], "y": [1.0, 2.0, 4.0, 8.0]}
    bad = {"x": st.sampled_from([[1.0, 4.0, 8.0, -1.0], [2.0, math.nan, 8.0, 16.0], [], [2.0, 2.0, 2.0, 2.0]]),
           "y": st.sampled_from([[1.0, 2.0], [1.0, 0.0, 4.0, 8.0], [1.0, math.inf, 4.0, 8.0], "a,b"]),
           "confidence": st.one_of(NON_FINITE, st.sampled_from([0.0, 1.0, -0.5, 1.5])),
           "log_power": st.one_of(NON_FINITE, WRONG_TYPE.filter(lambda v: not isinstance(v, str) or v == "abc")),
           "y_error": st.sampled_from([[0.1] * 3, [0.1, 0.1, 0.0, 0.1], [0.1, math.nan, 0.1, 0.1]]),
           "corrections": st.sampled_from([[math.nan], ["a"]])}[which]
    kwargs[which] = data.draw(bad)
    x, y = kwargs.pop("x"), kwargs.pop("y")
    raises_named(which, fit_power_law, x, y, **kwargs)


@given(slope=st.floats(-5, 5), noise=st.floats(0, 0.1), n=st.integers(3, 12))
def test_fit_power_law_band_is_finite(slope, noise, n):
    TALLY["numeric.fit_power_law (data)"] += 1
    x = np.geomspace(2, 1e4, n)
    y = 3.0 * x**slope * np.exp(noise * np.sin(7 * np.arange(n)))
    fit = fit_power_law(x, y)
    assert math.isfinite(fit.exponent) and fit.exponent_low <= fit.exponent <= fit.exponent_high
    if noise == 0:
        assert abs(fit.exponent - slope) < 1e-9


# -- derive.codegen -----------------------------------------------------------------------------------
_x, _y = sympy.symbols("x y")


@pytest.mark.parametrize("kwargs, name", [
    ({"exprs": _x + _y, "args": [_x]}, "args"),
    ({"exprs": _x, "args": [_x, _x]}, "args"),
    ({"exprs": _x, "args": ["x"]}, "args"),
    ({"exprs": _x, "args": 5}, "args"),
    ({"exprs": _x, "args": [_x], "backend": "jax"}, "backend"),
    ({"exprs": _x, "args": [_x], "compiler": "gcc"}, "compiler"),
    ({"exprs": [[_x]], "args": [_x]}, "exprs"),
    ({"exprs": [], "args": [_x]}, "exprs"),
    ({"exprs": "x +* (", "args": [_x]}, "exprs"),
    ({"exprs": object(), "args": [_x]}, "exprs"),
    ({"exprs": _x, "args": [_x], "stabilize": 5}, "stabilize"),
])
def test_compile_kernel_rejects_bad_arguments(kwargs, name):
    TALLY["derive.compile_kernel (bad)"] += 1
    kwargs = dict(kwargs)
    raises_named(name, compile_kernel, kwargs.pop("exprs"), kwargs.pop("args"), **kwargs)


# -- validate -----------------------------------------------------------------------------------------
@given(requested=st.one_of(st.text(max_size=6).filter(lambda s: s not in ("", "auto", "cpu", "cuda")),
                           st.sampled_from([3, 1.5, ["cpu"], True])))
def test_select_device_rejects_unknown(requested):
    TALLY["validate.select_device (bad)"] += 1
    raises_named("device", select_device, requested)


@given(seed=st.one_of(st.integers(max_value=-1), st.integers(min_value=2**63), NON_FINITE, st.sampled_from([1.5, "x", None])))
def test_generator_rejects_bad_seeds(seed):
    TALLY["validate.generator (bad)"] += 1
    raises_named("seed", generator, seed, "cpu")


@given(which=st.sampled_from(["theory", "theory_error", "n_sigma", "samples"]), data=st.data())
def test_compare_rejects_bad_parameters(which, data):
    TALLY["validate.compare (bad)"] += 1
    kwargs = {"theory": 1.0, "samples": [1.0, 1.1, 0.9], "theory_error": 0.0, "n_sigma": 3.0}
    bad = {"theory": st.one_of(NON_FINITE, WRONG_TYPE), "theory_error": st.one_of(NON_FINITE, NEGATIVE),
           "n_sigma": bad_positive(), "samples": st.sampled_from([[], [1.0, math.nan], [math.inf]])}[which]
    kwargs[which] = data.draw(bad)
    name = {"theory": "q theory", "theory_error": "q theory_error", "n_sigma": "n_sigma", "samples": "q samples"}[which]
    raises_named(name, compare, "q", kwargs.pop("theory"), kwargs.pop("samples"), **kwargs)


# -- store and sweep grids --------------------------------------------------------------------------
@given(value=st.one_of(NON_FINITE, st.sampled_from([[1], {"a": 1}, object(), b"x"])))
def test_store_rejects_bad_parameter_values(tmp_path_factory, value):
    TALLY["store.ResultStore.put (bad)"] += 1
    with ResultStore(tmp_path_factory.mktemp("store") / "s.sqlite") as store:
        raises_named("beta", store.put, "m", {"beta": value}, {"x": 1.0})
        raises_named("params", store.put, "m", [("beta", 1.0)], {"x": 1.0})
        raises_named("result", store.put, "m", {"beta": 1.0}, [1.0])
        raises_named("params", store.put, "m", {"": 1.0}, {"x": 1.0})


def test_store_nonfinite_results_read_back_exactly(tmp_path):
    TALLY["store.ResultStore.put (values)"] += 1
    with ResultStore(tmp_path / "s.sqlite") as store:
        store.put("m", {"beta": 1.0}, {"x": math.nan, "y": -math.inf, "z": 2.0, "w": None})
        got = store.get("m", {"beta": 1})
    assert math.isnan(got.pop("x")) and got == {"y": -math.inf, "z": 2.0, "w": None}


GRID_TEXT = st.one_of(
    st.text(alphabet="beta=0123456789.:,-einfa ", max_size=20),
    st.builds(lambda a, b, n: f"beta={a}:{b}:{n}", st.sampled_from(["0", "1", "nan", "inf", "-1e308", "1e308", ""]),
              st.sampled_from(["0", "1", "-inf", "1e308", "0.5"]), st.sampled_from(["0", "1", "3", "-2", "2.5", "10000001", "x"])),
)


@given(spec=GRID_TEXT)
def test_parse_grid_fuzz(spec):
    """Any text: a grid of distinct finite values, or a ParameterError naming the grid."""
    TALLY["grids.parse_grid"] += 1
    try:
        grid = parse_grid(spec)
    except ParameterError as err:
        assert err.name.startswith("grid") and err.allowed
        return
    assert len(grid.values) >= 1 and all(math.isfinite(float(v)) for v in grid.values)
    assert len(set(grid.values)) == len(grid.values)


@pytest.mark.parametrize("spec", ["beta=1:0:3", "beta=0:1:0", "beta=", "beta=1,1", "beta=nan,1", "beta=0:inf:3",
                                  "=1,2", "beta=0:1", "beta=-1e308:1e308:3", 5, None])
def test_parse_grid_named_errors(spec):
    TALLY["grids.parse_grid"] += 1
    with pytest.raises(ParameterError) as info:
        parse_grid(spec)
    assert info.value.name.startswith("grid") and info.value.allowed
