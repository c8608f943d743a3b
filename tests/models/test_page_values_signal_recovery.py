"""The numbers of docs/models/signal_recovery.md that no other test holds, read from the page and checked against an
independent reference (the derivation's large-L closed form written out here in mpmath) or against what the page's
command prints, to the page's printed digits or within its printed error."""

from __future__ import annotations

import math
import re

import mpmath as mp
import pytest

from attnphase.api import signal_recovery as api
from model_pages import PAGES, page_table_after

PAGE = "signal_recovery.md"
HEADLINE = dict(d=1000, L=10500, R=500, theta=0.25)  # θ√d or direct, ρ = 1 below


def _page_text() -> str:
    return " ".join((PAGES / PAGE).read_text().split())


def _row(first_cell: str) -> str:
    (row,) = [cells for cells in page_table_after(PAGE, "## Current values") if cells[0].startswith(first_cell)]
    return row[1]


def _number(text: str) -> float:
    return float(text.replace("−", "-"))


def _half_unit(printed: str) -> float:
    """Half a unit in the last printed digit of a decimal or e-notation number."""
    mantissa, _, exponent = printed.replace("−", "-").partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0))


def _within_digits(value: float, printed: str) -> bool:
    return abs(value - _number(printed)) <= _half_unit(printed) * (1 + 1e-9)


# -- the large-L closed form of sign model A (derivations/signal_recovery.md), β = σ = 1 unless given -------------
def _closed_form(rho, theta_d, pi, d_over_L=0, beta=1, sigma=1):
    """J_∞(ρ) = S₁² + S₂²θ_d²(1 − ρ²) + (d − 1)/L · N₂/M₀², and its parts: the first two terms and N₂/M₀²."""
    e0 = lambda mu: mp.exp(beta**2 * sigma**2 / 2 + beta * mu)  # noqa: E731
    e1 = lambda mu: (beta * sigma**2 + mu) * e0(mu)  # noqa: E731
    e2 = lambda mu: mp.exp(2 * beta**2 * sigma**2 + 2 * beta * mu)  # noqa: E731
    M0 = pi * e0(rho * theta_d) + (1 - pi) * e0(0)
    M1 = pi * e1(rho * theta_d) + (1 - pi) * e1(0)
    N2 = pi * e2(rho * theta_d) + (1 - pi) * e2(0)
    S1, S2 = M1 / M0, pi * e0(rho * theta_d) / M0
    signal = S1**2 + S2**2 * theta_d**2 * (1 - rho**2)
    spread = sigma**2 * N2 / M0**2
    return signal + d_over_L * spread, signal, spread


def _slopes_at(rho, theta_d, pi):
    """(∂ρ of the first two terms, ∂ρ of N₂/M₀²) at ρ."""
    return (mp.diff(lambda r: _closed_form(r, theta_d, pi)[1], rho),
            mp.diff(lambda r: _closed_form(r, theta_d, pi)[2], rho))


def test_model_A_thresholds_for_a_stable_minus_xi_are_the_closed_forms_roots():
    """The page's conditions for J′(−1) < 0 (−ξ stable): βθ_d above the root of the signal terms' slope at ρ = −1
    (π = 1/21 and ½), where the spread term's slope is negative too, so for any d/L; (d − 1)/L above the ratio of the
    two slopes at θ_d = 0.25, 0.5, 1 (π = 1/21), where the signal terms rise and the spread term falls; the headline's
    interior unstable point ρ* and Φ(ρ*√d); and J′(0) = 2βσ²θ_dπ + 2βθ_d³π²(1 − π), the spread term flat at 0. Each
    root is the page's number to its printed digits."""
    page = _page_text()
    quoted = re.search(r"J′\(−1\) < 0 for any d/L once βθ_d > ([\d.]+) at π = 1/21, ([\d.]+) at π = ½\) or when d/L "
                       r"is large \(\(d − 1\)/L > ([\d.]+) at θ_d = 0\.25, > ([\d.]+) at θ_d = 0\.5, > ([\d.]+) at "
                       r"θ_d = 1, π = 1/21\)", page)
    headline = re.search(r"\(headline: ρ\* = (−[\d.]+), Φ ≈ ([\d.e-]+)\)", page)
    assert quoted is not None and headline is not None
    with mp.workdps(30):
        for pi, printed in ((mp.mpf(1) / 21, quoted[1]), (mp.mpf(1) / 2, quoted[2])):
            root = mp.findroot(lambda t: _slopes_at(-1, t, pi)[0], _number(printed))
            assert _within_digits(float(root), printed), (pi, root, printed)
            for theta_d in (root, root * 1.5, root * 3, root * 10):
                assert _slopes_at(-1, theta_d, pi)[1] < 0  # the d/L term never raises J′(−1) there
            assert _slopes_at(-1, root * 0.9, pi)[0] > 0 > _slopes_at(-1, root * 1.1, pi)[0]
        pi = mp.mpf(1) / 21
        for theta_d, printed in zip(("0.25", "0.5", "1"), quoted.groups()[2:]):
            signal, spread = _slopes_at(-1, mp.mpf(theta_d), pi)
            assert signal > 0 > spread
            assert _within_digits(float(-signal / spread), printed), (theta_d, -signal / spread, printed)
        # the headline: d = 1000, L = 10 500, R = 500, θ_d = 0.25√d
        d, theta_d, d_over_L = 1000, mp.mpf("0.25") * mp.sqrt(1000), mp.mpf(999) / 10500
        slope = lambda r: mp.diff(lambda x: _closed_form(x, theta_d, pi, d_over_L)[0], r)  # noqa: E731
        grid = [mp.mpf(k) / 100 - 1 for k in range(101)]
        roots = [mp.findroot(slope, (a, b), solver="anderson") for a, b in zip(grid, grid[1:])
                 if slope(a) * slope(b) < 0]
        assert len(roots) == 1 and slope(-1) < 0 < slope(0)  # −ξ stable, ρ* between the basins
        rho_star = roots[0]
        assert _within_digits(float(rho_star), headline[1])
        assert _within_digits(float(mp.ncdf(rho_star * mp.sqrt(d))), headline[2])
        # J′(0): the spread term's slope vanishes at 0, so the formula holds at any d/L (here β, σ ≠ 1)
        for beta, sigma, theta_d in ((1, 1, mp.mpf("0.7")), (mp.mpf(2), mp.mpf("0.5"), mp.mpf(3))):
            at_zero = mp.diff(lambda r: _closed_form(r, theta_d, pi, mp.mpf(5), beta, sigma)[0], 0)
            formula = 2 * beta * sigma**2 * theta_d * pi + 2 * beta * theta_d**3 * pi**2 * (1 - pi)
            assert abs(at_zero - formula) < mp.mpf(10) ** -20 * formula


