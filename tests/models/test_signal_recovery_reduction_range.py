"""The exact finite-L reduction at the edges of float64: where it overflows it is refused with the largest value it
takes; where a symmetry makes J′ exactly 0 its error bar covers 0; a mass that underflows is +0."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from attnphase.api import signal_recovery as api
from attnphase.cli import main
from attnphase.errors import ParameterError

FLOAT_MAX = float(np.finfo(float).max)


def _refused(call, name: str) -> ParameterError:
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.name == name, info.value
    return info.value


def _bound(error: ParameterError) -> float:
    return float(error.allowed.split("[0, " if "[0, " in error.allowed else "(0, ")[1].split("]")[0])


@pytest.mark.parametrize("rho, scaling", [(0.3, "direct"), (0.0, "direct"), (-1.0, "direct"), (0.5, "sqrt-d")])
def test_a_theta_whose_reduction_overflows_is_refused_with_the_largest_it_takes(rho, scaling):
    """θ = 1e150 and 1e300 (d = 16, L = 64, R = 8) gave a table of nulls, status failed, naming no option (audit sr6
    F-a; its squared samples overflowed from θ_d ≈ 1e77, erratically; they are now taken of the samples scaled by a
    power of two). J's samples carry θ_d² (the integrand's θ_d²(1 − ρ²)S₂², and S₁² ≤ (θ_d|ρ| + σ|g|)²), which overflows
    float64 exactly beyond θ_d = √(float64 max) = 1.34078e154 (θ√d under sqrt-d): the reduction is refused there,
    naming theta and that bound to its 6 printed digits, computes J at it and refuses it 1e-5 above."""
    root_d = math.sqrt(16) if scaling == "sqrt-d" else 1.0
    error = _refused(lambda: api.solve(16, 64, 8, 1e160, rho, theta_scaling=scaling, samples=256), "theta")
    bound = _bound(error)
    exact = math.sqrt(FLOAT_MAX) / root_d
    assert bound <= exact and bound == pytest.approx(exact, rel=1e-5), error.allowed
    assert "finite-L reduction (256 samples, seed 0)" in error.allowed and "overflow float64" in error.allowed
    at = api.solve(16, 64, 8, bound, rho, theta_scaling=scaling, samples=256)
    assert at.status in ("converged", "limited") and math.isfinite(at.J) and math.isfinite(at.J_error)
    _refused(lambda: api.solve(16, 64, 8, bound * (1 + 1e-5), rho, theta_scaling=scaling, samples=256), "theta")


def test_the_cli_refuses_a_huge_theta_of_the_finite_reduction_naming_the_option():
    """The audit's command at θ = 1e300: exit 2 with a one-line error naming --theta and its range, no result table.
    (At its θ = 1e150 J is now computed, 1.0e300, and J′ withheld: status limited.)"""
    for theta in ("1e300",):
        out = CliRunner().invoke(main, ["solve", "signal-recovery", "--d", "16", "--L", "64", "--R", "8", "--theta",
                                        theta, "--rho", "0.3"])
        assert out.exit_code == 2, out.output
        assert f"invalid value for --theta: {float(theta):g}" in out.output and "[0, 1.34078e+154]" in out.output
        assert "Traceback" not in out.output and "nuisance_mass" not in out.output


def test_where_only_the_derivative_overflows_J_is_reported_and_J_prime_withheld():
    """At ρ = 0 the scores do not see θ_d and J′'s samples are cubic in it, 2θ_d²S₂·βθ_d(Σ_I a − S₂²) and more: beyond
    θ_d ≈ (float64 max)^(1/3) = 5.6e102 they overflow while J (≈ θ_d²S₂²) does not. J and the noise mass are reported
    (at ρ = 0 the mass does not depend on θ_d, and J = A + θ_d²E[S₂²] on the same draws: the slope of J in θ_d² is
    that between θ = 0 and 1e4), J′ and the drift are not, status limited; at 1e102 J′ is still reported."""
    big, mid, zero = (api.solve(16, 64, 8, theta, 0.0, samples=1024) for theta in (1e110, 1e4, 0.0))
    assert FLOAT_MAX ** (1 / 3) < 1e110
    assert big.status == "limited" and math.isnan(big.dJ) and big.dJ_error is None and big.drift_error is None
    assert "its samples or the bound on their rounding overflow float64" in big.message, big.message
    assert big.J / 1e220 == pytest.approx((mid.J - zero.J) / 1e8, rel=1e-6) and big.nuisance_mass == zero.nuisance_mass
    # where it starts, as the model page says ("θ_d ≳ 1e102 at ρ = 0"): J′ still reported at 1e102, withheld at 1e103
    below, above = (api.solve(16, 64, 8, theta, 0.0, samples=1024) for theta in (1e102, 1e103))
    assert math.isfinite(below.dJ) and below.dJ_error is not None and math.isnan(above.dJ), (below.dJ, above.dJ)


def test_noise_or_scores_that_overflow_without_the_signal_name_sigma_or_the_score_scale():
    """σ = 1e200 overflows J (σ²(d − 1)S₃) at any θ, a score scale of 1e308 overflows 2β in J′'s chain rule (inf·0):
    refused naming sigma or score_scale with the largest value at θ = 0; the reduction at that value is computed."""
    error = _refused(lambda: api.solve(16, 64, 8, 1.0, 0.3, sigma=1e200, samples=256), "sigma")
    bound = _bound(error)
    assert bound < math.sqrt(FLOAT_MAX) and "that at theta = 0" in error.allowed
    assert math.isfinite(api.solve(16, 64, 8, 0.0, 0.3, sigma=bound, samples=256).J)
    error = _refused(lambda: api.solve(16, 64, 8, 1.0, 0.3, score_scale=1e308, samples=256), "score_scale")
    bound = _bound(error)
    assert FLOAT_MAX / 4 < bound < FLOAT_MAX / 2  # 2β overflows beyond float max / 2
    assert math.isfinite(api.solve(16, 64, 8, 0.0, 0.3, score_scale=bound, samples=256).J)


@pytest.mark.parametrize("theta, score_scale, rho", [(1.0, 1.0, 0.6), (3.0, 2.0, -0.4), (0.5, 0.5, 0.95)])
def test_model_B_without_noise_tokens_has_a_slope_of_zero_within_its_error(theta, score_scale, rho):
    """Model B with R = L: every score has the sequence's one shift, which the softmax does not see, and the sign
    averages the cross term out, so J does not depend on ρ and J′ = 0 exactly. The samples of J′ are then rounding
    alone, shared by all draws: d = 10, L = 20, θ = 1, ρ = 0.6 gave 7.5e-17 ± 8.1e-18, nine errors from 0 (audit sr6
    F-b). The error now includes the rounding bound: it covers 0 and stays at the rounding's size (some 30 ulps of
    terms of the size of J·(1 + βθ_d), far below 1e-10·J)."""
    r = api.solve(10, 20, 20, theta, rho, sign_model="B", score_scale=score_scale)
    assert r.status == "converged", r.message
    assert abs(r.dJ) <= r.dJ_error < 1e-10 * r.J and abs(r.drift) <= r.drift_error


def test_model_B_at_rho_zero_has_a_slope_of_exactly_zero():
    """At ρ = 0 model B's two halves are the same numbers: J′ = 0 ± 0, without a rounding bound."""
    r = api.solve(10, 20, 20, 1.0, 0.0, sign_model="B")
    assert (r.dJ, r.dJ_error) == (0.0, 0.0)


