"""Bad input to the positional-semantic and signal-recovery models: Python API and CLI.

Every invalid input raises ParameterError naming the parameter and its allowed range (the CLI: exit 2,
one line naming the option, no traceback) before any work is done; every extreme but valid input gives
a result whose numbers are finite, or whose status says it failed. Covered:
attnphase.api.positional_semantic (Parameters.validated, linear_baseline_error, solve, threshold),
attnphase.api.signal_recovery (make_parameters, solve, fixed_points, simulate), and the cross-parameter
checks of `attnphase solve|threshold|simulate positional-semantic|signal-recovery` that the option types
cannot see (single options are fuzzed by tests/test_cli_fuzz.py).

Each test counts the inputs it tried in TALLY; `pytest -s` prints the table at the end of the module.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st
from test_robustness_api import NEGATIVE, NON_FINITE, WRONG_TYPE, bad_int, bad_positive, finite_numbers, raises_named
from test_robustness_cli import assert_usage_error, parse_json

from attnphase.api import positional_semantic as ps
from attnphase.api import signal_recovery as sr
from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.models.signal_recovery import parameters as sr_parameters

# Overflow at the extremes is expected; what is checked is how it is reported.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TALLY: Counter = Counter()
# The hypothesis profile of tests/conftest.py sets the number of examples and the randomness; `EXPENSIVE`
# marks the tests whose every example solves a model (a saddle point, a Monte Carlo reduction, a run of
# SGA): they draw a tenth of the profile's count.
EXPENSIVE = settings(max_examples=max(1, settings.default.max_examples // 10))


@pytest.fixture(scope="module", autouse=True)
def print_tally():
    yield
    print("\ninputs tried per entry point / command (test_robustness_models):")
    for name, count in sorted(TALLY.items()):
        print(f"  {name:45s} {count:6d}")


def log_uniform(low_exp: float, high_exp: float):
    return st.floats(low_exp, high_exp).map(lambda e: 10.0**e)


NOT_A_NUMBER = WRONG_TYPE.filter(lambda v: v is not None)
OUTSIDE_UNIT = st.one_of(NON_FINITE, WRONG_TYPE, st.floats(1.0, 1e308, exclude_min=True),
                         st.floats(-1e308, 0.0, exclude_max=True))
OUTSIDE_SYMMETRIC_UNIT = st.one_of(NON_FINITE, WRONG_TYPE, st.floats(1.0, 1e308, exclude_min=True),
                                   st.floats(-1e308, -1.0, exclude_max=True))


# ==================================================================================================
# positional-semantic: bad parameters
# ==================================================================================================
def bad_A(L: int):
    """A lists that are not a row-stochastic L×L matrix: wrong length, entries outside [0, 1] or
    non-finite, rows not summing to 1, wrong types."""
    n = L * L
    wrong_length = st.integers(0, 40).filter(lambda k: k != n).map(lambda k: [1.0 / L] * k)
    entry_out = st.tuples(st.integers(0, n - 1), st.one_of(NON_FINITE, NEGATIVE, st.floats(1.0, 1e308, exclude_min=True)))
    not_stochastic = st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n).filter(
        lambda a: not np.allclose(np.array(a).reshape(L, L).sum(1), 1.0, atol=1e-12))

    def poke(pair):
        A = [1.0 / L] * n
        A[pair[0]] = pair[1]
        return A

    return st.one_of(wrong_length, entry_out.map(poke), not_stochastic, NOT_A_NUMBER, st.just("0.5,0.5"))


def ps_bad(which: str, L: int = 2):
    return {
        "omega": OUTSIDE_UNIT,
        "sigma": st.one_of(bad_positive(), st.floats(100.0, 1e308, exclude_min=True), st.floats(5e-324, 1e-3, exclude_max=True)),
        "lam": st.one_of(bad_positive(), st.floats(1e6, 1e308, exclude_min=True)),
        "L": st.one_of(bad_int(2), st.integers(7, 10**6)),
        "A": bad_A(L),
        "alpha": bad_positive(),
    }[which]


@given(which=st.sampled_from(["omega", "sigma", "lam", "L", "A", "gram"]), L=st.integers(2, 4), data=st.data())
def test_ps_model_parameters_rejects_bad_parameters(which, L, data):
    TALLY["positional_semantic.Parameters (bad)"] += 1
    args = {"omega": 0.3, "sigma": 0.5, "lam": 0.01, "A": list(np.eye(L).ravel()), "L": L, "gram": None}
    if which == "gram":
        n = L * L
        args["gram"] = data.draw(st.one_of(
            st.integers(0, 30).filter(lambda k: k != n).map(lambda k: [0.0] * k),  # wrong length
            st.just(list(-np.eye(L).ravel())),  # not positive semi-definite
            st.just(list(np.triu(np.ones((L, L))).ravel())),  # not symmetric
            st.just([math.nan] * n), NOT_A_NUMBER))
    else:
        args[which] = data.draw(ps_bad(which, L))
        if which == "L":
            args["A"] = None if args["L"] != 2 else args["A"]  # any A mismatches a bad L; None is "missing"
    raises_named(which, ps.Parameters.validated, **args)


def test_ps_A_is_required_beyond_two_tokens():
    TALLY["positional_semantic.Parameters (bad)"] += 1
    err = raises_named("A", ps.Parameters.validated, omega=0.3, L=3)
    assert "3x3" in err.allowed


@given(which=st.sampled_from(["omega", "sigma", "L"]), data=st.data())
def test_ps_linear_baseline_rejects_bad_parameters(which, data):
    TALLY["positional_semantic.linear_baseline_error (bad)"] += 1
    args = {"omega": 0.3, "sigma": 0.5, "L": 2}
    args[which] = data.draw(ps_bad(which))
    raises_named(which, ps.linear_baseline_error, **args)


@given(which=st.sampled_from(["omega", "alpha", "sigma", "lam", "A", "tol", "branch"]), data=st.data())
def test_ps_solve_rejects_bad_parameters_before_solving(which, data):
    """Also a bad branch name after a good one: every name is checked before the first branch is solved
    (it used to be checked only when its turn came, after seconds of work)."""
    TALLY["positional_semantic.solve (bad)"] += 1
    args = {"omega": 0.3, "alpha": 1.0, "sigma": 0.5, "lam": 0.01, "A": None, "tol": 0.01, "rules": (4, 5),
            "branches": ("trivial",)}
    if which == "tol":  # a relative tolerance in [1e-6, 0.5]
        args[which] = data.draw(st.one_of(bad_positive(), st.floats(0.5, 1e308, exclude_min=True),
                                          st.floats(5e-324, 1e-6, exclude_max=True)))
    elif which == "branch":
        bad = data.draw(st.one_of(WRONG_TYPE, st.sampled_from(["Positional", "global", " mixed", ""])))
        args["branches"] = ("positional", "semantic", bad)
    else:
        args[which] = data.draw(ps_bad(which))
    raises_named(which, ps.solve, **args)


@given(which=st.sampled_from(["omega", "sigma", "A", "tol", "alpha_min", "alpha_max", "which"]), data=st.data())
def test_ps_threshold_rejects_bad_parameters_before_solving(which, data):
    TALLY["positional_semantic.threshold (bad)"] += 1
    args = {"omega": 0.3, "sigma": 0.5, "A": None, "tol": 1e-3, "alpha_min": 0.5, "alpha_max": 3.0,
            "which": ("alpha_c",)}
    if which == "tol":  # an absolute tolerance in α, in [1e-5, 1]
        args[which] = data.draw(st.one_of(bad_positive(), st.floats(1.0, 1e308, exclude_min=True),
                                          st.floats(5e-324, 1e-5, exclude_max=True)))
    elif which == "alpha_max":  # must exceed alpha_min
        args[which] = data.draw(st.one_of(bad_positive(), st.floats(1e-300, 0.5)))
    elif which == "alpha_min":
        args[which] = data.draw(bad_positive())
    elif which == "which":
        args[which] = data.draw(st.sampled_from([("alpha_x",), (), ("alpha_c", "c")]))
    elif which == "A":  # row-stochastic but not token-swap symmetric: no invariant semantic branch
        a = data.draw(st.floats(0.0, 1.0))
        b = data.draw(st.floats(0.0, 1.0).filter(lambda b: abs(b - (1 - a)) > 1e-9))
        args[which] = [a, 1 - a, b, 1 - b]
    else:
        args[which] = data.draw(ps_bad(which))
    raises_named(which, ps.threshold, **args)


# -- positional-semantic: extreme but valid ----------------------------------------------------------
@EXPENSIVE
@given(omega=st.floats(0.0, 1.0), sigma=log_uniform(-3, 2))
def test_ps_linear_baseline_extremes_are_finite(omega, sigma):
    """σ across its whole range (σ = 1e300 overflowed before the range was bounded at 100)."""
    TALLY["positional_semantic.linear_baseline_error (extreme)"] += 1
    r = ps.linear_baseline_error(omega, sigma)
    assert finite_numbers(r) and r.value >= 0 and r.error >= 0


@settings(max_examples=max(1, settings.default.max_examples // 20))  # each example follows a branch from α = 0.3
@given(omega=st.floats(0.0, 1.0), alpha=log_uniform(-300, 2), sigma=log_uniform(-3, 2), lam=log_uniform(-300, 6),
       branch=st.sampled_from(["trivial", "positional"]))
def test_ps_solve_extremes_are_finite_or_not_reported(omega, alpha, sigma, lam, branch):
    """One cheap branch on the coarsest rule (a one-rule ladder: status limited, no verified error): a reported
    branch has finite numbers; one that fails is left out with a note. σ = 1e-300 (or λ = 1e300) raised a ParameterError about the
    solver's starting point `x0` before σ and λ were bounded."""
    TALLY["positional_semantic.solve (extreme)"] += 1
    r = ps.solve(omega, alpha, sigma, lam, rules=(4,), branches=(branch,), stability=False)
    assert math.isfinite(r.linear_baseline_test_error)
    for b in r.branches:
        assert b.status == "limited" and finite_numbers(b.as_dict() | {"spectral_radius": 0.0} |
                                                        {f"{name}_error": 0.0 for name in ps.FIELDS})
    if not r.branches:
        assert r.global_branch is None and branch in r.message