def _mass_row():
    text = _row("noise-token mass at ρ = 1, headline size")
    quoted = re.fullmatch(r"θ√d: ([\d.]+) ± ([\d.]+) \(large L: ([\d.]+) ± ([\d.]+); → 0 as d → ∞\); direct: "
                          r"([\d.]+) ± ([\d.]+) \(large L: ([\d.]+); does not vanish: βθ_d stays 0\.25, "
                          r"log\(\(1 − π\)/π\) = ([\d.]+)\)", text)
    assert quoted is not None, text
    return quoted.groups()


def test_the_pages_large_L_noise_masses_are_the_closed_form():
    """The row's large-L masses are (1 − π)/(πe^{βθ_d} + 1 − π) (the derivation's m_noise, σ = β = 1, ρ = 1) to their
    printed digits, log((1 − π)/π) = log 20, and the exact masses lie within the closed form's error of it (θ√d) or
    round to it (direct). (What `solve` prints for them: the slow test below.)"""
    sqrt_d, _, sqrt_d_large, sqrt_d_large_error, direct, _, direct_large, log_odds = _mass_row()
    pi = 500 / 10500
    for theta_d, printed in ((0.25 * math.sqrt(1000), sqrt_d_large), (0.25, direct_large)):
        assert _within_digits((1 - pi) / (pi * math.exp(theta_d) + 1 - pi), printed)
    assert _within_digits(math.log((1 - pi) / pi), log_odds)
    assert abs(_number(sqrt_d) - _number(sqrt_d_large)) <= _number(sqrt_d_large_error)
    assert abs(_number(direct) - _number(direct_large)) <= _half_unit(direct_large)


@pytest.mark.slow
def test_the_pages_exact_noise_masses_are_what_solve_prints():
    """The row's masses at the headline size, θ√d and direct, are `solve`'s to the printed digits of the value and of
    its error: the exact reduction (4096 draws, its default seed; about 10 s each) and `--reduction large-L`."""
    sqrt_d, sqrt_d_error, sqrt_d_large, sqrt_d_large_error, direct, direct_error, direct_large, _ = _mass_row()
    for scaling, printed, printed_error in (("sqrt-d", sqrt_d, sqrt_d_error), ("direct", direct, direct_error)):
        r = api.solve(**HEADLINE, rho=1.0, theta_scaling=scaling)
        assert r.method == "finite-L" and r.status == "converged" and r.samples == 4096
        assert _within_digits(r.nuisance_mass, printed), (scaling, r.nuisance_mass)
        assert _within_digits(r.nuisance_mass_error, printed_error), (scaling, r.nuisance_mass_error)
    for scaling, printed, printed_error in (("sqrt-d", sqrt_d_large, sqrt_d_large_error),
                                            ("direct", direct_large, None)):
        r = api.solve(**HEADLINE, rho=1.0, theta_scaling=scaling, reduction="large-L")
        assert r.status == "converged" and _within_digits(r.nuisance_mass, printed), (scaling, r.nuisance_mass)
        if printed_error is not None:
            assert _within_digits(r.nuisance_mass_error, printed_error), r.nuisance_mass_error


