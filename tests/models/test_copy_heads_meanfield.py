"""Copy-heads, softmax: the row mean-field (Cramér) free energy F(m) = T Λ*(m, q) + S_data(m, q)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit

from attnphase.api import copy_heads as api
from attnphase.errors import ParameterError
from attnphase.models import copy_heads as model


def test_mean_field_minimum_is_the_prior_mean_without_data():
    """At vanishing data the free energy is the prior's: its minimum sits at the prior mean of the
    previous-position weight, E[a] = 1/L exactly (the L scores are exchangeable), i.e. c = 0. The
    tolerance is the tilted mean of the Sobol relative error of p(x) (times m), plus the curvature
    shift of the data term at P = 1e-6 (~1e-6 relative)."""
    L = 16
    r = api.softmax_row_mean_field(L, 4, 1e-6)
    (mn,) = r.minima
    table = api.row_table(L, model.DEFAULT.sigma2, "exact")
    w = np.exp(table.log_weight - table.log_weight.max())
    rel_err = float((w * table.relative_error).sum() / w.sum())
    assert mn["m"] == pytest.approx(1 / L, rel=3 * rel_err + 1e-5)


@pytest.mark.parametrize("factor", [0.9, 1.3])
def test_mean_field_stationary_points_are_self_consistent(factor):
    """Every stationary point satisfies the mean-field equations m = E_h,g[a], q = E_h,g[q(x)] with the
    fields h = −(1/T)∂S/∂m, g = −(1/T)∂S/∂q: recomputed here by adaptive quadrature (scipy.quad) of the
    closed-form shortcut density, independent of the code's grid and of its path parametrisation."""
    L, V = 32, 4
    conv = model.DEFAULT
    P = factor * api.threshold("softmax", L, V, digits=6).P_star
    r = api.softmax_row_mean_field(L, V, P, row_density="shortcut")
    n_, T_ = conv.n_of_P(P, L), conv.targets(L)
    k = math.exp(conv.sigma2)
    centre = -math.log(L - 1) - conv.sigma2 / 2
    ker = api.softmax_data_kernel()
    for point in r.minima + r.maxima:
        _, dS_dm, dS_dq = np.asarray(ker(point["m"], point["q"], n_, V, conv.tau(V), 1.0), float)
        h, g = -dS_dm / T_, -dS_dq / T_

        def weight(x):
            a = expit(x)
            q = a * a + k * (1 - a) ** 2 / (L - 1)
            return math.exp(-((x - centre) ** 2) / (2 * conv.sigma2) + h * a + g * q)

        lim = (centre - 12, 14)
        Z = integrate.quad(weight, *lim, epsabs=0, epsrel=1e-12, limit=200)[0]
        m_ref = integrate.quad(lambda x: expit(x) * weight(x), *lim, epsabs=0, epsrel=1e-12, limit=200)[0] / Z
        # grid quadrature (600 points, trapezoid on a smooth integrand) and the bisection for g: ~1e-7
        assert point["m"] == pytest.approx(m_ref, rel=1e-6)


def test_mean_field_bad_input():
    with pytest.raises(ParameterError):
        api.softmax_row_mean_field(2, 4, 100.0)
    with pytest.raises(ParameterError):
        api.softmax_row_mean_field(16, 4, -1.0)
    with pytest.raises(ParameterError):
        api.softmax_row_mean_field(16, 4, 100.0, row_density="gaussian")
    with pytest.raises(ParameterError):
        api.simulate_hysteresis(16, 4, [100.0], data_sets=0)
    with pytest.raises(ParameterError):
        api.simulate_hysteresis(16, 4, [-5.0])


def test_supported_digits_follow_the_error():
    """The exact-row-rate P* string keeps ⌊log10(|P|/(2 err))⌋ digits, never more than requested."""
    assert api.supported_digits_string(1234.5678, 0.004) == "1234.6"  # log10(1234.57 / 0.008) = 5.19: 5 digits
    assert api.supported_digits_string(1234.5678, 0.004, requested=3) == "1.23e+03"
    assert api.supported_digits_string(581.152372, 0.128) == "581"  # log10(581.15 / 0.256) = 3.36
    assert api.supported_digits_string(1234.5678, 2000.0) == "1e+03"  # below one digit: one digit, flagged by the error
    assert api.supported_digits_string(math.nan, 1.0) == ""