# ==================================================================================================
# signal-recovery: bad parameters
# ==================================================================================================
SR_BASE = {"d": 8, "L": 6, "R": 2, "theta": 1.0, "theta_scaling": "direct", "sigma": 1.0, "score_scale": 1.0, "sign_model": "A"}


def sr_bad(which: str):
    return {
        "d": st.one_of(bad_int(2), st.integers(10**12 + 1, 10**400)),
        "L": st.one_of(bad_int(2), st.integers(10**12 + 1, 10**400)),
        "R": st.one_of(bad_int(1), st.integers(7, 10**9)),  # L = 6 in SR_BASE: R > L
        "theta": st.one_of(NON_FINITE, WRONG_TYPE, NEGATIVE),
        "theta_scaling": st.one_of(WRONG_TYPE, st.sampled_from(["sqrt_d", "Direct", "sqrt(d)"])),
        "sigma": bad_positive(),
        "score_scale": bad_positive(),
        "sign_model": st.one_of(WRONG_TYPE, st.sampled_from(["a", "D", "AB"])),
    }[which]


@given(which=st.sampled_from(list(SR_BASE)), data=st.data())
def test_sr_make_parameters_rejects_bad_parameters(which, data):
    TALLY["signal_recovery.make_parameters (bad)"] += 1
    args = dict(SR_BASE)
    args[which] = data.draw(sr_bad(which))
    raises_named(which, sr.make_parameters, **args)


