"""`solve` of the copy-heads reduced actions against references written here: the linear Convention-A action of the
spec (§2b) in mpmath at 60 digits, its large-n closed form, and the softmax action's own stationarity in mpmath."""

from __future__ import annotations

import math
import re

import mpmath
import numpy as np
import pytest

from attnphase.api import copy_heads as api
from attnphase.models.copy_heads.instance import CopyHeadsInstance

DPS = 60


def _spec_action(t, c, L, V, n):
    """Convention A (spec §2b), σ² = s₁ = τ = β = 1, G = (A + b11ᵀ)/L: the row sum t has variance
    (L² s₁ + L σ²/T)/L² (the bias and the mean score, T = L rows), the copy strength c precision L²(L − 1)/σ²."""
    eps = 1 - mpmath.mpf(1) / V
    lam_t, lam_c = mpmath.mpf(L) ** 2 / (L**2 + 1), mpmath.mpf(L) ** 2 * (L - 1)
    m, q = (t + (L - 1) * c) / L, (t * t + (L - 1) * c * c) / L
    u, u1 = n * q / V, n * t * t / V
    return (lam_t * t * t / 2 + lam_c * c * c / 2 + V * (V - 1) / mpmath.mpf(2) * mpmath.log1p(u)
            - eps * n / 2 * m * m * (n / V) / (1 + u) + V / mpmath.mpf(2) * mpmath.log1p(u1)
            - n / (2 * V) * u1 / (1 + u1))


def _relaxed_c(t, L, V, n):
    """c at ∂S/∂c = 0 for this t (the copy direction is stiff, curvature ~L³: one root, Newton's method from c = t)."""
    return mpmath.findroot(lambda c: mpmath.diff(lambda c_: _spec_action(t, c_, L, V, n), c), t)


def _reference_minimum(L, V, n, t_lo, t_hi):
    """(t, c, S) of the minimum of the spec action with t in (t_lo, t_hi): the root of the profile's slope
    dS/dt = ∂S/∂t at c relaxed (envelope theorem), bracketed and narrowed to 1e-40 relative (geometric means while
    the bracket spans more than a factor 2, then the Illinois false position, which keeps the root bracketed and
    moves both ends; a bisection wherever the bracket did not halve over two steps)."""
    def slope(t):
        return mpmath.diff(lambda t_: _spec_action(t_, _relaxed_c(t, L, V, n), L, V, n), t)

    s_lo, s_hi = slope(t_lo), slope(t_hi)
    assert s_lo < 0 < s_hi
    side, widths = 0, []
    while t_hi - t_lo > mpmath.mpf(10) ** -40 * t_hi:
        widths.append(t_hi - t_lo)
        if t_hi > 2 * t_lo:
            mid = mpmath.sqrt(t_lo * t_hi)
        elif len(widths) >= 3 and widths[-1] > widths[-3] / 2:
            mid = (t_lo + t_hi) / 2
        else:
            mid = (t_lo * s_hi - t_hi * s_lo) / (s_hi - s_lo)
            if not t_lo < mid < t_hi:
                mid = (t_lo + t_hi) / 2
        s_mid = slope(mid)
        if s_mid < 0:
            t_lo, s_lo = mid, s_mid
            s_hi, side = (s_hi / 2 if side == -1 else s_hi), -1
        else:
            t_hi, s_hi = mid, s_mid
            s_lo, side = (s_lo / 2 if side == 1 else s_lo), 1
    t = (t_lo + t_hi) / 2
    c = _relaxed_c(t, L, V, n)
    return t, c, _spec_action(t, c, L, V, n)