@pytest.mark.slow
def test_the_pages_large_L_against_exact_row_is_what_solve_prints():
    """The row "large-L form against the exact reduction": each relative gap of J at ρ = 1 (large-L over the exact
    reduction with 1024 draws, minus one) and its error (the reduction's relative error) to the printed digits; the
    concentrating point's J on both sides and its expansion ratio q; the headline's error bound; and the ratio of the
    forced closed form to the exact value at d = 16, L = 64, β = 3 (default draws), whose row values the page gives
    as the commands print them (about 15 s)."""
    text = _row("large-L form against the exact reduction")
    quoted = re.fullmatch(
        r"within 0\.5% at L ≥ 2000 while the attention stays spread \(at ρ = 1: direct, d = 200, L = 2000, R = 100, "
        r"θ = 0\.5: ([\d.]+)% ± ([\d.]+)%; θ√d headline, L = 10 500: ([\d.]+)% ± ([\d.]+)%, its error bound "
        r"([\d.]+)%\); ([\d.]+)% ± ([\d.]+)% when it concentrates \(θ√d, d = 1000, L = 2000, R = 100: J = ([\d.]+) ± "
        r"([\d.]+) against ([\d.]+) ± ([\d.]+), q = ([\d.]+)\); about (\d+) times the exact value \(J = (\d+) against "
        r"([\d.]+) ± ([\d.]+)\) at d = 16, L = 64, R = 8, θ = 1, β = 3, ρ = 0\.5 \(status limited\)", text)
    assert quoted is not None, text
    g = quoted.groups()

    def pair(d, L, R, theta, scaling, **options):
        exact = api.solve(d, L, R, theta, 1.0, theta_scaling=scaling, samples=1024, **options)
        large = api.solve(d, L, R, theta, 1.0, theta_scaling=scaling, reduction="large-L", **options)
        assert exact.method == "finite-L" and large.method == "large-L"
        return exact, large

    for (d, L, R, theta, scaling), (gap, gap_error) in (((200, 2000, 100, 0.5, "direct"), g[0:2]),
                                                        ((1000, 10500, 500, 0.25, "sqrt-d"), g[2:4]),
                                                        ((1000, 2000, 100, 0.25, "sqrt-d"), g[5:7])):
        exact, large = pair(d, L, R, theta, scaling)
        assert large.status == "converged"
        assert _within_digits(100 * (large.J / exact.J - 1), gap), (L, large.J, exact.J)
        assert _within_digits(100 * exact.J_error / exact.J, gap_error), (L, exact.J_error)
        if L == 10500:
            assert _within_digits(100 * large.J_error / large.J, g[4])
        if L == 2000 and d == 1000:
            assert _within_digits(large.J, g[7]) and _within_digits(large.J_error, g[8])
            assert _within_digits(exact.J, g[9]) and _within_digits(exact.J_error, g[10])
            q = api.large_L_accuracy(api.make_parameters(d, L, R, theta, scaling), [1.0]).expansion_ratio[0]
            assert _within_digits(q, g[11])
    exact = api.solve(16, 64, 8, 1.0, 0.5, score_scale=3.0)
    large = api.solve(16, 64, 8, 1.0, 0.5, score_scale=3.0, reduction="large-L")
    assert large.status == "limited" and exact.status == "converged"
    assert _within_digits(large.J, g[13]) and _within_digits(exact.J, g[14]) and _within_digits(exact.J_error, g[15])
    assert _within_digits(large.J / exact.J, g[12])


@pytest.mark.slow
def test_the_pages_overflowing_controls_example_is_what_solve_prints():
    """d = 16, L = 64, R = 8, θ = 1, ρ = 0.3, σ = 100 (the controls' exact means overflow): J and the noise mass with
    their errors are `solve`'s to the printed digits, J lies within the combined errors of the page's reference
    from full token sequences (a measurement kept on the page) and the noise mass the quoted number of them off
    (about 3 s)."""
    quoted = re.search(r"at d = 16, L = 64, R = 8, θ = 1, ρ = 0\.3, σ = 100, J = ([\d ]+) ± (\d+) and noise mass "
                       r"([\d.]+) ± ([\d.]+) against ([\d ]+) ± (\d+) and ([\d.]+) ± ([\d.]+) from 10⁵ full token "
                       r"sequences", _page_text())
    assert quoted is not None
    J, J_error, mass, mass_error, reference, reference_error = (quoted[i].replace(" ", "") for i in range(1, 7))
    r = api.solve(16, 64, 8, 1.0, 0.3, sigma=100.0)
    assert r.method == "finite-L" and r.status == "converged"
    for value, printed in ((r.J, J), (r.J_error, J_error), (r.nuisance_mass, mass), (r.nuisance_mass_error,
                                                                                   mass_error)):
        assert _within_digits(value, printed), (value, printed)
    assert abs(r.J - float(reference)) <= 3 * math.hypot(r.J_error, float(reference_error))
    # the noise mass, which the reference does not cover as well, lies the quoted number of combined errors off
    reference_mass, reference_mass_error = float(quoted[7]), float(quoted[8])
    z = re.search(r"\(the noise mass lies ([\d.]+) of the combined errors off\)", _page_text()).group(1)
    assert _within_digits((r.nuisance_mass - reference_mass) / math.hypot(r.nuisance_mass_error, reference_mass_error),
                          z)