def test_a_noise_mass_that_underflows_is_plus_zero():
    """At θ = 1e4, ρ = 0.3 the noise mass is about 56·e^{-3000}: it underflows to +0, and was printed -0 (its control
    variate correction of draws that are all 0; audit sr6 F-c)."""
    r = api.solve(16, 64, 8, 1e4, 0.3, samples=256)
    assert r.nuisance_mass == 0.0 and math.copysign(1.0, r.nuisance_mass) == 1.0
    out = CliRunner().invoke(main, ["solve", "signal-recovery", "--d", "16", "--L", "64", "--R", "8", "--theta", "1e4",
                                    "--rho", "0.3", "--samples", "256", "--json"])
    assert out.exit_code == 0, out.output
    assert '"nuisance_mass": 0.0' in out.stdout and json.loads(out.stdout)["nuisance_mass"] == 0.0
    text = CliRunner().invoke(main, ["solve", "signal-recovery", "--d", "16", "--L", "64", "--R", "8", "--theta",
                                     "1e4", "--rho", "0.3", "--samples", "256"]).output
    assert "-0" not in text.split("nuisance_mass")[1].split("\n")[0]


def test_the_largest_finite_value_reaches_the_last_digit_asked_for():
    """`largest_finite_value` with rtol = 0 (the large-L check's bound) narrows the bracket to float64's spacing and
    rounds down to 6 digits: the exact 6-digit bound of a predicate that holds up to it (found off by one in the last
    digit, 6.86433e-93, without the arithmetic-midpoint steps that follow the geometric ones)."""
    from attnphase.models.signal_recovery.reduction_range import largest_finite_value

    for bound, given in ((6.86434e-93, 3.45652362355858e-88), (1.23457e154, 1e300), (5.55555e-5, 1.0)):
        assert largest_finite_value(lambda x: x <= bound, given, rtol=0.0) == bound, bound