@pytest.mark.parametrize("P", [16.9553695277, 16.955369528, 16.9553695276484])
def test_linear_solve_next_to_P_star_reports_the_true_minimum_within_its_error(P):
    """Just above P* = 16.95536952764839 (L = 4096, V = 4) the landscape is quartic and flat: the float64 minimiser
    stopped at t = 1.5e-5 … 9.5e-5 (three "stable minima", their actions above S(0, 0) = 0), the polish's error
    missed the minimum by twice itself. Now: one stable minimum besides the symmetric saddle, within its error of the
    60-digit minimum of the spec's action, and its action below S(0, 0)."""
    L, V = 4096, 4
    result = api.solve("linear", L, V, P)
    assert result.status == "converged", result.message
    stable = [m for m in result.minima if m.stable]
    assert len(stable) == 1
    best = result.global_minimum
    with mpmath.workdps(DPS):
        n = mpmath.mpf(P)  # the binary value of the float P
        t, c, S = _reference_minimum(L, V, n, mpmath.mpf(10) ** -12, mpmath.mpf(10) ** -3)
        assert S < 0
        assert abs(mpmath.mpf(best.c_uniform) - t) <= best.error
        assert abs(mpmath.mpf(best.c_copy) - c) <= best.error
        # the action is quadratic in the error of the point: its own float rounding dominates
        assert abs(mpmath.mpf(best.action) - S) <= 4 * 2**-53 * abs(S)
    assert best.error <= 1e-6 * best.c_uniform  # converged: the error is far below the value


def test_linear_solve_below_P_star_reports_only_the_symmetric_minimum():
    """At P = 16.95536952764 < P* (L = 4096, V = 4) the audit saw "4 stable minima": only t = c = 0 exists, a minimum
    (the 60-digit Hessian of the spec's action there is positive definite, and the quartic term is positive:
    second order)."""
    L, V, P = 4096, 4, 16.95536952764
    result = api.solve("linear", L, V, P)
    assert result.status == "converged", result.message
    assert len(result.minima) == 1
    (only,) = result.minima
    assert only.stable and only.c_uniform == 0.0 and only.c_copy == 0.0
    with mpmath.workdps(DPS):
        n = mpmath.mpf(P)
        tiny = mpmath.mpf(10) ** -20
        h_tt = mpmath.diff(lambda t: _spec_action(t, _relaxed_c(t, L, V, n), L, V, n), tiny, 2)
        assert h_tt > 0
        assert only.hessian_eigenvalues[0] == pytest.approx(float(h_tt), rel=1e-6)


def _large_n_root(L, V):
    """t = c at n → ∞ (σ² = s₁ = τ = 1): the slope along t = c, (λ_t + λ_c) t + V²/t − V/t³ (the log terms give
    V(V − 1)/t + V/t, the saturating data terms −εV/t³ − 1/t³), vanishes: λt⁴ + V²t² − V = 0."""
    lam = mpmath.mpf(L) ** 2 / (L**2 + 1) + mpmath.mpf(L) ** 2 * (L - 1)
    return mpmath.sqrt((-V * V + mpmath.sqrt(V**4 + 4 * lam * V)) / (2 * lam)), lam


# 1e16 and 1e17 (about 2 s each) in the slow suite; 1e14, 1e20 and 1e70 check the same in the default one
@pytest.mark.parametrize("P", [1e14, pytest.param(1e16, marks=pytest.mark.slow),
                               pytest.param(1e17, marks=pytest.mark.slow), 1e20, 1e70])
def test_linear_solve_at_large_P_finds_the_large_n_minimum(P):
    """At L = 16, V = 4, P = 1e20 solve reported t = c = −0.0099 (converged) and P = 1e14, 1e17 failed: the float64
    minimiser stops wherever the rounding of an action of size n leaves it. The global minimum is t = c = 0.17394
    (the large-n closed form), with a positive loss (it was −1.7e-16 at 1e16). P = 1e70 failed while the mpmath
    descent floored the Hessian's smaller eigenvalue (about 3n times the other) at 10^(−dps/2) of the larger."""
    L, V = 16, 4
    result = api.solve("linear", L, V, P)
    assert result.status == "converged", result.message
    best = result.global_minimum
    with mpmath.workdps(DPS + 2 * max(0, math.ceil(math.log10(P)) - 20)):  # n and the stiffness n: their digits besides
        t, lam = _large_n_root(L, V)
        # corrections: the saturation 1/u = V/(n t²) relative, and t − c held to ~λ t/(ε n) by the data term's
        # stiffness ε n in m²/q (ε = 3/4): 10× both, relative to t
        bound = 10 * (V / (P * t * t) + lam / (0.75 * P)) * t + best.error
        assert abs(best.c_uniform - t) <= bound and abs(best.c_copy - t) <= bound
        assert best.c_uniform >= 0
        # the loss at the 60-digit minimum of the spec's action, from the spec's formula (mean predictor, per
        # position); its change over the reported point's error is the tolerance (it depends on t − c ~ 1e-14 t
        # through 1 − m²/q, hence is sensitive to the point)
        n = mpmath.mpf(P)
        t_ref, c_ref, _ = _reference_minimum(L, V, n, t / 2, 2 * t)

        def loss(t_, c_):
            m, q = (t_ + (L - 1) * c_) / L, (t_ * t_ + (L - 1) * c_ * c_) / L
            w, u1 = (n * q / V) / (1 + n * q / V), n * t_ * t_ / V
            return (1 - mpmath.mpf(1) / V) * (1 - m * m / q * w * (2 - w)) + (1 - u1 / (1 + u1)) ** 2 / V

        reference = loss(t_ref, c_ref)
        spread = (abs(mpmath.diff(lambda x: loss(x, c_ref), t_ref)) + abs(mpmath.diff(lambda x: loss(t_ref, x), c_ref)))
        assert 0 < best.loss_mean_predictor
        assert abs(best.loss_mean_predictor - reference) <= spread * best.error + 4 * 2**-53 * reference
    for minimum in result.minima:
        assert minimum.c_uniform >= 0 and minimum.loss_mean_predictor >= 0