@EXPENSIVE
@given(theta=st.floats(1e160, 1e308), d=st.integers(10**4, 10**12))
def test_sr_theta_d_must_be_finite(theta, d):
    """θ√d overflowing to inf was accepted (θ_d = inf, then NaN everywhere downstream)."""
    TALLY["signal_recovery.make_parameters (bad)"] += 1
    if math.isfinite(theta * math.sqrt(d)):
        theta = 1e308
    raises_named("theta", sr.make_parameters, d, 6, 2, theta, "sqrt-d")


@given(which=st.sampled_from(["d", "R", "theta", "sigma", "rho", "finite", "samples", "seed", "L_finite"]), data=st.data())
def test_sr_solve_rejects_bad_parameters(which, data):
    TALLY["signal_recovery.solve (bad)"] += 1
    args = dict(SR_BASE, rho=0.5, finite=True, samples=16, seed=0)
    name = which
    if which == "rho":
        args[which] = data.draw(OUTSIDE_SYMMETRIC_UNIT)
    elif which == "finite":  # a truthy string or number is not a choice of method
        args[which] = data.draw(st.one_of(NOT_A_NUMBER.filter(lambda v: v is not True), st.sampled_from([0, 1, "False"])))
    elif which == "samples":
        args[which] = data.draw(bad_int(16))
    elif which == "seed":
        args[which] = data.draw(st.one_of(st.integers(max_value=-1), st.just(1.5), NON_FINITE))
    elif which == "L_finite":  # the finite-L reduction holds blocks of 256 × L numbers: 119 GiB at L = 1e9
        name, args["L"] = "L", data.draw(st.integers(sr.MAX_FINITE_L + 1, 10**12))
    else:
        args[which] = data.draw(sr_bad(which))
    raises_named(name, sr.solve, **args)


