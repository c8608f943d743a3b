"""numeric.threshold, section "counts, windows and coexistence": bisection on a count change, the log-scale
crossing, and the window of two minima with its coexistence point, on a landscape known in closed form."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.numeric.threshold import bisect_geometric, log_crossing, window_and_coexistence


def _minima(x):
    """Minima of f(φ) = φ⁴/4 − φ²/2 + (ln x)·φ/(3√3)·2: two minima for |ln x| < 1 (the spinodals at x = e^{±1}), the
    one at positive φ lower for ln x < 0; returns (φ, f) by increasing φ."""
    tilt = 2 * math.log(x) / (3 * math.sqrt(3))
    roots = np.roots([1.0, 0.0, -1.0, tilt])
    real = np.sort(roots[np.abs(roots.imag) < 1e-12].real)
    values = real**4 / 4 - real**2 / 2 + tilt * real
    minima = [(r, v) for r, v in zip(real, values) if 3 * r * r - 1 > 0]
    return minima


def test_geometric_bisection_on_the_count_of_minima_finds_the_spinodals():
    """The count of minima changes at x = e (the fold of the cubic φ³ − φ + t = 0 at t = 2/(3√3)): bisection from a
    two-minima point to a one-minimum point ends within rtol of it, and the bracket keeps its roles (either order
    on the axis: the lower spinodal 1/e is approached from above)."""
    result = bisect_geometric(lambda x: len(_minima(x)) == 2, 1.5, 4.0, rtol=1e-10)
    inside, outside = result.bracket
    assert len(_minima(inside)) == 2 and len(_minima(outside)) == 1
    assert inside <= math.e <= outside and outside / inside - 1 < 1e-10
    lower = bisect_geometric(lambda x: len(_minima(x)) == 2, 1.0, 0.1, iterations=40)
    assert lower.bracket[1] <= 1 / math.e <= lower.bracket[0] and lower.error < 1e-10


def test_geometric_bisection_across_the_whole_float64_range():
    """A property that holds up to 1e250, bisected between 1 and 1e300: the midpoint sqrt(inside·outside) overflowed to
    inf at the second step (1e150·1e300), and the copy-heads diagnosis of a failed solve passed τ = inf on."""
    seen = []

    def holds(x):
        seen.append(x)
        return x <= 1e250

    result = bisect_geometric(holds, 1.0, 1e300, iterations=200, rtol=1e-6)
    inside, outside = result.bracket
    assert all(math.isfinite(x) for x in seen)
    assert inside <= 1e250 < outside and outside / inside - 1 < 1e-6
    assert math.isfinite(result.value) and inside <= result.value <= outside


def test_window_and_coexistence_of_two_minima():
    """Scanned on x = 0.1 … 10 (13 points): the window of two minima is (1/e, e), refined to 2^-10 of a scan step,
    and the two minima are equally deep at x = 1 (ln x = 0, the symmetric quartic), to the brentq tolerance."""
    xs = np.geomspace(0.1, 10.0, 13)
    scan = [(x, len(_minima(x))) for x in xs]

    def depth(x):
        found = _minima(x)
        return found[-1][1] - found[0][1] if len(found) >= 2 else math.nan

    result = window_and_coexistence(scan, lambda x: len(_minima(x)), depth)
    lo, hi = result.bracket
    step = xs[1] / xs[0]
    assert lo >= 1 / math.e and hi <= math.e
    resolution = step ** (1 / 2**10) - 1  # ten bisections of one geometric scan step
    assert lo * math.e - 1 < resolution and math.e / hi - 1 < resolution
    assert result.status == "converged" and result.value == pytest.approx(1.0, abs=2 * result.error)
    with pytest.raises(ParameterError):
        window_and_coexistence([(1.0, 1)], lambda x: 1, depth)
    one_sided = window_and_coexistence([(x, k) for x, k in scan if x > 1.2], lambda x: len(_minima(x)), depth)
    assert one_sided.status == "not_found" and math.isnan(one_sided.value)


def test_log_crossing_over_many_decades():
    """f(x) = ln(x/x*) with x* = 3.7e5 between 1e-3 and 1e12: the root in ln x, polished in mpmath to 30 digits,
    with the vectorised scan and with the scalar one."""
    x_star = mpmath.mpf("3.7e5")
    for values in (None, lambda s: s - math.log(3.7e5)):
        with mpmath.workdps(50):
            result = log_crossing(lambda x: math.log(x / 3.7e5), lambda x: mpmath.log(x / x_star), 1e-3, 1e12, digits=30,
                                  values=values)
            assert result.status == "converged"
            assert abs(mpmath.exp(result.value_mp) / x_star - 1) < mpmath.mpf(10) ** -29