# -- the model page's claims --------------------------------------------------------------------------
def test_the_pages_causal_thresholds_and_softmax_fit_are_what_the_commands_compute():
    """The causal-mask P* of the page (they differed from digit 7 on: 24.0000446… at L = 2²⁰ against 24.0000457…) are
    threshold's 30-digit strings; the softmax fit the page quotes is the one `scaling` makes, recomputed here by a
    plain least-squares fit (scipy's linregress, Student-t 95% band) of ln(P*/ln²L) on ln L over the upper half of the
    sizes and over all of them."""
    import re

    from scipy import stats

    from model_pages import PAGES

    page = (PAGES / "copy_heads.md").read_text().replace("\n", " ")
    causal = api.Convention(boundary="causal")
    for L, convention in [(16, causal), (2**20, causal), (8, causal.with_(remainder="entropy"))]:
        digits = api.threshold("linear", L, 4, digits=30, convention=convention).P_star_digits
        assert digits in page, (L, digits)
    result = api.scaling("softmax", 4, 16, 2**20, digits=15)
    L = [p.L for p in result.points]
    P = [p.P_star for p in result.points]
    fit = result.fit["P_star"]
    quoted = re.search(r"L = 2¹²…2²⁰ \(9 sizes, what `scaling` fits\), gives ([\d.]+) \[([\d.]+), ([\d.]+)\] "
                       r"\(the 95% statistical band, .*?, it is the band `exponent_low/high` that "
                       r"`scaling` prints, \[([\d.]+), ([\d.]+)\]\); over all 17 sizes the same "
                       r"regression gives ([\d.]+) \[([\d.]+), ([\d.]+)\]", page)
    assert quoted is not None
    assert L[0] == 16 and L[-1] == 2**20 and len(L) == 17 and fit.n == 9
    for half, numbers in ((slice(8, None), quoted.groups()[:3]), (slice(None), quoted.groups()[5:])):
        x = [math.log(v) for v in L[half]]
        y = [math.log(p / math.log(v) ** 2) for p, v in zip(P[half], L[half])]
        line = stats.linregress(x, y)
        width = stats.t.ppf(0.975, len(x) - 2) * line.stderr
        for value, page_value in zip((line.slope, line.slope - width, line.slope + width), numbers):
            assert f"{value:.3f}" == page_value
    assert (f"{fit.exponent:.3f}", f"{fit.statistical_low:.3f}", f"{fit.statistical_high:.3f}") == quoted.groups()[:3]
    # the band the command prints as the exponent's: the statistical one widened by the drift of the local slope and
    # the geometric tail of its last changes, |d₁| r/(1 − r)
    upper = [math.log(p / math.log(v) ** 2) for p, v in zip(P[-4:], L[-4:])]
    slopes = np.diff(upper) / np.diff(np.log(L[-4:]))
    ratio = (slopes[2] - slopes[1]) / (slopes[1] - slopes[0])
    widening = abs(slopes[2] - fit.exponent) + abs(slopes[2] - slopes[1]) * ratio / (1 - ratio)
    systematic = re.search(r"local slope and the geometric tail of its changes, ([\d.]+), it is the band", page)
    assert systematic.group(1) == f"{widening:.3f}" == f"{fit.systematic:.3f}"
    assert (f"{fit.statistical_low - widening:.3f}", f"{fit.statistical_high + widening:.3f}") == \
        quoted.groups()[3:5] == (f"{fit.exponent_low:.3f}", f"{fit.exponent_high:.3f}")
    # with log corrections that band holds the next window's fit but not the limit 1 (audit ch15), as the page says
    window = re.search(r"the band holds the next window's fit \(L = 2²⁰…2²⁸: ([\d.]+)\) but not the limit 1", page)
    next_L = [2.0**k for k in range(20, 29)]
    next_P = [api.threshold("softmax", int(v), 4, 15).P_star for v in next_L]
    above = stats.linregress([math.log(v) for v in next_L],
                             [math.log(p / math.log(v) ** 2) for p, v in zip(next_P, next_L)])
    assert window.group(1) == f"{above.slope:.3f}"
    assert fit.exponent_low <= above.slope <= fit.exponent_high < 1.0