@EXPENSIVE
@given(d=st.integers(2, 10**12), L=st.integers(2, 10**12), R_fraction=st.floats(0.0, 1.0), theta=log_uniform(-300, 300),
       sigma=log_uniform(-300, 300), beta=log_uniform(-300, 300), rho=st.floats(-1.0, 1.0),
       sign_model=st.sampled_from(["A", "B", "C"]), scaling=st.sampled_from(["direct", "sqrt-d"]))
def test_sr_large_L_solve_extremes_are_finite_or_failed(d, L, R_fraction, theta, sigma, beta, rho, sign_model, scaling):
    TALLY["signal_recovery.solve large-L (extreme)"] += 1
    R = max(1, min(L, round(R_fraction * L)))
    if scaling == "sqrt-d" and not math.isfinite(theta * math.sqrt(d)):
        scaling = "direct"
    try:
        r = sr.solve(d, L, R, theta, rho, scaling, sigma, beta, sign_model, reduction="large-L")
    except ParameterError as error:  # the form overflows float64 there: refused, naming theta or sigma and its bound
        assert error.name in ("theta", "sigma") and "overflows float64" in error.allowed
        return
    assert r.status in ("converged", "limited", "failed")
    if r.status in ("converged", "limited"):  # limited: the values, errors None (the expansion fails)
        assert finite_numbers(r) and (r.J_error is None) == (r.status == "limited")
    else:
        assert all(math.isnan(v) for v in (r.J, r.dJ, r.drift, r.nuisance_mass)) and r.message


@EXPENSIVE
@given(L=st.integers(2, 8), R_fraction=st.floats(0.0, 1.0), theta=log_uniform(-300, 300), sigma=log_uniform(-300, 300),
       beta=log_uniform(-300, 300), rho=st.floats(-1.0, 1.0), sign_model=st.sampled_from(["A", "B", "C"]))
def test_sr_finite_solve_extremes_are_finite_or_failed(L, R_fraction, theta, sigma, beta, rho, sign_model):
    """Tiny finite-L runs (16 samples). Overflow of e^{βy} (θ, β or σ = 1e300) raised numpy's LinAlgError
    from the control-variate regression; now the status says "failed". Limited: J and the noise mass with their
    errors, no J′ (the draws rarely split the attention between an informative and a noise token)."""
    TALLY["signal_recovery.solve finite-L (extreme)"] += 1
    R = max(1, min(L, round(R_fraction * L)))
    try:
        r = sr.solve(5, L, R, theta, rho, "direct", sigma, beta, sign_model, True, samples=16)
    except ParameterError as error:  # J overflows float64 there: refused, naming the value and the largest it takes
        assert error.name in ("theta", "sigma", "score_scale") and "overflow float64" in error.allowed, error
        return
    assert r.status in ("converged", "limited", "failed")
    if r.status == "converged":
        assert finite_numbers(r) and r.samples == 16
    elif r.status == "limited":
        assert all(math.isfinite(v) for v in (r.J, r.J_error, r.nuisance_mass, r.nuisance_mass_error))
        assert math.isnan(r.dJ) and r.dJ_error is None and "misses the switching" in r.message
    else:
        assert math.isnan(r.J) and "non-finite" in r.message


