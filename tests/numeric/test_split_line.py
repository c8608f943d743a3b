"""The split-line rule on a minimisation with a known basin switch (closed-form references)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from scipy import integrate, special
from scipy.stats import norm

from attnphase.errors import ParameterError
from attnphase.numeric.basin_lines import LINE_CUTS
from attnphase.numeric.reflections import Reflection, ReflectionGroup, fold_orbits, orbit_rule
from attnphase.numeric.basin_planes import CountSplit
from attnphase.numeric.split_line import OuterSplit, SplitLineRule, split_line_expectation


def _shift(z):
    """c(z_1, z_2): basin A (minimiser 1 + 0.1 z_0, value z_0 + c) is global where z_0 < −c."""
    return 0.3 * np.sin(z[:, 1]) + 0.2 * z[:, 2]


def _basins(z, in_a):
    x = np.where(in_a, 1.0 + 0.1 * z[:, 0], -1.0)
    value = np.where(in_a, z[:, 0] + _shift(z), 0.0)
    return x[:, None], value


def global_minimum(z):
    return _basins(z, z[:, 0] + _shift(z) < 0)


def local_minimum(z, start):
    """Each start stays in its own basin (A: positive minimiser, B: negative), as a local solver would."""
    return _basins(z, start[:, 0] > 0)


def integrand(z, x, value):
    return np.column_stack([x[:, 0], value])


def reference():
    """E[x*] = E[2Φ(−c) − 1 − 0.1 φ(c)], E[min] = E[c Φ(−c) − φ(c)] over (z_1, z_2): smooth, 60² nodes."""
    t, w = special.roots_hermitenorm(60)
    w = w / w.sum()
    Z1, Z2 = np.meshgrid(t, t, indexing="ij")
    W = np.outer(w, w)
    c = 0.3 * np.sin(Z1) + 0.2 * Z2
    return np.array([np.sum(W * (2 * norm.cdf(-c) - 1 - 0.1 * norm.pdf(c))),
                     np.sum(W * (c * norm.cdf(-c) - norm.pdf(c)))])


def test_split_line_matches_closed_form_where_tensor_rule_does_not():
    exact = reference()
    result = split_line_expectation(global_minimum, local_minimum, integrand, 3, 0, SplitLineRule(24, 24, 1e-12))
    coarser = split_line_expectation(global_minimum, local_minimum, integrand, 3, 0, SplitLineRule(20, 24, 1e-12))
    # Each piece is smooth (linear times the normal density) and its end is located to 2⁻⁴⁰, so only
    # the outer Gauss-Hermite rule is left; its error is estimated by the change from 20 to 24 nodes.
    estimate = np.abs(result.value - coarser.value).max()
    assert estimate < 1e-9
    assert np.abs(result.value - exact).max() <= estimate
    assert result.n_split_lines == result.n_lines  # every line crosses the switching surface once
    assert result.unresolved_panels == 0
    # the same points on a tensor Gauss-Hermite rule: the jump in x* and the kink in the minimum
    t, w = special.roots_hermitenorm(24)
    w = w / w.sum()
    grid = np.stack(np.meshgrid(t, t, t, indexing="ij"), -1).reshape(-1, 3)
    weights = np.einsum("i,j,k->ijk", w, w, w).ravel()
    x, value = global_minimum(grid)
    tensor = weights @ integrand(grid, x, value)
    assert np.abs(tensor - exact).max() > 1e3 * np.abs(result.value - exact).max()


def _mirrored_basins(z, in_a):
    """Basin A: minimiser 1 + 0.1 z_0, value z_0 + c; basin B: minimiser −1 + 0.1 z_0, value −(z_0 + c). With c odd
    in (z_1, z_2), z → −z exchanges them: x*(−z) = −x*(z) at the same minimum value."""
    x = np.where(in_a, 1.0, -1.0) + 0.1 * z[:, 0]
    value = np.where(in_a, 1.0, -1.0) * (z[:, 0] + _shift(z))
    return x[:, None], value


def mirrored_global_minimum(z):
    return _mirrored_basins(z, z[:, 0] + _shift(z) < 0)


def mirrored_local_minimum(z, start):
    return _mirrored_basins(z, start[:, 0] > 0)


def mirrored_integrand(z, x, value):
    """x*, the minimum, x* z_0 and x* z_1: odd, even, even and odd under z → −z."""
    return np.column_stack([x[:, 0], value, x[:, 0] * z[:, 0], x[:, 0] * z[:, 1]])


def mirrored_reference():
    """Closed forms in z_0 (E[x*] = 2Φ(−c) − 1, E[min] = −E|z_0 + c| = −2φ(c) − c(2Φ(c) − 1),
    E[x* z_0] = 0.1 − 2φ(c)), then 60² Gauss-Hermite nodes in the smooth (z_1, z_2)."""
    t, w = special.roots_hermitenorm(60)
    w = w / w.sum()
    Z1, Z2 = np.meshgrid(t, t, indexing="ij")
    W = np.outer(w, w)
    c = 0.3 * np.sin(Z1) + 0.2 * Z2
    mean_x = 2 * norm.cdf(-c) - 1
    return np.array([np.sum(W * mean_x), np.sum(W * (-2 * norm.pdf(c) - c * (2 * norm.cdf(c) - 1))),
                     np.sum(W * (0.1 - 2 * norm.pdf(c))), np.sum(W * Z1 * mean_x)])


@pytest.mark.parametrize("count_split", [None, CountSplit(1, 24, 1e-11)])
def test_a_reflection_integrates_half_the_lines_and_gives_the_same_expectation(count_split):
    """z → −z with x* → −x*: one line (plane) of each mirror pair is integrated, the mirror's integral comes from
    the integrand at the reflected points; the result equals the rule that integrates every line (same nodes,
    mirrored quadrature decisions: rounding) and the closed form (within the outer rule's change 20 → 24)."""
    exact = mirrored_reference()
    reflection = Reflection((-1.0, -1.0, -1.0), (-1.0,))
    args = (mirrored_global_minimum, mirrored_local_minimum, mirrored_integrand, 3, 0)
    full, half, coarser = (split_line_expectation(*args, SplitLineRule(n, 24, 1e-12), count_split=count_split,
                                                  reflection=r)
                           for n, r in ((24, None), (24, reflection), (20, reflection)))
    np.testing.assert_allclose(half.value, full.value, rtol=1e-9, atol=1e-12)
    estimate = np.abs(half.value - coarser.value).max()
    assert estimate < 1e-8
    assert np.abs(half.value - exact).max() <= estimate + 1e-12
    assert abs(exact[0]) < 1e-12 < abs(exact[3])  # the odd columns: one vanishes by symmetry, one does not
    # 24 outer nodes per dimension: none is its own mirror, so exactly half the lines; the counts stand for all
    assert 2 * half.n_lines == full.n_lines and 2 * half.n_points == full.n_points
    assert half.n_split_lines == full.n_split_lines and half.n_switches == full.n_switches


def _exchanged_shift(z):
    """c(z_2, z_3): symmetric under z_2 ↔ z_3 and odd."""
    return 0.3 * (np.sin(z[:, 2]) + np.sin(z[:, 3])) + 0.2 * (z[:, 2] + z[:, 3])


def _exchanged_basins(z, in_a):
    """Two tokens: basin A (x* = (1, 1) + 0.1 (z_0, z_1), value z_0 + z_1 + c) is global where z_0 + z_1 + c < 0,
    basin B (x* = −(1, 1) + 0.1 (z_0, z_1), value −(z_0 + z_1 + c)) elsewhere. Exchanging the tokens, (z_0, z_1, z_2,
    z_3) → (z_1, z_0, z_3, z_2), exchanges x*'s coordinates; z → −z maps x* to −x*; both keep the minimum value."""
    sign = np.where(in_a, 1.0, -1.0)
    x = sign[:, None] + 0.1 * z[:, :2]
    return x, sign * (z[:, 0] + z[:, 1] + _exchanged_shift(z))


def exchanged_global_minimum(z):
    return _exchanged_basins(z, z[:, 0] + z[:, 1] + _exchanged_shift(z) < 0)


def exchanged_local_minimum(z, start):
    return _exchanged_basins(z, start[:, 0] > 0.1 * z[:, 0])


def exchanged_integrand(z, x, value):
    """x*_0, x*_1, the minimum, x*_0 z_0, x*_1 z_0, x*_0 z_2: the last three are not symmetric under the exchange."""
    return np.column_stack([x[:, 0], x[:, 1], value, x[:, 0] * z[:, 0], x[:, 1] * z[:, 0], x[:, 0] * z[:, 2]])


def exchanged_reference():
    """Closed forms in (z_0, z_1) through u = (z_0 + z_1)/√2 and a = c/√2 (E[x*_ℓ] = 2Φ(−a) − 1, E[min] =
    −√2 (2φ(a) + a(2Φ(a) − 1)), E[x*_0 z_0] = 0.1 − √2 φ(a), E[x*_1 z_0] = −√2 φ(a)), then 60² Gauss-Hermite
    nodes in the smooth (z_2, z_3)."""
    t, w = special.roots_hermitenorm(60)
    w = w / w.sum()
    Z2, Z3 = np.meshgrid(t, t, indexing="ij")
    W = np.outer(w, w)
    a = (0.3 * (np.sin(Z2) + np.sin(Z3)) + 0.2 * (Z2 + Z3)) / np.sqrt(2)
    mean_x = 2 * norm.cdf(-a) - 1
    return np.array([np.sum(W * mean_x), np.sum(W * mean_x),
                     np.sum(W * -np.sqrt(2) * (2 * norm.pdf(a) + a * (2 * norm.cdf(a) - 1))),
                     np.sum(W * (0.1 - np.sqrt(2) * norm.pdf(a))), np.sum(W * -np.sqrt(2) * norm.pdf(a)),
                     np.sum(W * Z2 * mean_x)])


def test_exchanging_the_plane_axes_integrates_a_quarter_of_the_planes_and_keeps_the_expectation():
    """Count-split planes (z_0, z_1) with Gauss-Hermite in (z_2, z_3), under the token exchange (which swaps the
    plane's two axes) and z → −z: one plane of each orbit is integrated, lines along z_0; an exchanged plane's
    integral is that of the imaged integrand on it (lines along the other axis). Not the same quadrature as the
    full rule, so the two agree within the rules' error (the change 10 → 12 of the outer rule), and with the
    closed form; the columns that the exchange maps onto each other come out exactly equal."""
    exact = exchanged_reference()
    group = (Reflection((-1.0,) * 4, (-1.0, -1.0)), Reflection((1.0,) * 4, (1.0, 1.0), (1, 0, 3, 2), (1, 0)))
    args = (exchanged_global_minimum, exchanged_local_minimum, exchanged_integrand, 4, 0)
    split = CountSplit(1, 16, 1e-9)
    full, folded, coarser = (split_line_expectation(*args, SplitLineRule(n, 16, 1e-10), count_split=split, reflection=r)
                             for n, r in ((12, None), (12, group), (10, group)))
    estimate = np.abs(folded.value - coarser.value).max()
    assert estimate < 1e-5
    assert np.abs(folded.value - exact).max() <= estimate
    assert np.abs(full.value - exact).max() <= estimate
    assert folded.value[0] == pytest.approx(folded.value[1], rel=1e-14)
    # 12² outer nodes: orbits of 4, of 2 on the diagonals z_2 = ±z_3 (12 nodes each): (144 + 24)/4 = 42 planes
    assert 144 * folded.n_lines == pytest.approx(42 * full.n_lines, rel=0.1)


def test_the_orbit_rule_folds_to_the_full_rule_for_any_integrand():
    """Σ_o w(o) f(o) over a rule the group maps onto itself equals Σ over the kept nodes of the table times
    f at their images, for any f: a 2-D Gauss-Hermite rule (10 nodes per axis, none at 0) under z → −z and the
    exchange of the axes; a node on a diagonal is kept with its weight shared by the elements fixing it."""
    t, w = special.roots_hermitenorm(10)
    nodes = np.stack(np.meshgrid(t, t, indexing="ij"), -1).reshape(-1, 2)
    weights = np.outer(w, w).ravel() / w.sum() ** 2
    group = ReflectionGroup.generated_by((Reflection((-1.0, -1.0), (1.0,)),
                                          Reflection((1.0, 1.0), (1.0,), (1, 0), None)), 2)
    kept, table = orbit_rule(nodes, weights, group.on([0, 1]))
    assert len(kept) == (100 + 2 * 10) // 4 and table.shape == (30, 4)
    np.testing.assert_allclose(table.sum(), 1.0, rtol=1e-14)

    def f(z):
        return np.column_stack([np.exp(0.3 * z[:, 0]) * np.cos(z[:, 1]), z[:, 0] ** 3 + z[:, 1]])

    columns = np.hstack([f(gz) for gz, _ in group.images(kept, np.zeros((len(kept), 1)))])
    np.testing.assert_allclose(fold_orbits(columns, table), weights @ f(nodes), rtol=1e-13, atol=1e-15)


def test_reflections_must_be_involutions_that_commute_and_keep_the_integrated_blocks():
    with pytest.raises(ParameterError):
        Reflection((1.0, 1.0, 1.0), (1.0,), (1, 2, 0))  # a 3-cycle: not an involution
    with pytest.raises(ParameterError):
        Reflection((1.0, -1.0), (1.0,), (1, 0))  # S² = −I
    with pytest.raises(ParameterError):  # the exchange of z_0 and z_1 does not commute with a sign flip of z_0
        ReflectionGroup.generated_by((Reflection((1.0, 1.0), (1.0,), (1, 0)), Reflection((-1.0, 1.0), (1.0,))), 2)
    args = (exchanged_global_minimum, exchanged_local_minimum, exchanged_integrand, 4, 0, SplitLineRule(6, 24, 1e-9))
    exchange = Reflection((1.0,) * 4, (1.0, 1.0), (1, 0, 3, 2), (1, 0))
    with pytest.raises(ParameterError):  # lines along z_0 alone: the exchange maps them onto lines along z_1
        split_line_expectation(*args, reflection=exchange)


def test_a_reflection_inside_an_outer_split_gives_the_same_expectation():
    """The outer split along z_2 (cut at z_2 = 0, a set the reflection maps onto itself) integrates one outer line
    of each mirror pair of its Gauss-Hermite rows (z_1): the same value as integrating all of them."""
    args = (mirrored_global_minimum, mirrored_local_minimum, mirrored_integrand, 3, 0, SplitLineRule(24, 24, 1e-12))
    split = OuterSplit(2, lambda z: z[:, 2], 24, 1e-10)
    full, half = (split_line_expectation(*args, outer_split=split, reflection=r)
                  for r in (None, Reflection((-1.0, -1.0, -1.0), (-1.0,))))
    np.testing.assert_allclose(half.value, full.value, rtol=1e-9, atol=1e-12)
    # the Kronrod estimates (~5e-12 here) are differences of O(1) sums: equal up to their rounding, ~1e-14
    np.testing.assert_allclose(half.outer_error, full.outer_error, rtol=0, atol=1e-13)
    assert 2 * half.n_lines == full.n_lines and half.n_switches == full.n_switches
    assert np.abs(half.value - mirrored_reference()).max() < 1e-8  # 24 nodes in z_1: 20 -> 24 moves < 1e-8 (above)


def test_a_reflection_of_the_wrong_size_raises():
    args = (mirrored_global_minimum, mirrored_local_minimum, mirrored_integrand, 3, 0, SplitLineRule(4, 8, 1e-8))
    with pytest.raises(ParameterError, match="signs"):
        Reflection((1.0, 0.5), (1.0,))
    with pytest.raises(ParameterError, match="reflection.signs"):
        split_line_expectation(*args, reflection=Reflection((-1.0, -1.0), (-1.0,)))
    with pytest.raises(ParameterError, match="reflection.minimiser_signs"):
        split_line_expectation(*args, reflection=Reflection((-1.0, -1.0, -1.0), (-1.0, 1.0)))


def test_bad_rule_raises():
    with pytest.raises(ParameterError):
        SplitLineRule(1, 16, 1e-10)
    with pytest.raises(ParameterError):
        SplitLineRule(8, 16, 0.0)


# ---------------------------------------------------------------------------------------------------
# Outer split: the line integrals themselves are not smooth across a known outer set
# ---------------------------------------------------------------------------------------------------
CREASE = 0.2


def _creased_switch(z):
    """s(z): basin A is global for z_0 < s. s has a crease at z_1 = CREASE, so the line integrals
    (closed forms of s) have a kink there, across which the outer Gauss-Hermite rule converges only
    algebraically (as the model's line integrals do across the pitchfork set of the prox)."""
    return 0.5 * np.abs(z[:, 1] - CREASE) + 0.3 * np.sin(z[:, 2]) - 0.3


def _crease_indicator(z):
    return z[:, 1] - CREASE


def _creased_basins(z, in_a):
    x = np.where(in_a, 1.0 + 0.1 * z[:, 0], -1.0)
    value = np.where(in_a, z[:, 0] - _creased_switch(z), 0.0)
    return x[:, None], value


def creased_global_minimum(z):
    return _creased_basins(z, z[:, 0] < _creased_switch(z))


def creased_local_minimum(z, start):
    return _creased_basins(z, start[:, 0] > 0)


def creased_reference():
    """E[x*], E[min]: the line integrals along z_0 in closed form (2Φ(s) − 1 − 0.1φ(s), −φ(s) − sΦ(s)),
    averaged over z_2 by 80-node Gauss-Hermite (smooth in z_2) and over z_1 by adaptive quadrature on
    both sides of the crease (smooth on each)."""
    t, w = special.roots_hermitenorm(80)
    w = w / w.sum()

    def lines(z1, k):
        s = 0.5 * abs(z1 - CREASE) + 0.3 * np.sin(t) - 0.3
        columns = (2 * norm.cdf(s) - 1 - 0.1 * norm.pdf(s), -norm.pdf(s) - s * norm.cdf(s))
        return float(w @ columns[k]) * norm.pdf(z1)

    return np.array([sum(integrate.quad(lines, lo, hi, args=(k,), epsabs=1e-14, epsrel=1e-13, limit=200)[0]
                         for lo, hi in ((-15.0, CREASE), (CREASE, 15.0))) for k in range(2)])


def test_outer_split_converges_where_the_outer_gauss_hermite_rule_does_not():
    exact = creased_reference()
    # old rule: Gauss-Hermite across the crease, off by > 1e-4 even on 24 outer nodes per dimension
    old = split_line_expectation(creased_global_minimum, creased_local_minimum, integrand, 3, 0, SplitLineRule(24, 24, 1e-12))
    assert np.abs(old.value - exact).max() > 1e-4
    # new rule: adaptive Gauss-Kronrod along z_1 cut at the crease, Gauss-Hermite in z_2 only
    split = OuterSplit(1, _crease_indicator, 48, 1e-12)
    coarse = split_line_expectation(creased_global_minimum, creased_local_minimum, integrand, 3, 0,
                                    SplitLineRule(12, 24, 1e-12), outer_split=split)
    fine = split_line_expectation(creased_global_minimum, creased_local_minimum, integrand, 3, 0,
                                  SplitLineRule(16, 24, 1e-12), outer_split=split)
    # error estimate: the change of the remaining Gauss-Hermite rule (12 -> 16) plus the outer Kronrod estimate
    estimate = np.abs(fine.value - coarse.value) + fine.outer_error
    assert np.all(estimate < 1e-7)
    assert np.all(np.abs(fine.value - exact) <= estimate)
    assert np.abs(fine.value - exact).max() < 1e-8
    assert fine.n_outer_cuts == 16  # one crease crossing per outer line
    assert fine.unresolved_panels == 0 and fine.unresolved_outer_panels == 0


def test_rotation_integrates_in_the_rotated_coordinates():
    """The closed-form problem above, posed in coordinates z = R u: with rotation=R the rule must give
    the unrotated result on the same points (to rounding)."""
    angle = 0.7
    R = np.eye(3)
    R[1:, 1:] = [[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]]

    def rotated(f):
        return lambda z, *rest: f(z @ R, *rest)  # u = Rᵀ z, rows: u = z R

    rule = SplitLineRule(10, 24, 1e-12)
    plain = split_line_expectation(global_minimum, local_minimum, integrand, 3, 0, rule)
    turned = split_line_expectation(rotated(global_minimum), rotated(local_minimum), rotated(integrand), 3, 0, rule,
                                    rotation=R)
    assert np.abs(turned.value - plain.value).max() < 1e-13
    assert np.abs(plain.value - reference()).max() < 1e-6  # and it is the right problem


def test_bad_rotation_or_outer_axis_raises():
    with pytest.raises(ParameterError):
        split_line_expectation(global_minimum, local_minimum, integrand, 3, 0, SplitLineRule(4, 8, 1e-8),
                               rotation=np.ones((3, 3)))
    with pytest.raises(ParameterError):
        split_line_expectation(global_minimum, local_minimum, integrand, 3, 0, SplitLineRule(4, 8, 1e-8),
                               outer_split=OuterSplit(0, _crease_indicator))
    with pytest.raises(ParameterError):
        OuterSplit(1, _crease_indicator, 48, 0.0)


# ---------------------------------------------------------------------------------------------------
# Count split: the number of switches on a line changes along an outer coordinate
# ---------------------------------------------------------------------------------------------------
WINDOW = 0.8


def _window_edge(z):
    """c(z_2[, z_3]): basin A is global on lines with z_1 > c only (in a window of z_0), so the lines have
    no switch below c and two above, and the line integrals jump at z_1 = c. With a fourth coordinate c
    also has a crease at z_3 = CREASE (for the outer split)."""
    edge = 0.3 + 0.1 * np.sin(z[..., 2])
    return edge if z.shape[-1] == 3 else edge + 0.4 * np.abs(z[..., 3] - CREASE)


def _window_centre(z1):
    return 0.2 + 0.1 * z1


def _window_value(z):
    """Basin A's minimum: negative (A global) for |z_0 − centre(z_1)| < WINDOW when z_1 > c, else > 0."""
    return (z[:, 0] - _window_centre(z[:, 1])) ** 2 - WINDOW**2 + 10.0 * (z[:, 1] < _window_edge(z))


def _window_basins(z, in_a):
    return np.where(in_a, 1.0 + 0.1 * z[:, 0], -1.0)[:, None], np.where(in_a, _window_value(z), 0.0)


def window_global_minimum(z):
    return _window_basins(z, _window_value(z) < 0)


def window_local_minimum(z, start):
    return _window_basins(z, start[:, 0] > 0)


def window_reference(crease=False):
    """E[x*], E[min] in closed form along the lines (x* = −1 and min = 0 off the window; on it
    ∫(2 + 0.1 z)φ = 2ΔΦ − 0.1Δφ and ∫((z − a)² − W²)φ = ΔΦ − Δ(zφ) + 2aΔφ + (a² − W²)ΔΦ), then Gauss-Legendre
    (60 nodes) in z_1 on (c, 7.5) (smooth there), Gauss-Hermite (60) in z_2 and, with the crease,
    Gauss-Legendre (60) in z_3 on each side of it."""
    t2, w2 = special.roots_hermitenorm(60)
    s, ws = special.roots_legendre(60)
    outer = [(t2[:, None], w2[:, None] / w2.sum())]
    if crease:
        halves = [(lo + (hi - lo) * (s + 1) / 2, (hi - lo) / 2 * ws * norm.pdf(lo + (hi - lo) * (s + 1) / 2))
                  for lo, hi in ((-7.5, CREASE), (CREASE, 7.5))]
        z3, w3 = np.concatenate([h[0] for h in halves]), np.concatenate([h[1] for h in halves])
        outer = [(np.stack(np.broadcast_arrays(t2[:, None], z3[None, :]), -1).reshape(-1, 2),
                  (w2[:, None] / w2.sum() * w3[None, :]).reshape(-1, 1))]
    points, weights = outer[0]
    edge = _window_edge(np.column_stack([np.zeros((len(points), 2)), points]))[:, None]
    z1 = edge + (7.5 - edge) * (s + 1) / 2
    w1 = (7.5 - edge) / 2 * ws * norm.pdf(z1)
    lo, hi = _window_centre(z1) - WINDOW, _window_centre(z1) + WINDOW
    dP, ph, pl = norm.cdf(hi) - norm.cdf(lo), norm.pdf(hi), norm.pdf(lo)
    inside_x = np.sum(w1 * (2 * dP - 0.1 * (ph - pl)), axis=1)
    inside_min = np.sum(w1 * (dP - (hi * ph - lo * pl) + 2 * _window_centre(z1) * (ph - pl)
                              + (_window_centre(z1) ** 2 - WINDOW**2) * dP), axis=1)
    return np.array([weights[:, 0] @ inside_x - weights.sum(), weights[:, 0] @ inside_min])


def test_count_split_converges_where_the_switch_count_changes():
    exact = window_reference()
    # old rule: Gauss-Hermite across the jump of the line integrals at z_1 = c
    old = split_line_expectation(window_global_minimum, window_local_minimum, integrand, 3, 0, SplitLineRule(24, 24, 1e-12))
    assert np.abs(old.value - exact).max() > 1e-4
    split = CountSplit(1, 48, 1e-11)
    coarse, fine = (split_line_expectation(window_global_minimum, window_local_minimum, integrand, 3, 0,
                                           SplitLineRule(n, 24, 1e-12), count_split=split) for n in (12, 16))
    # error estimate: the change of the remaining Gauss-Hermite rule (z_2) plus the Kronrod estimate along z_1
    estimate = np.abs(fine.value - coarse.value) + fine.count_error
    assert np.all(estimate < 1e-7)
    assert np.all(np.abs(fine.value - exact) <= estimate)
    assert fine.n_count_cuts == 16  # one change (0 -> 2 switches) per plane
    assert fine.unresolved_panels == 0 and fine.unresolved_count_panels == 0


@pytest.mark.slow
def test_count_split_inside_an_outer_split():
    """Both non-smooth sets at once: the jump at z_1 = c (count split) and a crease of c at z_3 = CREASE
    (outer split along z_3), Gauss-Hermite in z_2 only (~2-5 min: ~3e5 lines per evaluation)."""
    exact = window_reference(crease=True)
    results = [split_line_expectation(window_global_minimum, window_local_minimum, integrand, 4, 0,
                                      SplitLineRule(n, 12, 1e-12), count_split=CountSplit(1, 24, 1e-10, 40),
                                      outer_split=OuterSplit(3, lambda z: z[:, 3] - CREASE, 24, 1e-9))
               for n in (8, 12)]
    estimate = np.abs(results[1].value - results[0].value) + results[1].count_error + results[1].outer_error
    assert np.all(estimate < 1e-7)
    assert np.all(np.abs(results[1].value - exact) <= estimate)
    assert results[1].n_outer_cuts == 12 and results[1].unresolved_count_panels == 0


def test_bad_count_split_raises():
    with pytest.raises(ParameterError):
        CountSplit(1, 48, 0.0)
    with pytest.raises(ParameterError):  # the line axis
        split_line_expectation(window_global_minimum, window_local_minimum, integrand, 3, 0, SplitLineRule(4, 8, 1e-8),
                               count_split=CountSplit(0))
    with pytest.raises(ParameterError):  # the outer split's axis
        split_line_expectation(window_global_minimum, window_local_minimum, integrand, 3, 0, SplitLineRule(4, 8, 1e-8),
                               count_split=CountSplit(1), outer_split=OuterSplit(1, _crease_indicator))


# Two families of minima that coexist only inside one probe interval, (FOLD_BIRTH, FOLD_END), between the probes
# 0.19 and 0.58 of the 32 on [−6, 6]: A (minimiser 1 + 0.1 z_0, value z_0 − c) ends in a fold at FOLD_END, B (minimiser
# −1, value 0) is born at FOLD_BIRTH, and the global minimiser switches from A to B at z_0 = c(z_1) in between. A local
# solve continued from either probe lands on the other probe's minimiser (its own family has ended there), so the
# probes see no switch.
FOLD_BIRTH, FOLD_END = 0.25, 0.5


def _fold_switch(z):
    return 0.35 + 0.05 * np.sin(z[:, 1])


def _fold_families(z, in_a):
    return np.where(in_a, 1.0 + 0.1 * z[:, 0], -1.0)[:, None], np.where(in_a, z[:, 0] - _fold_switch(z), 0.0)


def fold_global_minimum(z):
    return _fold_families(z, z[:, 0] < _fold_switch(z))


def fold_local_minimum(z, start):
    """The start's family where it exists at z, else the other one."""
    return _fold_families(z, np.where(start[:, 0] > 0, z[:, 0] < FOLD_END, z[:, 0] <= FOLD_BIRTH))


def test_nodes_between_probes_with_far_apart_minimisers_reach_the_global_minimum(monkeypatch):
    """E[min] = E[−φ(c) − c Φ(c)] over z_1 (60 Gauss-Hermite nodes): the envelope has a kink at c inside a Kronrod
    panel, which the interval halving resolves once every node has its global minimum."""
    import attnphase.numeric.basin_lines as basin_lines

    t, w = special.roots_hermitenorm(60)
    c = 0.35 + 0.05 * np.sin(t)
    exact = w / w.sum() @ (-norm.pdf(c) - c * norm.cdf(c))

    def envelope(rule):
        return split_line_expectation(fold_global_minimum, fold_local_minimum, lambda z, x, value: value[:, None], 2,
                                      0, rule).value[0]

    rule = SplitLineRule(24, 32, 1e-11)
    # the panel tolerance over the ~10 panels of a line (24 Gauss-Hermite nodes are exact for the smooth c(z_1))
    assert abs(envelope(rule) - exact) <= 1e-10
    # without the starts from the probes' own minimisers the nodes between c and the middle of the probe interval
    # stay in the family the interpolated start lies in
    monkeypatch.setattr(basin_lines, "FOLD_GAP", np.inf)
    assert abs(envelope(rule) - exact) > 1e-4


def test_bad_line_cuts_raise():
    for cuts in ((0.0, -1.0), (-8.0, 0.0), ((0.0, 1.0),), ("a", "b"), (0.0, float("nan"))):
        with pytest.raises(ParameterError, match="line_cuts"):
            SplitLineRule(8, 16, 1e-10, cuts)
    assert SplitLineRule(8, 16, 1e-10, [-3, 0, 3]).line_cuts == (-3.0, 0.0, 3.0)  # a hashable tuple of floats


def test_fewer_line_cuts_give_the_same_expectation_within_the_panel_tolerance():
    """The cuts before the first panels change which panels the halving ends with, not the integral: each line's
    accepted panels meet the tolerance, so two choices differ by at most (panels per line) × tolerance per line.
    Wider first panels save points where they meet the tolerance (here 1e-7) and cost halvings where they do not
    (1e-10): why the lines of the state rules keep the default cuts."""
    wide_cuts = (-3.0, 0.0, 3.0)
    for tol, fewer in ((1e-7, True), (1e-10, False)):
        default = split_line_expectation(global_minimum, local_minimum, integrand, 3, 0, SplitLineRule(12, 24, tol))
        wide = split_line_expectation(global_minimum, local_minimum, integrand, 3, 0,
                                      SplitLineRule(12, 24, tol, wide_cuts))
        panels = 2 * (len(LINE_CUTS) + 2) * 2 ** 4  # a switch adds one piece; at most 4 halvings of each first panel
        assert np.abs(wide.value - default.value).max() <= panels * tol
        assert (wide.n_points < default.n_points) == fewer
        assert wide.unresolved_panels == default.unresolved_panels == 0


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs a machine where numba may use two threads (two cores)")
@pytest.mark.parametrize("count_split", [None, CountSplit(1, 16, 1e-8)])
def test_lines_in_blocks_on_two_threads_give_the_rows_of_one_call(count_split):
    """Every line (plane) is integrated on its own, so the blocks of `split_line_expectation` on worker threads
    (numeric.concurrent) must reproduce the expectation of one thread exactly."""
    args = (global_minimum, local_minimum, integrand, 3, 0, SplitLineRule(10, 24, 1e-10))
    values = {}
    previous = numba.get_num_threads()  # the suite's workers run on one (tests/conftest.py)
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            values[threads] = split_line_expectation(*args, count_split=count_split)
    finally:
        numba.set_num_threads(previous)
    assert np.array_equal(values[1].value, values[2].value)
    assert (values[1].n_points, values[1].n_lines) == (values[2].n_points, values[2].n_lines)