def _softmax_action(x, n, L, V, sigma2, log, exp, pi):
    """The homogeneous softmax action in the previous-position logit x at n, written out (as in test_copy_heads.py),
    in numpy or mpmath (log, exp, pi)."""
    eps, k = 1 - 1 / V, exp(sigma2)
    s, a = x + log(L - 1) + sigma2 / 2, 1 / (1 + exp(-x))
    u, u1 = n * (a**2 + k * (1 - a) ** 2 / (L - 1)) / V, n / V
    row_rate = L * (s**2 / (2 * sigma2) + log(2 * pi * sigma2) / 2)
    copy_data = V * (V - 1) / 2 * log(1 + u) - eps * n**2 * a**2 / (2 * V * (1 + u))
    return row_rate + copy_data + V / 2 * log(1 + u1) - n**2 / (2 * V**2 * (1 + u1))


def test_softmax_solve_finds_the_minimum_just_past_the_lower_spinodal():
    """L = 16, V = 4, P = 216.7, just past the lower spinodal (216.653): a stable minimum at c = 0.20604 and a maximum
    0.012 in x from it, both inside one cell of the fixed grid (step 0.06), which missed them ("1 stable minimum").
    Reference: the homogeneous action written out here (as in test_copy_heads.py), its slope scanned in numpy at steps
    of 1e-4 in x (|S'| between the two roots ~1e-3, the central difference's error ~1e-9) and each root polished by
    mpmath at 40 digits; solve reports exactly the reference's minima, each c within its error."""
    L, V, P, sigma2 = 16, 4, 216.7, 1.0

    def action(x, n, log=np.log, exp=np.exp, pi=np.pi):
        return _softmax_action(x, n, L, V, sigma2, log, exp, pi)

    xs = np.arange(-6.0, 4.0, 1e-4)
    slope = (action(xs + 1e-6, P) - action(xs - 1e-6, P)) / 2e-6
    roots = np.nonzero(np.sign(slope[:-1]) != np.sign(slope[1:]))[0]
    reference = []
    with mpmath.workdps(40):
        mp_action = lambda x: action(x, mpmath.mpf(P), mpmath.log, mpmath.exp, mpmath.pi)  # noqa: E731
        for i in roots:
            x = mpmath.findroot(lambda y: mpmath.diff(mp_action, y), (mpmath.mpf(xs[i]), mpmath.mpf(xs[i + 1])),
                                solver="anderson")
            if mpmath.diff(mp_action, x, 2) > 0:
                reference.append((L / (1 + mpmath.exp(-x)) - 1) / (L - 1))
    assert len(reference) == 2 and abs(reference[1] - mpmath.mpf("0.20604")) < 1e-5
    result = api.solve("softmax", L, V, P)
    stable = [m for m in result.minima if m.stable]
    assert len(stable) == 2, result.message
    for minimum, c in zip(sorted(stable, key=lambda m: m.c_copy), reference):
        assert abs(mpmath.mpf(minimum.c_copy) - c) <= minimum.error