@pytest.mark.parametrize("params", [None, {"d": 8}, "A", 3.0, SR_BASE])
def test_sr_entry_points_taking_parameters_reject_other_objects(params):
    """fixed_points / finite_reduction raised AttributeError on anything but a Parameters."""
    TALLY["signal_recovery.fixed_points (bad)"] += 1
    raises_named("params", sr.fixed_points, params)
    TALLY["signal_recovery.finite_reduction (bad)"] += 1
    raises_named("params", sr.finite_reduction, params, [0.5])


@EXPENSIVE
@given(n_grid=st.one_of(bad_int(3), st.integers(10**7 + 1, 10**12)))
def test_sr_fixed_points_rejects_bad_grid(n_grid):
    TALLY["signal_recovery.fixed_points (bad)"] += 1
    raises_named("n_grid", sr.fixed_points, sr.make_parameters(**SR_BASE), n_grid=n_grid)


@EXPENSIVE
@given(theta=log_uniform(-300, 300), sigma=log_uniform(-300, 300), beta=log_uniform(-300, 300), L=st.integers(2, 10**9),
       R_fraction=st.floats(0.0, 1.0), sign_model=st.sampled_from(["A", "B", "C"]))
def test_sr_fixed_points_extremes_are_honest(theta, sigma, beta, L, R_fraction, sign_model):
    """β = 1e300 returned a success status with no fixed points at all (the drift was NaN everywhere),
    though ρ = ±1 are always fixed points; now "failed" with a message (also for θ_d = 0, where every ρ
    is a fixed point). A "converged" result lists finite points in [−1, 1] that include both ends."""
    TALLY["signal_recovery.fixed_points (extreme)"] += 1
    R = max(1, min(L, round(R_fraction * L)))
    r = sr.fixed_points(sr.make_parameters(16, L, R, theta, "direct", sigma, beta, sign_model), n_grid=201)
    assert r.status in ("converged", "failed")
    if r.status == "converged":
        assert finite_numbers(r.rho) and finite_numbers(r.slope)
        assert all(-1.0 <= x <= 1.0 for x in r.rho) and r.rho[0] == -1.0 and r.rho[-1] == 1.0
    else:
        assert r.rho == [] and r.message


SIM_BASE = dict(d=4, L=3, R=1, theta=1.0, trials=2, steps=5, device="cpu")


@given(which=st.sampled_from(["trials", "steps", "eta0", "k0", "gamma", "batch", "seed", "device", "sampler", "rho0",
                              "record_every", "R", "theta", "memory_trials", "memory_L",
                              "memory_L_projected"]), data=st.data())
def test_sr_simulate_rejects_bad_parameters_before_sampling(which, data):
    """Huge trials, steps or L·d were allocation errors (RuntimeError / MemoryError, or minutes of
    swapping); θ_d beyond float32 was a RuntimeError from torch. Memory is bounded per sampler: L·d for the
    dense one, trials·batch·(L + d) for the projected one."""
    TALLY["signal_recovery.simulate (bad)"] += 1
    args = dict(SIM_BASE)
    name = which
    strategies = {
        "trials": bad_int(1), "steps": st.one_of(bad_int(1), st.integers(sr.MAX_STEPS + 1, 10**15)),
        "eta0": bad_positive(), "k0": st.one_of(NON_FINITE, NEGATIVE, st.just(0.0)),  # k0 = 0 with γ > 0
        "gamma": OUTSIDE_UNIT, "batch": bad_int(1),
        "seed": st.one_of(st.integers(max_value=-1), st.integers(min_value=2**63)), "device": st.sampled_from(["gpu", "tpu", 3]),
        "sampler": st.sampled_from(["Dense", "sparse", None]), "rho0": OUTSIDE_SYMMETRIC_UNIT.filter(lambda v: v is not None),
        "record_every": st.sampled_from([-1, 0.5, math.nan, "x"]), "R": st.integers(4, 100),
        "theta": st.floats(1e31, 1e300),
    }
    if which == "memory_trials":
        name, args["trials"] = "trials", data.draw(st.integers(10**9, 10**15))
        args["d"] = data.draw(st.integers(2, 10**6))
    elif which == "memory_L":  # one dense sequence holds L·d tokens
        name, args["sampler"] = "L", "dense"
        args["L"], args["d"] = data.draw(st.integers(10**6, 10**9)), data.draw(st.integers(10**3, 10**6))
    elif which == "memory_L_projected":  # the projected sampler holds trials·batch·(L + d) numbers
        name, args["L"] = "L", data.draw(st.integers(10**7, 10**12))
    else:
        args[which] = data.draw(strategies[which])
    raises_named(name, sr.simulate, **args)


