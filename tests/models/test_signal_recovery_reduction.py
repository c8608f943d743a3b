"""Signal recovery: which reduction `solve` runs, and how far the large-L closed form may be trusted.

References: the exact finite-(d, L, R) reduction by Monte Carlo with 16 to 64 times the draws (its standard errors are
checked in test_signal_recovery.py); the plain sample mean of the reduction's integrand on the same draws.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from click.testing import CliRunner

from attnphase.api import signal_recovery as api
from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.models.signal_recovery import population
from model_pages import PAGES

FIELDS = ("J", "dJ", "drift", "nuisance_mass")
# d = 16, L = 64, R = 8, θ = 1, score scale 3, ρ = 0.5: the softmax sits on a few tokens, where the large-L form
# (J = 3131.9) is 300 times the exact value (J = 9.88 ± 0.09).
SMALL_L = dict(d=16, L=64, R=8, theta=1.0, rho=0.5, score_scale=3.0)


@pytest.fixture(scope="module")
def small_L_reference():
    """The exact reduction at SMALL_L with 16 times the default draws, from another seed."""
    params = api.make_parameters(16, 64, 8, 1.0, score_scale=3.0)
    return api.finite_reduction(params, [0.5], n_samples=16 * 4096, seed=777)


def test_default_solve_at_small_L_is_the_exact_value_within_its_errors(small_L_reference):
    """The default solve is the finite reduction (L ≤ MAX_FINITE_L): each field within four combined standard errors
    of a reference with 16 times the draws, and its errors resolve the value (J to 2%)."""
    r = api.solve(**SMALL_L)
    assert r.method == "finite-L" and r.status == "converged" and r.samples == 4096
    for name in FIELDS:
        value, error = getattr(r, name), getattr(r, name + "_error")
        reference, reference_error = getattr(small_L_reference, name)[0], getattr(small_L_reference, name + "_error")[0]
        assert error > 0 and abs(value - reference) <= 4 * math.hypot(error, reference_error), name
    assert r.J_error < 0.02 * r.J
    # the CLI's default is the same computation
    out = CliRunner().invoke(main, ["solve", "signal-recovery", "--d", "16", "--L", "64", "--R", "8", "--theta", "1",
                                    "--score-scale", "3", "--rho", "0.5", "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    assert payload["method"] == "finite-L" and payload["parameters"]["reduction"] == "auto"
    assert (payload["J"], payload["J_error"]) == (r.J, r.J_error) and payload["parameters"]["samples"] == 4096


def test_forced_large_L_at_small_L_is_limited_and_says_by_how_much(small_L_reference):
    """Asked for the closed form where the softmax is dominated by a few tokens: the values come back with status
    limited, no errors, and a message naming the expansion ratio and the finite reduction; the value is indeed far
    from the exact one (beyond 100 of its standard errors)."""
    r = api.solve(**SMALL_L, reduction="large-L")
    assert r.method == "large-L" and r.status == "limited" and not r.success
    assert all(getattr(r, name + "_error") is None for name in FIELDS)
    assert "NOT accurate" in r.message and "expansion ratio q = " in r.message and "finite" in r.message
    accuracy = api.large_L_accuracy(api.make_parameters(16, 64, 8, 1.0, score_scale=3.0), [0.5])
    assert accuracy.status == "limited" and not accuracy.accurate[0]
    assert accuracy.expansion_ratio[0] > 1e3 * accuracy.limit and accuracy.normaliser_fluctuation[0] > 1
    assert f"{accuracy.expansion_ratio[0]:.3g}" in r.message
    # the model page quotes both to its digits: "q = 5 × 10⁶, δ = 14"
    page = " ".join((PAGES / "signal_recovery.md").read_text().split())
    ratio, exponent, fluctuation = re.search(r"\(q = (\d) × 10(\S), δ = (\d+);", page).groups()
    assert round(accuracy.expansion_ratio[0] / 10 ** "⁰¹²³⁴⁵⁶⁷⁸⁹".index(exponent)) == int(ratio)
    assert round(accuracy.normaliser_fluctuation[0]) == int(fluctuation)
    assert abs(r.J - small_L_reference.J[0]) > 100 * small_L_reference.J_error[0]
    # the same through the CLI, and the old spelling --finite still gives the exact reduction
    base = ["solve", "signal-recovery", "--d", "16", "--L", "64", "--R", "8", "--theta", "1", "--score-scale", "3",
            "--rho", "0.5", "--json"]
    payload = json.loads(CliRunner().invoke(main, base + ["--reduction", "large-L"]).stdout)
    assert payload["status"] == "limited" and payload["J_error"] is None and payload["J"] == r.J
    finite = json.loads(CliRunner().invoke(main, base + ["--finite"]).stdout)
    assert finite["method"] == "finite-L" and finite["parameters"]["reduction"] == "finite"


# Points where the closed form is accurate (expansion ratio q ≤ the limit) and its O(1/L) gap is resolved by the
# reference: (d, L, R, θ, θ scaling, σ, score scale, sign model, ρ, draws).
ACCURATE = [
    (1000, 2000, 100, 0.25, "sqrt-d", 1.0, 1.0, "A", 1.0, 1024),
    (1000, 1024, 51, 1.0, "sqrt-d", 0.5, 2.0, "A", 0.0, 4096),
    (1000, 512, 256, 0.25, "sqrt-d", 1.5, 0.25, "A", 0.0, 4096),
    (100, 256, 32, 1.0, "direct", 0.5, 0.5, "B", 0.5, 4096),
    (1000, 128, 16, 2.0, "direct", 0.5, 1.0, "B", 1.0, 4096),
    (16, 512, 25, 0.25, "sqrt-d", 0.5, 0.5, "C", 0.5, 4096),
]


@pytest.mark.parametrize("point", ACCURATE, ids=lambda p: f"L{p[1]}-beta{p[6]}-{p[7]}")
def test_large_L_errors_cover_the_exact_value_where_its_expansion_holds(point):
    """Where q ≤ LARGE_L_EXPANSION_LIMIT the closed form is converged and its errors cover the exact reduction (within
    three of the reduction's standard errors), for J, J′ and the noise mass. Its O(1/L) correction predicts the gap:
    the closed form plus the correction is within the next order (q × the termwise sum) of the exact value."""
    d, L, R, theta, scaling, sigma, beta, sign_model, rho, draws = point
    params = api.make_parameters(d, L, R, theta, scaling, sigma, beta, sign_model)
    large = api.curve(params, [rho])
    accuracy = api.large_L_accuracy(params, [rho])
    assert large.status == "converged" and accuracy.accurate.all() and accuracy.expansion_ratio[0] <= accuracy.limit
    exact = api.finite_reduction(params, [rho], n_samples=draws, seed=3)
    for name in ("J", "dJ", "nuisance_mass"):
        gap = abs(getattr(exact, name)[0] - getattr(large, name)[0])
        assert gap <= getattr(large, name + "_error")[0] + 3 * getattr(exact, name + "_error")[0], name
    gap = exact.J[0] - large.J[0]
    assert abs(gap) > 5 * exact.J_error[0]  # the closed form's gap is resolved here
    next_order = accuracy.expansion_ratio[0] * (large.J_error[0] - 2 * abs(accuracy.J_correction[0]))
    assert abs(gap - accuracy.J_correction[0]) <= next_order + 3 * exact.J_error[0]


def test_large_L_gap_shrinks_with_its_estimate_as_L_grows():
    """At fixed d, R/L, θ√d (the concentrating case of test_signal_recovery.py) the expansion ratio falls as 1/L (the
    d/L term's own O(1/L) makes the local exponent −1.06 at L = 250-1000, −1.01 at 4000-16000) and the closed form
    turns converged once it is below the limit; the headline size is well inside."""
    sizes = (250, 1000, 4000, 16000)
    accuracy = [api.large_L_accuracy(api.make_parameters(1000, L, L // 20, 0.25, "sqrt-d"), [1.0]) for L in sizes]
    ratios = [a.expansion_ratio[0] for a in accuracy]
    exponents = np.diff(np.log(ratios)) / np.log(4)
    assert np.all(np.abs(exponents + 1) < 0.1) and abs(exponents[-1] + 1) < 0.02
    assert [a.status for a in accuracy] == ["limited", "limited", "converged", "converged"]
    headline = api.solve(1000, 10500, 500, 0.25, 1.0, theta_scaling="sqrt-d", reduction="large-L")
    assert headline.status == "converged" and headline.J_error < 0.01 * headline.J


def test_control_variates_with_large_token_shifts_keep_the_estimate():
    """Controls of scale e^{βθ_dρ} ~ 1e26 made lstsq drop the intercept (J = 1e-23 ± 6.5 for a value of 416): the
    corrected mean agrees with the plain mean of the same draws within four of its standard errors."""
    params = api.make_parameters(100, 1024, 512, 2.0, "sqrt-d", 0.5, 3.0)
    n = 1024
    assert population.reliable_controls(params, 0.5, n).any()
    run = api.finite_reduction(params, [0.5], n_samples=n, seed=1)
    value = api.reduction_samples(params, 0.5, n_samples=n, seed=1)[0]
    plain, plain_error = value.mean(), value.std(ddof=1) / math.sqrt(n)
    assert abs(run.J[0] - plain) <= 4 * plain_error and run.J_error[0] <= plain_error * 1.01


def test_conflicting_reduction_options_are_refused():
    params = api.make_parameters(16, 64, 8, 1.0)
    for kwargs in (dict(finite=True, reduction="large-L"), dict(finite=False, reduction="finite"),
                   dict(finite=False, reduction="auto"), dict(finite=True, reduction="auto")):
        with pytest.raises(ParameterError) as info:
            api.solve(16, 64, 8, 1.0, 0.5, **kwargs)
        assert info.value.name == "finite" and "reduction" in str(info.value)
        with pytest.raises(ParameterError):
            api.curve(params, [0.5], **kwargs)
    with pytest.raises(ParameterError) as info:
        api.solve(16, 64, 8, 1.0, 0.5, reduction="exact")
    assert info.value.name == "reduction"
    # agreeing spellings are accepted
    assert api.solve(16, 64, 8, 1.0, 0.5, finite=True, reduction="finite", samples=64).method == "finite-L"
    assert api.solve(16, 64, 8, 1.0, 0.5, finite=False, reduction="large-L").method == "large-L"
    base = ["solve", "signal-recovery", "--d", "16", "--L", "64", "--R", "8", "--theta", "1", "--rho", "0.5"]
    for extra in (["--reduction", "large-L"], ["--reduction", "auto"]):
        out = CliRunner().invoke(main, base + ["--finite", *extra])
        assert out.exit_code == 2 and "--finite" in out.output and "--reduction" in out.output, out.output
        assert "Traceback" not in out.output
    assert CliRunner().invoke(main, base + ["--finite", "--reduction", "finite", "--samples", "64"]).exit_code == 0
    out = CliRunner().invoke(main, base + ["--reduction", "exact"])
    assert out.exit_code == 2 and "--reduction" in out.output


def test_auto_uses_the_large_L_form_beyond_the_memory_bound():
    """Beyond MAX_FINITE_L the default is the closed form (its message says why); the finite reduction is refused."""
    L = api.MAX_FINITE_L + 1
    r = api.solve(1000, L, L // 21, 0.25, 1.0, theta_scaling="sqrt-d")
    assert r.method == "large-L" and r.status == "converged" and "memory" in r.message and r.J_error > 0
    with pytest.raises(ParameterError) as info:
        api.solve(1000, L, L // 21, 0.25, 1.0, theta_scaling="sqrt-d", reduction="finite")
    assert info.value.name == "L"


def test_large_L_errors_where_its_float64_terms_overflow_come_from_mpmath():
    """d = 16, L = 1e5, R = 1e4, ρ = 1: from βθ_dρ ≈ 142 the float64 accuracy kernel's terms hold e^{5βθ_dρ} beyond
    float64, its corrections came out inf − inf, and `solve` said "limited, the O(1/L) terms are not small" with null
    errors while printing q = 0.00139 (the expansion is as good as at θ = 10). Those ρ are now evaluated in mpmath.
    The mpmath path equals the float64 kernel where both work (θ = 140, to 1e-9), and beyond it the errors are
    converged, their expansion ratio continuing the float64 range's slow fall (q = 0.0013909, 0.0013862 at θ = 100,
    140; garbage from an overflow would not fall in step)."""
    from attnphase.models.signal_recovery import closed_form, symbolic

    at_140 = api.make_parameters(16, 100000, 10000, 140.0)
    fixed = closed_form._kernel_arguments(at_140)
    float64 = np.ravel(symbolic.large_L_accuracy_kernel("A").call(rho=1.0, **fixed))
    precise = closed_form._agreed_evaluation(symbolic.large_L_accuracy_kernel("A", backend="mpmath"), fixed, 1.0)
    assert np.all(np.isfinite(float64))
    # the noise-mass correction is 2.4e-64 there, which float64's cancellation gives as 0
    assert np.allclose(precise, float64, rtol=1e-9, atol=1e-15)
    ratios = [api.large_L_accuracy(at_140, [1.0]).expansion_ratio[0]]
    for theta in (150.0, 200.0, 236.0):
        accuracy = api.large_L_accuracy(api.make_parameters(16, 100000, 10000, theta), [1.0, -1.0])
        assert accuracy.status == "converged" and accuracy.accurate.all(), accuracy.message
        assert np.all(np.isfinite(accuracy.J_error)) and np.all(accuracy.J_error > 0)
        ratios.append(accuracy.expansion_ratio[0])
    assert all(later < earlier for earlier, later in zip(ratios, ratios[1:])) and ratios[-1] > 0.99 * ratios[0]
    out = CliRunner().invoke(main, ["solve", "signal-recovery", "--d", "16", "--L", "100000", "--R", "10000",
                                    "--theta", "150", "--rho", "1", "--json"])
    payload = json.loads(out.stdout)
    assert payload["status"] == "converged" and payload["J_error"] is not None, payload["message"]
