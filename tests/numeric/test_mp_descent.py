"""The damped Newton descent in mpmath: its stopping point within its stated error of a known minimum, also in a
quartic well where each Newton step only contracts by 2/3, and from a start where the Hessian is indefinite."""

from __future__ import annotations

import mpmath

from attnphase.numeric.mp_descent import action_error, descend

CENTRE = (mpmath.mpf(1) / 3, mpmath.mpf(1) / 4)


def quartic(p):  # (x − 1/3)⁴ + (y² − 1/16)²: a flat quartic direction; minima at y = ±1/4, concave for |y| < 0.144
    x, y = p[0] - CENTRE[0], p[1]
    return x**4 + (y * y - CENTRE[1] ** 2) ** 2


def gradient(p):
    x, y = p[0] - CENTRE[0], p[1]
    return [4 * x**3, 4 * y * (y * y - CENTRE[1] ** 2)]


def hessian(p):
    x, y = p[0] - CENTRE[0], p[1]
    return [[12 * x**2, 0], [0, 12 * y * y - 4 * CENTRE[1] ** 2]]


def test_the_descent_stops_within_its_error_of_the_minimum_of_a_quartic_well():
    dps = 60
    for start in ([1.0, 0.1], [-2.0, 2.5]):  # at y = 0.1 the y curvature is −0.13: the step still goes downhill
        descent = descend(quartic, gradient, hessian, start, dps)
        assert descent.converged and descent.steps > 30  # the quartic direction contracts slowly
        with mpmath.workdps(dps):
            for coordinate, centre, error in zip(descent.point, CENTRE, descent.errors):
                assert abs(coordinate - centre) <= error
            # the x error is the geometric tail of a 2/3 contraction, about twice the last step: not the step alone
            assert descent.errors[0] > 0
            value, bound = action_error(quartic, gradient, hessian, descent, dps)
            assert abs(value - quartic(list(CENTRE))) <= bound