@EXPENSIVE
@given(theta=log_uniform(-300, 30), sigma=log_uniform(-300, 300), beta=log_uniform(-300, 300), eta0=log_uniform(-300, 300),
       sampler=st.sampled_from(["dense", "projected"]), sign_model=st.sampled_from(["A", "B", "C"]))
def test_sr_simulate_extremes_are_finite_or_diverged(theta, sigma, beta, eta0, sampler, sign_model):
    """Refused where the float32 gradient could overflow (tokens of norm θ_d + σ(√d + 10) above the bound for the
    score scale), else finite numbers (converged, or limited: five steps need not reach the prediction's conditions),
    or diverged with the reason (a step so large that the query overflows)."""
    TALLY["signal_recovery.simulate (extreme)"] += 1
    token_norm = theta + sr_parameters.noise_token_norm(4, sigma)
    try:
        r = sr.simulate(4, 3, 2, theta, 2, 5, sigma=sigma, score_scale=beta, eta0=eta0, sign_model=sign_model,
                        device="cpu", sampler=sampler)
    except ParameterError as refused:
        assert token_norm > sr_parameters.max_simulated_token_norm(beta)
        assert refused.name in ("theta", "sigma", "score_scale") and "float32" in refused.allowed
        return
    assert token_norm <= sr_parameters.max_simulated_token_norm(beta)
    assert r.status in ("converged", "limited", "diverged")
    if r.status != "diverged":
        assert finite_numbers([r.alignment, r.final_rho, r.alignment_mean, r.nuisance_mass_mean])
        assert np.all(r.alignment <= 1.0 + 1e-9)
    else:
        assert "non-finite" in r.message


# ==================================================================================================
# CLI: cross-parameter checks and honest --json output
# ==================================================================================================
def run(args, tally_key):
    TALLY[tally_key] += 1
    return CliRunner().invoke(main, [str(a) for a in args])


SR_SOLVE = ["solve", "signal-recovery", "--d", 8, "--theta", 1, "--rho", 0.5]
SR_SIM = ["simulate", "signal-recovery", "--d", 4, "--theta", 1, "--trials", 2, "--steps", 5, "--device", "cpu"]
PS_SOLVE = ["solve", "positional-semantic", "--omega", 0.3, "--alpha", 1, "--branches", "trivial"]
# the deprecated tensor-only rules (cheap): for the commands that actually solve
PS_SOLVE_TENSOR = PS_SOLVE + ["--nodes", 4, "--check-nodes", 5]
PS_THRESHOLD = ["threshold", "positional-semantic", "--omega", 0.3]
PS_SIM = ["simulate", "positional-semantic", "--omega", 0.3, "--alpha", 1, "--d", 8, "--steps", 1, "--device", "cpu",
          "--trials", 1, "--test-samples", 4]


@given(L=st.integers(2, 10**6), excess=st.integers(1, 10**6), command=st.sampled_from(["solve", "simulate"]))
def test_sr_cli_R_above_L(L, excess, command):
    args = (SR_SOLVE if command == "solve" else SR_SIM) + ["--L", L, "--R", L + excess]
    assert_usage_error(run(args, f"{command} signal-recovery (inconsistent)"), "--R")


