"""The rendered derivation's derived pieces against the numerical solver (copy heads)."""

import mpmath
import numpy as np
import sympy

from attnphase.api import copy_heads as api
from attnphase.models.copy_heads import symbolic as ch


def test_symmetric_point_hessian_matches_finite_differences_of_the_action():
    values = {ch.n: 37.0, ch.L: 16, ch.V: 4, ch.tau: 1.0, ch.lam_t: 0.7, ch.lam_c: 300.0, ch.ld: 1}
    action = sympy.lambdify((ch.t, ch.c), ch.linear_action_map().subs(values), "mpmath")
    with mpmath.workdps(50):  # differences at h = 1e-8 need ~16 more digits than float64 has
        h = mpmath.mpf("1e-8")
        fd_cc = (action(0, h) - 2 * action(0, 0) + action(0, -h)) / h**2
        fd_tc = (action(h, h) - action(h, -h) - action(-h, h) + action(-h, -h)) / (4 * h**2)
    exact = ch.symmetric_point_hessian().subs(values)
    # Central differences have truncation error O(h^2 * fourth derivative) ~ 1e-12 here.
    assert abs(float(fd_cc) - float(exact[1, 1])) < 1e-6 * abs(float(exact[1, 1]))
    assert abs(float(fd_tc) - float(exact[0, 1])) < 1e-6 * abs(float(exact[0, 1]))


def test_copy_onset_leading_form_matches_the_crossover_with_a_1_over_L_correction():
    """n_c ~ L^{3/2} V / (σ √τ √(V−1)); the (L−1)/L factors in H_cc make the relative gap O(1/L): its local
    exponent between successive sizes (a factor 4 apart) tends to −1 from below (measured −1.10, −1.07, −1.04: the
    next correction decays too), and the last is within 0.05 of it."""
    form = ch.copy_onset_leading_form()
    assert sympy.simplify(form - ch.L**sympy.Rational(3, 2) * ch.V
                          / sympy.sqrt(ch.sigma2 * ch.tau * (ch.V - 1))) == 0
    sizes = [2**8, 2**10, 2**12, 2**14]
    gaps = []
    for size in sizes:
        crossover = api.threshold("linear", size, 4, digits=20).P_crossover
        leading = float(form.subs({ch.L: size, ch.V: 4, ch.sigma2: 1, ch.tau: 1}))
        gaps.append(abs(crossover / leading - 1))
    local_exponents = np.diff(np.log(gaps)) / np.diff(np.log(sizes))
    assert np.all(np.diff(local_exponents) > 0) and np.all(local_exponents < -1), local_exponents
    assert abs(local_exponents[-1] + 1) < 0.05, local_exponents