@pytest.mark.parametrize("beta", [1e40, 1e60])
def test_softmax_solve_at_huge_n_reports_its_one_minimum_once_with_its_curvature(beta):
    """n = βP = 3e42: the float64 S' is rounding noise next to the copy minimum, and solve reported 47 "stable minima"
    (24 stable), all a = 1, with float64-noise curvatures ±1e11; at n = 3e62 the minimum lies beyond the float64
    grid and 35 noise points were reported. Reference: the action written out here, in mpmath at 150 digits
    (1 − a = e^−x resolved): S' = 0 bisected on x in [10, 300] (S' < 0 < S' at the ends), and S'' at it."""
    L, V, P = 16, 4, 300.0
    result = api.solve("softmax", L, V, P, convention=api.DEFAULT.with_(beta=beta))
    assert result.status == "converged", result.message
    assert len(result.minima) == 1 and result.minima[0].stable
    with mpmath.workdps(150):
        n = mpmath.mpf(beta) * P

        def action(y):
            return _softmax_action(y, n, L, V, 1, mpmath.log, mpmath.exp, mpmath.pi)

        lo, hi = mpmath.mpf(10), mpmath.mpf(300)
        assert mpmath.diff(action, lo) < 0 < mpmath.diff(action, hi)
        while hi - lo > mpmath.mpf(10) ** -30:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mpmath.diff(action, mid) < 0 else (lo, mid)
        curvature = mpmath.diff(action, lo, 2)
    (reported,) = result.minima[0].hessian_eigenvalues
    # the curvature at the reported x: its x derivative is about minus itself there, so the float64 rounding of x
    # (x ≈ 100: 1.4e-14) and the polish error (below 1e-12) move it by less than 1e-12 relative
    assert abs(reported - curvature) <= 1e-10 * curvature


# -- threshold's minor fields ---------------------------------------------------------------------------
def test_threshold_n_fields_are_as_accurate_as_P_and_a_failed_polish_prints_no_digits():
    """n = P in the default convention, so n_star and n_crossover must equal P_star and P_crossover within their
    errors (n_crossover was 2.2e-6 off at L = 2^20, ten times the error). The first attempt's failed polish at
    L = 2^43 printed 30 "digits" (wrong from the 15th): now none. The softmax message names ln n, not c."""
    linear = api.threshold("linear", 2**20, 4, digits=30)
    assert abs(linear.n_crossover - linear.P_crossover) <= linear.P_crossover_error
    assert abs(linear.n_star - linear.P_star) <= linear.error
    failed = api.threshold("linear", 2**43, 4, reduction="first-attempt")
    assert failed.status == "failed" and failed.P_star_digits == ""
    # why, and what locates it instead; not mpmath's own advice ("Try another starting point or tweak arguments")
    assert "convention-a, locates P*" in failed.message and "tweak" not in failed.message, failed.message
    none = api.threshold("softmax", 4, 2)
    assert "for ln n in [" in none.message and "for c in" not in none.message


# -- outside the solvable range -------------------------------------------------------------------------
def test_a_solve_outside_the_solvable_range_names_the_scale_and_the_range_where_it_is_solved():
    """τ = 1e308: the reduced action has no finite stationary point. The failure named no parameter (simulate did);
    it now names τ, and `solvable_range` (what simulate's refusal quotes) gives the range in which the solve converges
    at the same L, V, P, bisected to a decade: converged at its bound, failed a decade beyond it."""
    from attnphase.models.copy_heads.homogeneous import solvable_range

    L, V, P = 16, 4, 300.0
    failed = api.solve("softmax", L, V, P, convention=api.DEFAULT.with_(tau0=1e308))
    assert failed.status == "failed" and failed.global_index is None
    assert "tau0 = 1e+308 alone puts them there: with tau0 = 1 the action is solved" in failed.message  # (--tau): CLI
    inst = api.CopyHeadsInstance.validated(attention="softmax", L=L, V=V, convention=api.DEFAULT.with_(tau0=1e308))
    named = re.fullmatch(r"\(0, ([0-9.e+]+)\]", solvable_range(inst, P, "tau0"))
    assert named
    bound = float(named.group(1))
    assert api.solve("softmax", L, V, P, convention=api.DEFAULT.with_(tau0=bound)).status == "converged"
    assert api.solve("softmax", L, V, P, convention=api.DEFAULT.with_(tau0=bound * 10)).status == "failed"