@pytest.mark.parametrize("args, name", [
    (SR_SOLVE + ["--L", sr.MAX_FINITE_L + 1, "--R", 1, "--reduction", "finite"], "--L"),
    (["solve", "signal-recovery", "--d", 10**4, "--L", 4, "--R", 1, "--theta", 1e307, "--theta-scaling", "sqrt-d",
      "--rho", 0.5], "--theta"),
    (SR_SIM + ["--L", 4, "--R", 1, "--k0", 0], "--k0"),
    (["simulate", "signal-recovery", "--d", 1000, "--L", 4, "--R", 1, "--theta", 1, "--trials", 10**9, "--steps", 5,
      "--device", "cpu"], "--trials"),
    (["simulate", "signal-recovery", "--d", 10**5, "--L", 10**5, "--R", 1, "--theta", 1, "--trials", 1, "--steps", 5,
      "--device", "cpu", "--sampler", "dense"], "--L"),
    (SR_SIM + ["--L", 4, "--R", 1, "--theta", 1e31], "--theta"),
    (PS_SOLVE + ["--A", "0.5,0.5"], "--A"),
    (PS_SOLVE + ["--A", "0.5,0.6,0.4,0.6"], "--A"),
    (PS_SOLVE + ["--L", 3], "--A"),
    (PS_SOLVE + ["--L", 3, "--A", "0.6,0.4,0.4,0.6"], "--A"),
    (PS_SOLVE[:-1] + ["trivial,global"], "--branches"),
    (PS_THRESHOLD + ["--A", "1,0,0.5,0.5"], "--A"),
    (PS_THRESHOLD + ["--alpha-min", 2, "--alpha-max", 1], "--alpha-max"),
    (PS_THRESHOLD + ["--alpha-min", 2, "--alpha-max", 2], "--alpha-max"),
    (PS_SIM + ["--A", "0.5,0.5,0.5"], "--A"),
    (PS_SIM[:4] + ["--alpha", 100, "--d", 10**5] + PS_SIM[8:], "--alpha"),  # α in range, αd·d too many numbers
    (PS_SIM + ["--lam", 1e6], "--lr"),  # GD on λ‖Q‖²/2 alone diverges for lr·λ ≥ 2 (it printed 1e36 as "completed")
    (PS_SIM + ["--lam", 10, "--lr", 0.2], "--lr"),
    (PS_SIM[:-4] + ["--trials", 10**4, "--test-samples", 10**7, "--d", 10**5, "--alpha", 1e-6], "--trials"),
])
def test_inconsistent_combinations_exit_2(args, name):
    assert_usage_error(run(args, " ".join(map(str, args[:2])) + " (inconsistent)"), name)


@given(L=st.integers(2, 4), data=st.data())
def test_ps_cli_bad_A(L, data):
    """--A of the wrong length or not row-stochastic (each entry is in [0, 1], so the option type passes it)."""
    n = L * L
    A = data.draw(st.one_of(
        st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40).filter(lambda a: len(a) != n),
        st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n).filter(
            lambda a: not np.allclose(np.array(a).reshape(L, L).sum(1), 1.0, atol=1e-12))))
    args = PS_SOLVE + ["--L", L, "--A", ",".join(repr(a) for a in A)]
    assert_usage_error(run(args, "solve positional-semantic (inconsistent)"), "--A")


@settings(max_examples=max(1, settings.default.max_examples // 8))  # each example runs a Monte Carlo reduction
@given(d=st.integers(2, 10**12), L=st.integers(2, 10**12), R_fraction=st.floats(0.0, 1.0), theta=log_uniform(-300, 300),
       sigma=log_uniform(-300, 300), beta=log_uniform(-300, 300), rho=st.floats(-1.0, 1.0),
       sign_model=st.sampled_from(["A", "B", "C"]))
def test_sr_cli_solve_json_is_finite_or_failed(d, L, R_fraction, theta, sigma, beta, rho, sign_model):
    """Large-L form at extreme values: exit 0 with finite numbers (status converged with errors, or limited without
    them where its O(1/L) expansion fails), or exit 1 with status "failed" and nulls (it exited 0 with a "failed"
    status before), or exit 2 naming --theta or --sigma where the form overflows float64 (nothing is computed)."""
    R = max(1, min(L, round(R_fraction * L)))
    args = ["solve", "signal-recovery", "--d", d, "--L", L, "--R", R, "--theta", repr(theta), "--sigma", repr(sigma),
            "--score-scale", repr(beta), "--rho", repr(rho), "--sign-model", sign_model, "--reduction", "large-L",
            "--json"]
    result = run(args, "solve signal-recovery (extreme, --json)")
    if result.exit_code == 2:
        assert "overflows float64" in result.output and ("--theta" in result.output or "--sigma" in result.output)
        assert "Traceback" not in result.output
        return
    assert result.exit_code in (0, 1), result.output
    payload = parse_json(result)
    values = [payload[k] for k in ("J", "dJ", "drift", "nuisance_mass")]
    if result.exit_code == 0:
        assert payload["status"] in ("converged", "limited") and all(v is not None for v in values)
        assert (payload["J_error"] is None) == (payload["status"] == "limited")
    else:
        assert payload["status"] == "failed" and all(v is None for v in values) and payload["message"]


@pytest.mark.parametrize("extra, code, status", [
    (["--L", 3, "--R", 2, "--score-scale", 1e300, "--finite", "--samples", 16], 0, "limited"),
    (["--L", 3, "--R", 2, "--sigma", 1e300, "--finite", "--samples", 16], 2, None),
    (["--L", 3, "--R", 2, "--theta", 1e-300, "--finite", "--samples", 16], 0, "converged"),
])
def test_sr_cli_finite_solve_json_edges(extra, code, status):
    """A saturated softmax (β = 1e300) gives J with its error and no J′ (limited); σ = 1e300 overflows the scores
    themselves: refused naming --sigma with the largest σ the reduction takes (exit 2, nothing on stdout)."""
    result = run(SR_SOLVE + extra + ["--json"], "solve signal-recovery (edge, --json)")
    assert result.exit_code == code, result.output
    if code == 2:
        assert result.stdout == "" and "invalid value for --sigma" in result.stderr and "overflow" in result.stderr
        return
    payload = parse_json(result)
    assert payload["status"] == status, payload["message"]
    assert (payload["J_error"] is not None) == (code == 0)
    assert (payload["dJ"] is None) == (status != "converged")


@pytest.mark.parametrize("extra, code", [
    (["--score-scale", 1e300], 2),  # float32 gradients would overflow (the queries became NaN): refused
    (["--sigma", 1e-300, "--sampler", "projected"], 0),
    (["--eta0", 1e300, "--gamma", 1, "--k0", 1e-300], 1),  # η₀ = 1e600 overflows: "diverged"
    (["--eta0", 1e300, "--gamma", 0], 0),  # one giant step lands on a fixed point; |ρ| stays ≤ 1
])
def test_sr_cli_simulate_json_edges(extra, code):
    result = run(SR_SIM + ["--L", 3, "--R", 2, *extra, "--json"], "simulate signal-recovery (edge, --json)")
    assert result.exit_code == code, result.output
    if code == 2:
        assert "--score-scale" in result.output and "float32" in result.output
        return
    payload = parse_json(result)
    if code == 0:  # five steps: no prediction or a schedule short of its target, said as `limited`
        assert payload["status"] in ("converged", "limited") and payload["alignment_mean"] is not None
    else:
        assert payload["status"] == "diverged" and payload["alignment_mean"] is None and payload["message"]
        assert payload["positive_fraction"] is None  # it said 0.0 for NaN alignments


def test_ps_cli_solve_json_at_the_edges():
    """σ at both ends of its range on the coarsest rule: one JSON object, finite numbers or branches
    left out with a note; exit status 1 exactly where the status is failed."""
    for sigma in (1e-3, 100):
        result = run(PS_SOLVE_TENSOR + ["--sigma", sigma, "--json"], "solve positional-semantic (edge, --json)")
        payload = parse_json(result)
        assert result.exit_code == (1 if payload["status"] == "failed" else 0), result.output
        assert payload["linear_baseline_test_error"] is not None
        assert all(v is not None for b in payload["branches"] for v in b.values())


@pytest.mark.parametrize("extra, code", [
    (["--lr", 1e300, "--lam", 1e-300], 1),  # GD blows up: NaN overlaps were printed as null under exit 0, with no status
    (["--lr", 1e300, "--init", "random"], 1),
    (["--sigma", 1e-3], 0),
])
def test_ps_cli_simulate_json_edges(extra, code):
    # --no-theory: the edges are the runs'; the solve at σ = 1e-3 alone takes 20 s (its own edges: the solve tests)
    result = run(PS_SIM + ["--trials", 2, "--no-theory", *extra, "--json"],
                 "simulate positional-semantic (edge, --json)")
    assert result.exit_code == code, result.output
    payload = parse_json(result)
    means = [payload[k + "_mean"] for k in ("m", "theta", "q", "test_error", "train_loss")]
    if code == 0:  # one step: not settled, so limited
        assert payload["status"] == "limited" and all(v is not None for v in means)
    else:
        assert payload["status"] == "diverged" and "lr" in payload["message"] and None in means