def test_a_data_term_beyond_float64_fails_with_the_reason():
    """β = 1e308 at P = 300: n = βP overflows. The linear solve raised OverflowError (the mpmath descent's digits
    grow with log10 n); both attentions now fail saying so."""
    from attnphase.models.copy_heads.homogeneous import solve_instance

    for attention in ("softmax", "linear"):
        inst = api.CopyHeadsInstance.validated(attention=attention, L=16, V=4,
                                               convention=api.DEFAULT.with_(beta=1e308))
        result = solve_instance(inst, 300.0, diagnose=False)
        assert result.status == "failed" and result.minima == ()
        assert "the data term n overflows float64 at β = 1e+308, P = 300" in result.message


@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_a_data_term_that_underflows_to_zero_solves_the_prior_alone(attention):
    """β = P = 1e-200: n = βP is 0 in float64, and the mpmath descent's digits took log10 0 (ValueError). The prior
    alone is solved: its minimum is where n = 1e-10 puts it, to the data term's effect (of order n)."""
    empty = api.solve(attention, 4, 4, 1e-200, convention=api.DEFAULT.with_(beta=1e-200))
    tiny = api.solve(attention, 4, 4, 1e-10)
    assert empty.status == tiny.status == "converged", empty.message
    assert empty.n == 0.0
    assert abs(empty.global_minimum.c_copy - tiny.global_minimum.c_copy) <= 1e-9


@pytest.mark.parametrize("L, V", [(10, 8), (2**20, 4)])
def test_the_softmax_order_parameters_at_P_star_hold_every_printed_digit(L, V):
    """a_uniform, a_copy and the jump carry no error field, so every digit of their float64 must hold. Reference: the
    homogeneous action written out here, its two minima at n = P* (the 30-digit threshold; n = P under the default
    convention) polished by mpmath at 50 digits from the printed values' logits, and σ(x) rounded once to float64. From
    the float64 states they were off by 22 ulp (a_copy at L = 10, V = 8) and 2e-15 relative (the jump at L = 2²⁰;
    audit ch15)."""
    result = api.threshold("softmax", L, V, 30)
    assert result.order == "first" and result.status == "converged"
    with mpmath.workdps(50):
        n = mpmath.mpf(result.P_star_digits)

        def slope(x):
            return mpmath.diff(lambda y: _softmax_action(y, n, L, V, 1, mpmath.log, mpmath.exp, mpmath.pi), x)

        a = []
        for printed in (result.a_uniform, result.a_copy):
            x = mpmath.findroot(slope, mpmath.log(printed) - mpmath.log1p(-printed))
            a.append(1 / (1 + mpmath.exp(-x)))
        assert (result.a_uniform, result.a_copy, result.jump) == (float(a[0]), float(a[1]), float(a[1] - a[0]))


def test_the_centred_softmax_action_leaves_out_the_all_ones_terms_and_moves_nothing_else():
    """Audit d18: with centred tokens the softmax `action` kept the all-ones terms of one-hot tokens, which the centred
    model does not have (its linear actions drop them). They are constant in x at t = 1: the centred action is the
    one-hot one less (V/2) ln(1 + τn/V) − τn²/(2V²(1 + τn/V)), and the minima, the curvature and P* are the same."""
    L, V, P = 16, 5, 500.0
    one_hot = api.DEFAULT.with_(boundary="drop-first")
    centred = one_hot.with_(tokens="centred")
    plain, shifted = api.solve("softmax", L, V, P, one_hot), api.solve("softmax", L, V, P, centred)
    inst = CopyHeadsInstance.validated(attention="softmax", L=L, V=V, convention=centred)
    n, tau = inst.n_of_P(P), inst.values(exact=True)["tau"]
    with mpmath.workdps(40):
        u = mpmath.mpf(tau) * n / V
        all_ones = V / 2 * mpmath.log(1 + u) - mpmath.mpf(tau) * n**2 / (2 * V**2 * (1 + u))
    assert len(plain.minima) == len(shifted.minima) >= 1
    for a, b in zip(plain.minima, shifted.minima):
        assert (a.c_copy, a.hessian_eigenvalues) == (b.c_copy, b.hessian_eigenvalues)
        assert abs(mpmath.mpf(a.action) - mpmath.mpf(b.action) - all_ones) <= a.action_error + b.action_error
    P_one_hot = api.threshold("softmax", L, V, digits=12, convention=one_hot)
    P_centred = api.threshold("softmax", L, V, digits=12, convention=centred)
    assert P_centred.P_star_digits == P_one_hot.P_star_digits
