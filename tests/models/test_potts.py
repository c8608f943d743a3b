"""The mean-field q-state Potts model against the closed forms (Wu, Rev. Mod. Phys. 54, 235 (1982)).

Independent references: β_c J = 2(q − 1) ln(q − 1)/(q − 2) for q ≥ 3 and 2 for q = 2, the jump of
m = (qx − 1)/(q − 1) at β_c, (q − 2)/(q − 1), evaluated in mpmath; the spinodals and the ordered state
from mpmath.findroot on the stationarity and fold equations in x written out by hand below (not the
package's symbolic source), and the free energy typed in by hand.
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.models.potts.parameters import MAX_BETA_J, MAX_Q
from attnphase.models.potts.solve import check_sweep_point, solve, sweep_point, threshold
from attnphase.reproduce.potts import closed_form_beta_c
from model_pages import page_table_after


def stationarity(q, J):
    """F(x, β) = ∂f/∂x for f = −(J/2)(x² + (1 − x)²/(q − 1)) + β⁻¹(x ln x + (1 − x) ln((1 − x)/(q − 1)))."""
    return lambda x, beta: -J * (x - (1 - x) / (q - 1)) + mpmath.log(x * (q - 1) / (1 - x)) / beta


def curvature(q, J):
    """∂F/∂x: −Jq/(q − 1) + β⁻¹(1/x + 1/(1 − x))."""
    return lambda x, beta: -J * q / (q - 1) + (1 / x + 1 / (1 - x)) / beta


def free_energy(q, J, x, beta):
    return -J / 2 * (x**2 + (1 - x) ** 2 / (q - 1)) + (x * mpmath.log(x) + (1 - x) * mpmath.log((1 - x) / (q - 1))) / beta


# solve and threshold at the same arguments in several tests of this module: each computed once (their results are
# frozen dataclasses). Tests of how the arguments themselves are read (their types, a decimal typed two ways) call
# solve and threshold directly.
solved = functools.cache(solve)
threshold_once = functools.cache(threshold)


@pytest.fixture(scope="module")
def thresholds():
    """threshold(q, J = 1, 30 digits) for q = 2..5, computed once for the tests below."""
    return {q: threshold_once(q, 1.0, 30) for q in (2, 3, 4, 5)}


@pytest.mark.parametrize("q", [3, 4, 5])
def test_beta_c_to_30_digits_first_order_with_its_spinodals_and_jump(q, thresholds):
    result = thresholds[q]
    assert result.order == "first" and result.status == "converged"
    with mpmath.workdps(60):
        exact = closed_form_beta_c(q)
        assert len(result.beta_c_digits.replace(".", "")) == 30
        assert abs(mpmath.mpf(result.beta_c_digits) - exact) <= mpmath.mpf(10) ** -29 * exact  # the printed digits
        # the float within its error, which is the float's rounding (the root's own error is below 1e-30 of it)
        assert abs(mpmath.mpf(result.beta_c) - exact) <= result.beta_c_error <= 2**-53 * float(exact) * (1 + 1e-10)
        # The ordered fold: F = 0 and ∂F/∂x = 0, solved by hand; the disordered instability: βJ = q.
        x_fold, beta_fold = mpmath.findroot([stationarity(q, 1.0), curvature(q, 1.0)], (mpmath.mpf(0.7), exact - 0.05))
        kinds = [s.kind for s in result.spinodals]
        assert kinds == ["fold", "branch_point"]
        fold, instability = result.spinodals
        assert abs(mpmath.mpf(fold.digits) - beta_fold) <= mpmath.mpf(10) ** -29 * beta_fold
        assert abs(mpmath.mpf(instability.digits) - q) <= mpmath.mpf(10) ** -29 * q
        assert beta_fold < exact < q and 1 / mpmath.mpf(q) < x_fold < 1
        # The jump: the ordered x solving F(x, β_c) = 0, and the closed form (q − 2)/(q − 1).
        x_ordered = mpmath.findroot(lambda x: stationarity(q, 1.0)(x, exact), (mpmath.mpf(0.6), 1 - mpmath.mpf(10) ** -30),
                                    solver="illinois")
        jump = (q * x_ordered - 1) / (q - 1)
        assert abs(jump - mpmath.mpf(q - 2) / (q - 1)) < mpmath.mpf(10) ** -40
        assert free_energy(q, 1.0, x_ordered, exact) == pytest.approx(free_energy(q, 1.0, 1 / mpmath.mpf(q), exact), abs=1e-45)
    # the jump within its error of the closed form (the float64 states had left 1.3e-15 at q = 3, with no error)
    with mpmath.workdps(60):
        assert abs(mpmath.mpf(result.jump) - mpmath.mpf(q - 2) / (q - 1)) <= result.jump_error <= 1e-16


@pytest.mark.parametrize("q", [6, 8, 20, 21, 50, 200, pytest.param(MAX_Q, marks=pytest.mark.slow)])  # MAX_Q: 5 s
def test_beta_c_to_15_digits_over_the_whole_range_of_q(q):
    """Every allowed q: the branches are followed to βJ = 1.25 q, where the ordered state's 1 − x ~ q e^{−1.25 q}
    (1e-269 at q = 500) sets the scale of ∂f/∂u."""
    result = threshold(q, 1.0, 15)
    assert result.order == "first" and result.status == "converged", result.message
    with mpmath.workdps(40):
        exact = closed_form_beta_c(q)
        assert abs(mpmath.mpf(result.beta_c_digits) - exact) <= mpmath.mpf(10) ** -14 * exact
    fold, instability = result.spinodals
    assert fold.kind == "fold" and float(fold.beta) < float(exact) < q
    assert instability.kind == "branch_point" and instability.beta == pytest.approx(q, rel=1e-14)
    with mpmath.workdps(60):
        assert abs(mpmath.mpf(result.jump) - mpmath.mpf(q - 2) / (q - 1)) <= result.jump_error <= 1e-16


def digits_resolving(beta, J=1.0):
    """Working digits that resolve 1 − x ~ e^{−βJ} next to 1, with 60 to spare."""
    return 60 + int(beta * J / math.log(10))


def typed(value):
    """A float as the decimal it was typed as (its shortest round-trip decimal), which `solve` takes β and J to be."""
    return mpmath.mpf(repr(float(value)))


def ordered_log_odds(q, J, beta):
    """The ordered root of u = βJm(u), m = (qx − 1)/(q − 1), x = 1/(1 + (q − 1)e^{−u}), in mpmath, at the decimal β and
    J typed."""
    with mpmath.workdps(digits_resolving(beta, J)):
        m = lambda u: (q / (1 + (q - 1) * mpmath.exp(-u)) - 1) / (q - 1)
        coupling = typed(beta) * typed(J)
        return mpmath.findroot(lambda u: u - coupling * m(u), coupling)


# Slow: βJ = 500 (9 s of mpmath at its digits) and q = 500 (5 s of continuation up to βJ = 1.25 q).
@pytest.mark.parametrize("q, beta", [(3, 30.0), (3, 100.0), pytest.param(3, MAX_BETA_J, marks=pytest.mark.slow),
                                     (21, 10.0), pytest.param(500, 13.0, marks=pytest.mark.slow)])
def test_solve_deep_in_the_ordered_phase(q, beta):
    """Far below the fold temperature the ordered minimum has 1 − x down to e^{−βJ}: its m and f against the
    hand-written stationarity and free energy in mpmath; the disordered state is a minimum while βJ < q."""
    result = solved(q, beta)
    assert result.status == "converged", result.message
    ordered = result.global_minimum
    u = ordered_log_odds(q, 1.0, beta)
    with mpmath.workdps(digits_resolving(beta)):
        x = 1 / (1 + (q - 1) * mpmath.exp(-u))
        assert ordered.stability == "stable" and ordered.m == pytest.approx(float((q * x - 1) / (q - 1)), abs=1e-15)
        assert ordered.free_energy == pytest.approx(float(free_energy(q, 1.0, x, beta)), rel=1e-14)
    disordered = [s for s in result.minima if abs(s.m) < 1e-9]
    assert len(disordered) == (1 if beta < q else 0)
    assert all(s.stability == "metastable" for s in disordered)


@pytest.mark.parametrize("q, beta", [(2, 2.0001), (2, 2.5), (3, 2.8), (3, 30.0), (21, 10.0)])
def test_solve_m_lies_within_its_error_of_the_mpmath_root(q, beta):
    """m_error covers the distance of m from the hand-written stationarity's root in mpmath, also next to the branch
    point at βJ = 2 (q = 2), where the curvature is 1e-5 and the float64 root had stopped 8e-13 away with no error. The
    root is at the decimal β typed: at q = 3, β = 2.8 the binary64 β's m is 3e-16 away, and m_error had covered that
    one only."""
    ordered = solved(q, beta).global_minimum
    u = ordered_log_odds(q, 1.0, beta)
    with mpmath.workdps(digits_resolving(beta)):
        x = 1 / (1 + (q - 1) * mpmath.exp(-u))
        assert abs(mpmath.mpf(ordered.m) - (q * x - 1) / (q - 1)) <= ordered.m_error <= 1e-15


def test_q2_is_continuous_at_beta_2(thresholds):
    result = thresholds[2]
    assert result.order == "second" and result.status == "converged" and result.jump == 0.0
    assert result.beta_c_digits == "2." + "0" * 29  # 30 significant digits, the zeros kept
    assert [s.kind for s in result.spinodals] == ["branch_point"]
    below, above = solve(2, 1.9), solve(2, 2.1)
    assert [s.m for s in below.minima] == [pytest.approx(0.0, abs=1e-12)]
    plus, minus = above.minima  # the two ordered states, equal free energies; m > 0 is reported as global
    assert above.global_minimum == plus and plus.m > 0.1 and minus.m == pytest.approx(-plus.m, abs=1e-12)
    assert plus.free_energy == pytest.approx(minus.free_energy, abs=1e-14)
    # m = tanh(βJm/2) in this normalisation (x = (1 + m)/2): the ordered minimum at β = 2.1 solves it.
    assert plus.m == pytest.approx(math.tanh(2.1 * plus.m / 2), abs=1e-12)


@pytest.mark.parametrize("q", [2, 3])
@pytest.mark.parametrize("J", [1e-6, 10.0, 1e6])
def test_beta_c_over_the_range_of_J(q, J):
    """β_c J is the closed form at every J (the branches are followed in βJ), to the 20 digits asked."""
    result = threshold(q, J, 20)
    assert result.status == "converged" and result.order == ("second" if q == 2 else "first"), result.message
    with mpmath.workdps(40):
        exact = closed_form_beta_c(q) / mpmath.mpf(repr(J))  # J as the decimal given (its repr)
        assert abs(mpmath.mpf(result.beta_c_digits) - exact) <= mpmath.mpf(10) ** -19 * exact
        assert abs(mpmath.mpf(result.beta_c) - exact) <= result.beta_c_error <= 2**-53 * float(exact) * (1 + 1e-5)
        instability = result.spinodals[-1]
        assert abs(mpmath.mpf(instability.digits) - q / mpmath.mpf(repr(J))) <= mpmath.mpf(10) ** -19 * q / J


def half_unit_in_the_last_place(digits_string):
    """Half a unit in the last printed digit of a positional digit string."""
    decimals = len(digits_string.split(".")[1]) if "." in digits_string else 0
    return mpmath.mpf(10) ** -decimals / 2


@pytest.mark.parametrize("q, J, digits", [(2, 0.3, 30), (7, 0.3, 60), (3, 1e-6, 40), (3, 1e-6, 60), (100, 123.456, 30),
                                          (4, 123.456, 50)])
def test_threshold_is_computed_at_the_decimal_J(q, J, digits):
    """β_c, the fold and the branch point at the decimal J (the float's repr), not at the binary64 number nearest to
    it: every printed digit within half a unit of the closed forms β_c = 2(q − 1)ln(q − 1)/((q − 2)J) (2/J for q = 2)
    and q/J, and of the fold solved by hand (mpmath.findroot on the stationarity and fold equations in βJ, divided by
    the decimal J); each float within its error of the value at the decimal J. At J = 0.3 the digits were those of
    2·6·ln 6/(5·float(0.3)) from the 17th on, and the errors did not cover the deviation."""
    result = threshold_once(q, J, digits)
    assert result.status == "converged", result.message
    with mpmath.workdps(digits + 30):
        coupling = mpmath.mpf(repr(J))
        exact = (2 if q == 2 else 2 * (q - 1) * mpmath.log(q - 1) / (q - 2)) / coupling
        references = {"branch_point": q / coupling}
        if q > 2:
            coupling_at_fold = result.spinodals[0].beta * J  # a starting point only
            x_start = (1 + math.sqrt(1 - 4 * (q - 1) / (q * coupling_at_fold))) / 2
            one = mpmath.mpf(1)  # J = 1 as an mpf: Jq/(q − 1) must not be a float
            x_fold, fold = mpmath.findroot([stationarity(q, one), curvature(q, one)],
                                           (mpmath.mpf(x_start), mpmath.mpf(coupling_at_fold)))
            references["fold"] = fold / coupling
        assert len(result.beta_c_digits.replace(".", "").lstrip("0")) == digits
        assert abs(mpmath.mpf(result.beta_c_digits) - exact) <= half_unit_in_the_last_place(result.beta_c_digits)
        assert abs(mpmath.mpf(result.beta_c) - exact) <= result.beta_c_error <= 2**-52 * result.beta_c
        assert sorted(s.kind for s in result.spinodals) == sorted(references)
        for spinodal in result.spinodals:
            reference = references[spinodal.kind]
            assert abs(mpmath.mpf(spinodal.digits) - reference) <= half_unit_in_the_last_place(spinodal.digits)
            assert abs(mpmath.mpf(spinodal.beta) - reference) <= spinodal.error <= 2**-52 * spinodal.beta
    with mpmath.workdps(60):
        assert abs(mpmath.mpf(result.jump) - mpmath.mpf(q - 2) / (q - 1)) <= result.jump_error <= 1e-16


def test_a_numpy_float_J_is_its_own_shortest_decimal():
    """numpy.float32(0.3) is the binary32 number 0.300000011920928955…; its shortest decimal at that precision is 0.3,
    which the user wrote: β_c = 2/J = 20/3 (q = 2) to 30 digits, as for the float 0.3."""
    result = threshold(2, np.float32(0.3), 30)
    assert result.beta_c_digits == "6.66666666666666666666666666667", result.beta_c_digits


def test_threshold_cli_takes_J_as_typed():
    """The CLI computes at the decimal typed: --J 0.3 gives β_c = 20/3 for q = 2, --J 0.30000000000000001 (the same
    float) gives 2/0.30000000000000001, to the 30 digits asked; from Python the float 0.30000000000000001 is 0.3 (its
    repr). The JSON echoes J as the float."""
    with mpmath.workdps(60):
        for typed in ("0.3", "0.30000000000000001"):
            out = CliRunner().invoke(main, ["threshold", "potts", "--q", "2", "--J", typed, "--digits", "30", "--json"])
            assert out.exit_code == 0, out.output
            payload = json.loads(out.stdout)
            exact = 2 / mpmath.mpf(typed)
            assert abs(mpmath.mpf(payload["beta_c_digits"]) - exact) <= half_unit_in_the_last_place(
                payload["beta_c_digits"])
            assert abs(mpmath.mpf(payload["beta_c"]) - exact) <= payload["beta_c_error"]
            assert payload["parameters"]["J"] == 0.3
        assert payload["beta_c_digits"] == "6.66666666666666644444444444444"
        assert threshold(2, 0.30000000000000001, 30).beta_c_digits == "6.66666666666666666666666666667"


def test_coupling_scales_beta(thresholds):
    """f depends on β and J through βJ only (up to the factor J): β_c(J = 2.5) = β_c(J = 1)/2.5. The messages name
    the control they give: β at J = 1, βJ (the followed one) otherwise."""
    other = threshold(4, 2.5, 16)
    with mpmath.workdps(40):
        assert abs(mpmath.mpf(other.beta_c_digits) * mpmath.mpf(2.5) - mpmath.mpf(thresholds[4].beta_c_digits)) < 1e-14
    assert f"jumps at βJ = {float(thresholds[4].beta_c_digits):.15g} " in other.message
    assert f"jumps at β = {float(thresholds[4].beta_c_digits):.15g} " in thresholds[4].message


def test_solve_minima_between_the_spinodals():
    """q = 3 at βJ = 2.76, between the fold (2.7456) and β_c (2.7726): the disordered minimum is global,
    the ordered one metastable; free energies and stationarity against the hand-written equations."""
    result = solved(3, 2.76)
    assert result.status == "converged" and len(result.minima) == 2
    disordered, ordered = result.minima
    assert result.global_minimum == disordered and disordered.stability == "stable" and ordered.stability == "metastable"
    assert disordered.m == pytest.approx(0.0, abs=1e-12)
    for state in result.minima:
        x = (1 + 2 * state.m) / 3
        assert abs(stationarity(3, 1.0)(mpmath.mpf(x), mpmath.mpf(2.76))) < 1e-12
        assert state.free_energy == pytest.approx(float(free_energy(3, 1.0, mpmath.mpf(x), mpmath.mpf(2.76))), abs=1e-13)
        assert state.curvature > 0 and state.transverse_curvature > 0
    above = solve(3, 2.9)
    assert above.global_minimum.m > 0.5 and [s.stability for s in above.minima] == ["stable", "metastable"]
    deep = solved(3, 3.5)  # past βJ = q: the disordered state is gone; m < 0 is a minimum of f(m) only
    assert deep.minima[0].m > 0.8 and all(s.stability == "saddle" for s in deep.minima[1:])
    assert sweep_point(2.9, 3) == {"m": above.global_minimum.m, "free_energy": above.global_minimum.free_energy,
                                   "local_minima": 2.0, "status": "converged"}


@pytest.mark.parametrize("q", [3, 8])
def test_solve_just_above_the_fold_spinodal_lists_the_metastable_ordered_minimum(q):
    """Between the fold spinodal β_f and the last followed point before it, the ordered minimum and the maximum it
    meets at the fold crossed no segment of the branch's points: q = 3 at β = 2.7457 (β_f + 5.6e-5) listed m = 0 alone.
    The fold from the hand-written fold equations (F = ∂F/∂x = 0, mpmath); above it, at relative distances 1e-8 and
    1e-4, the ordered minimum is the root of F in x between the fold's x and 1, bisected in mpmath (F < 0 between
    the maximum and the minimum, F → +∞ at x → 1); below it at 1e-8 there is no ordered minimum."""
    F, dF = stationarity(q, 1.0), curvature(q, 1.0)
    with mpmath.workdps(40):
        start = closed_form_beta_c(q)
        x_fold, beta_fold = mpmath.findroot([F, dF], (mpmath.mpf(0.7), start - 0.05))  # as the 30-digit test does
        for distance in (1e-8, 1e-4):
            beta = float(beta_fold * (1 + distance))
            lo, hi = x_fold, 1 - mpmath.mpf(10) ** -30
            assert F(lo, typed(beta)) < 0 < F(hi, typed(beta))
            x = mpmath.findroot(lambda x: F(x, typed(beta)), (lo, hi), solver="bisect")
            ordered = [s for s in solve(q, beta).minima if s.m > 0.1]
            assert len(ordered) == 1 and ordered[0].stability == "metastable", solve(q, beta).message
            assert abs(ordered[0].m - (q * x - 1) / (q - 1)) <= 1e-12
        (disordered,) = solve(q, float(beta_fold * (1 - 1e-8))).minima
        assert abs(disordered.m) <= 1e-15


def test_bad_input_names_the_parameter():
    for call, name in ((lambda: threshold(1), "q"), (lambda: threshold(2.5), "q"), (lambda: threshold(3, 0.0), "J"),
                       (lambda: threshold(3, 1.0, 0), "digits"), (lambda: solve(3, -1.0), "beta"),
                       (lambda: solve(True, 1.0), "q"), (lambda: solve(3, MAX_BETA_J * 1.01), "beta"),
                       (lambda: solve(3, MAX_BETA_J / 2 * 1.01, 2.0), "beta"), (lambda: threshold(MAX_Q + 1), "q")):
        with pytest.raises(ParameterError) as info:
            call()
        assert info.value.name == name
    for args, option in ((["threshold", "potts", "--q", "1"], "--q"), (["threshold", "potts", "--q", "2.5"], "--q"),
                         (["solve", "potts", "--q", "3", "--beta", "0"], "--beta"), (["solve", "potts", "--q", "3"], "--beta"),
                         (["solve", "potts", "--q", "3", "--beta", "600"], "--beta")):
        result = CliRunner().invoke(main, args + ["--json"])
        assert result.exit_code == 2 and option in result.output and "Traceback" not in result.output


def test_the_help_states_the_beta_range_that_solve_and_a_sweep_enforce(tmp_path):
    """--beta's help gave [1e-09, 1e+06] alone while solve and sweeps refuse βJ > 500: the help now states the bound
    on beta*J, and the refusal starts right past it (check_sweep_point is the check solve makes; solve itself runs
    at βJ = 500 in test_solve_deep_in_the_ordered_phase), at J = 1 and J = 2, in solve and in a sweep alike."""
    help_text = " ".join(CliRunner().invoke(main, ["solve", "potts", "--help"]).output.split())
    bound = float(re.search(r"beta\*J at most (\S+?)\.", help_text).group(1))
    assert bound == MAX_BETA_J == 500
    for J in (1.0, 2.0):
        check_sweep_point(bound / J, 3, J)
        with pytest.raises(ParameterError) as info:
            check_sweep_point(math.nextafter(bound / J, math.inf), 3, J)
        assert info.value.name == "beta" and "beta*J at most 500" in info.value.allowed
    refused = CliRunner().invoke(main, ["solve", "potts", "--q", "3", "--beta", "501", "--json"])
    assert refused.exit_code == 2 and "--beta" in refused.output and "beta*J at most 500" in refused.output
    store = tmp_path / "potts.sqlite"
    swept = CliRunner().invoke(main, ["sweep", "potts", "--grid", "beta=1,501", "--set", "q=3", "--workers", "1",
                                      "--store", str(store), "--json"])
    assert swept.exit_code == 2 and "--grid beta" in swept.output and "beta*J at most 500" in swept.output
    assert not store.exists()  # refused before any point ran


def test_the_documented_helpers_check_their_parameters():
    """coupling_range and branches (in the documented module's __all__) took q = -5 or NaN silently, and branches
    with q = 0 failed on an internal x0; now each names its argument and range, as solve does."""
    from attnphase.models.potts.solve import branches, coupling_range

    for call, name in ((lambda: coupling_range(-5), "q"), (lambda: coupling_range(math.nan), "q"),
                       (lambda: coupling_range(True), "q"), (lambda: coupling_range(3, math.nan), "coupling"),
                       (lambda: coupling_range(3, 0.0), "coupling"), (lambda: branches(0, (1, 2)), "q"),
                       (lambda: branches(3, (2, 1)), "control_range"), (lambda: branches(3, [1.0]), "control_range"),
                       (lambda: branches(3, (0.0, 2.0)), "control_range"), (lambda: branches(3, (1, 2), 0), "digits")):
        with pytest.raises(ParameterError) as info:
            call()
        assert info.value.name == name
    assert coupling_range(3) == (0.5, 3.75) and coupling_range(3, 10.0) == (0.5, 12.5)


@pytest.mark.parametrize("q, J, digits", [(3, 1.0, 1), (3, 1.0, 2), (3, 1e-6, 3), (3, 1e-6, 40), (3, 1e6, 15),
                                          (3, 1e6, 40), (2, 1.0, 1)])
def test_digit_strings_follow_one_notation_rule(q, J, digits):
    """Every digit string threshold prints: `digits` significant digits, positional where the decimal exponent e of
    the value satisfies −4 ≤ e < digits and scientific (d.ddd…e±x) otherwise, never a trailing point; q = 3 at one
    digit printed "3.", and the notation of small values changed with the digits asked."""
    result = threshold_once(q, J, digits)
    strings = [result.beta_c_digits] + [s.digits for s in result.spinodals]
    for text in strings:
        assert not text.endswith(".") and ".e" not in text, text
        mantissa, _, exponent = text.partition("e")
        significant = mantissa.replace("-", "").replace(".", "").lstrip("0")
        assert len(significant) == digits, text
        with mpmath.workdps(60):
            e = int(mpmath.floor(mpmath.log10(abs(mpmath.mpf(text)))))
        assert (exponent == "") == (-4 <= e < digits), text
    if (q, J, digits) == (3, 1.0, 1):
        assert result.beta_c_digits == "3"
    if (q, J, digits) == (3, 1e-6, 3):  # β_c = 4 ln 2 · 10⁶ = 2772588.7…
        assert result.beta_c_digits == "2.77e+6"


@pytest.mark.parametrize("q, beta, J", [(3, 2.8, 1.0), (4, 3.5, 1.0), (5, 2.0, 2.5), (3, 1.5, 2.0)])
def test_transverse_curvature_is_the_second_derivative_in_the_splitting(q, beta, J):
    """transverse_curvature is ∂²f/∂ε² (the full second derivative, as `curvature` is) for two unfavoured fractions
    p ± ε: against a central second difference in ε of the free energy of the q fractions typed in by hand (mpmath),
    and the closed form 2(q/β − J) at the disordered state (q = 3, β = 2.8: 0.142857; it was half that).

    curvature is ∂²f/∂u² along the family, u the log-odds: against mpmath.diff of f(x(u)), x = 1/(1 + (q − 1)e^−u),
    typed in by hand (it had lost its factor J unnoticed: the J ≠ 1 cases tell). Its error: it is evaluated in float64
    at the float64 stationary point u_f. With f′ = x(1 − x)(u/β − Jm) and, where f′ = 0, f″ = x(1 − x)(1/β − Jm′),
    m′ = qx(1 − x)/(q − 1) (by hand), the rounding of f′ is ε·T₁, T₁ = x(1 − x)(|u|/β + J|m|), so |u_f − u| ≤
    ε(T₁/|f″| + |u|) and the curvature is off by |f‴| times that, plus its own rounding ε·x(1 − x)(1/β + Jm′); a
    factor 8 for the operations each term takes (the largest error seen is 1/12 of the bound)."""
    result = solve(q, beta, J)
    assert result.minima
    unit = 2.0**-52  # float64 unit roundoff ε
    with mpmath.workdps(50):
        for state in result.minima:
            x = (1 + (q - 1) * mpmath.mpf(state.m)) / q
            p = (1 - x) / (q - 1)

            def f(eps):
                fractions = [x, p + eps, p - eps] + [p] * (q - 3)
                return (-J / 2 * sum(f_k**2 for f_k in fractions)
                        + sum(f_k * mpmath.log(f_k) for f_k in fractions) / beta)

            h = mpmath.mpf(10) ** -12
            second = (f(h) - 2 * f(0) + f(-h)) / h**2
            assert state.transverse_curvature == pytest.approx(float(second), rel=1e-9, abs=1e-12)
            if abs(state.m) <= state.m_error:
                assert state.transverse_curvature == pytest.approx(2 * (q / beta - J), rel=1e-12)

            def along(u):
                favoured = 1 / (1 + (q - 1) * mpmath.exp(-u))
                rest = (1 - favoured) / (q - 1)
                return (-J / 2 * (favoured**2 + (q - 1) * rest**2)
                        + (favoured * mpmath.log(favoured) + (q - 1) * rest * mpmath.log(rest)) / beta)

            u = mpmath.log(x * (q - 1) / (1 - x))
            f2, f3 = mpmath.diff(along, u, 2), mpmath.diff(along, u, 3)
            spread, slope = x * (1 - x), q * x * (1 - x) / (q - 1)
            position = unit * (spread * (abs(u) / beta + J * abs(state.m)) / abs(f2) + abs(u))
            error = 8 * (abs(f3) * position + unit * spread * (1 / beta + J * slope))
            assert abs(state.curvature - f2) <= error, (state.curvature, f2, error)


def test_cli_contract():
    out = CliRunner().invoke(main, ["threshold", "potts", "--q", "3", "--digits", "12", "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    assert payload["order"] == "first" and payload["beta_c_digits"] == "2.77258872224"
    assert payload["beta_c_error"] < 1e-12 and payload["jump"] == pytest.approx(0.5, abs=1e-12)
    assert [s["kind"] for s in payload["spinodals"]] == ["fold", "branch_point"] and payload["parameters"]["J"] == 1.0
    out = CliRunner().invoke(main, ["solve", "potts", "--q", "3", "--beta", "2.9", "--json"])
    payload = json.loads(out.stdout)
    assert out.exit_code == 0 and len(payload["minima"]) == 2
    assert payload["global"] == payload["minima"][0] and set(payload["global"]) >= {"m", "free_energy", "stability"}


def test_sweep_and_reproduce(tmp_path):
    store = tmp_path / "potts.sqlite"
    out = CliRunner().invoke(main, ["sweep", "potts", "--grid", "beta=2.6,2.9", "--set", "q=3", "--store", str(store),
                                    "--workers", "1", "--json"])
    assert out.exit_code == 0, out.output
    from attnphase.store import ResultStore

    with ResultStore(store) as results:
        rows = sorted(results.rows("potts"), key=lambda r: r.params["beta"])
    assert [r.result["m"] for r in rows] == [pytest.approx(0.0, abs=1e-12), sweep_point(2.9, 3)["m"]]
    from attnphase.reproduce.potts import run

    numbers = run(tmp_path / "report", quick=True, states=(3,))
    assert numbers["max_relative_deviation"] < 1e-14 and set(numbers["beta_c"]) == {3}
    assert (tmp_path / "report" / "report.md").exists() and (tmp_path / "report" / "landscape.png").exists()


def test_the_report_landscape_shows_every_curves_minimum_and_says_which_curve_is_which(tmp_path, monkeypatch):
    """audit u16 L8: landscape.png had a fixed y range (−0.01, 0.02) that cut off the βJ = 3 curve's minimum
    (−0.01018 at m ≈ 0.716), its legend gave only βJ and its y axis no unit. Reference: the mean-field free energy per
    spin in units of J, f(x) = −½[x² + (1 − x)²/(q − 1)] + [x ln x + (1 − x) ln((1 − x)/(q − 1))]/βJ with
    m = (qx − 1)/(q − 1), minimised on a grid of 2·10⁶ points in m (grid error ≪ the margin checked)."""
    import matplotlib

    from attnphase.reproduce import potts as report

    matplotlib.use("Agg")
    drawn = []
    landscape = report._landscape

    def kept(*curves):
        drawn.append(landscape(*curves))
        return drawn[-1]

    monkeypatch.setattr(report, "_landscape", kept)
    report.run(tmp_path, quick=True, states=(3,))
    ((fig, _),) = drawn
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    q = 3
    m = np.linspace(-1 / (q - 1), 1, 2_000_001)[1:-1]
    x = (1 + (q - 1) * m) / q

    def f(beta):
        return -0.5 * (x**2 + (1 - x) ** 2 / (q - 1)) + (x * np.log(x) + (1 - x) * np.log((1 - x) / (q - 1))) / beta

    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == 3
    deepest = []
    fold, beta_c = float(threshold(3, 1.0, 15).spinodals[0].digits), closed_form_beta_c(3)
    for beta, label, word in ((fold, labels[0], "spinodal"), (float(beta_c), labels[1], "β_c"),
                              (3.0, labels[2], "instability")):
        values = f(beta) - f(beta)[np.argmin(np.abs(m))]
        assert word in label and f"βJ = {beta:.6g}" in label, label
        deepest.append(values.min())
        assert low < deepest[-1] - 1e-4  # the minimum is inside the range, with a margin
        # the barrier between the two minima at β_c (f = 4.07e-4 at m = 0.25) lies inside the range too
        inner = values[(m > 0.05) & (m < 0.45)]
        assert inner.max() < high
    assert min(deepest) == pytest.approx(-0.0101782, abs=2e-7)  # βJ = 3, at m = 0.716 (audit u16)
    assert low > 1.5 * min(deepest)  # and the range is not so wide that the minimum is flattened
    assert "units of J" in ax.get_ylabel()


def test_the_pages_table_is_what_threshold_computes():
    """Every cell of the model page's two tables (q = 2 … 8, 30 digits) against `threshold potts`: β_c's digit string,
    `beta_c_error` and the deviation from the closed form (mpmath) to the 2 digits printed, the fold spinodal's
    `digits` (as the report prints them) and its error to 2 digits, the jump to the 6 digits printed and its
    `jump_error` to 2 digits; `beta_c_error` is at most the float's rounding, 2⁻⁵³ β_c."""
    rows = page_table_after("potts.md", "## Current values (J = 1, 30 digits asked)")
    spinodal_rows = page_table_after("potts.md", "Spinodals and the jump of m, in the same rows of thresholds.csv")
    assert [int(row[0]) for row in rows] == [int(row[0]) for row in spinodal_rows] == list(range(2, 9))
    for (q, order, digits, error, deviation), (_, fold, fold_error, instability, jump, jump_error) in zip(
            rows, spinodal_rows):
        result = threshold_once(int(q), 1.0, 30)
        assert (result.order, result.beta_c_digits) == (order, digits), q
        assert float(error) == float(f"{result.beta_c_error:.1e}") and result.beta_c_error <= 2**-53 * result.beta_c
        with mpmath.workdps(60):
            exact = closed_form_beta_c(int(q))
            assert float(deviation) == float(f"{float(abs(mpmath.mpf(digits) - exact)):.1e}"), q
        spinodals = {s.kind: s for s in result.spinodals}
        assert fold == spinodals["fold"].digits if "fold" in spinodals else fold == fold_error == "—"
        assert "fold" not in spinodals or float(fold_error) == float(f"{spinodals['fold'].error:.1e}"), q
        assert float(instability) == float(spinodals["branch_point"].digits)
        assert float(jump) == float(f"{result.jump:.6g}") and float(jump_error) == float(f"{result.jump_error:.1e}"), q


@pytest.mark.parametrize("q", [3, 4, 5])
def test_solve_at_the_disordered_instability_reports_each_state_once_and_no_inflection(q):
    """At βJ = q (q ≥ 3) the disordered branch and the branch through it cross at m = 0: one state, and along the
    family an inflection there (f(u) − f(0) is cubic: of opposite signs at u = ±0.01, hand-written f in mpmath), so the
    ordered state is the only minimum of f(m). Before, m = 0 was listed twice (0 and −1.9e-8 ± 1.9e-8) as minima."""
    result = solve(q, float(q))
    assert result.status == "converged" and len(result.minima) == 1, result.message
    assert result.global_minimum.m > 0.7 and result.global_minimum.stability == "stable"
    assert "not a minimum: inflection" in result.message
    with mpmath.workdps(40):
        f = lambda u: free_energy(q, 1.0, 1 / (1 + (q - 1) * mpmath.exp(-u)), mpmath.mpf(q))  # noqa: E731
        below, above = f(mpmath.mpf(-0.01)) - f(0), f(mpmath.mpf(0.01)) - f(0)
        # odd in u up to the quartic term, O(h) = 1% relative: a cubic
        assert below * above < 0 and abs(below + above) < 0.1 * abs(below)


@pytest.mark.parametrize("q, beta", [(3, 3.0 - 1e-10), (3, 3.0 + 1e-10), (3, 2.9999), (4, 4.0001), (2, 2.0),
                                     (2, 2.0001), (3, 2.76), (3, 3.5)])
def test_solve_reports_distinct_states_next_to_the_branch_points(q, beta):
    """No two reported states agree within their errors, and each lies within its error of the hand-written
    stationarity's root (mpmath); next to βJ = q the disordered state is a minimum just below and gone just above,
    where the state through it (m < 0, 7e-11 from it at βJ = 3 + 1e-10) is reported; q = 2 at βJ = 2 (a pitchfork:
    f quartic) has its one minimum at m = 0, with a finite error (it was infinite)."""
    result = solved(q, beta)
    assert result.status == "converged", result.message
    states = result.minima
    for i, a in enumerate(states):
        assert all(abs(a.m - b.m) > a.m_error + b.m_error for b in states[i + 1:]), result.message
        x = (1 + (q - 1) * a.m) / q
        with mpmath.workdps(40):
            root = mpmath.findroot(lambda y: stationarity(q, 1.0)(y, typed(beta)), mpmath.mpf(x))
            assert abs(a.m - (q * root - 1) / (q - 1)) <= a.m_error, (a, result.message)
    disordered = [s for s in states if abs(s.m) <= s.m_error]
    assert len(disordered) == (1 if beta <= q else 0)
    if q == 2 and beta == 2.0:
        assert len(states) == 1 and states[0].stability == "stable" and math.isfinite(states[0].m_error)


def test_the_guides_parameters_snippet_is_the_code():
    """docs/adding-a-model.md step 2 shows the Potts parameters: each of its lines is a line of parameters.py."""
    root = Path(__file__).resolve().parents[2]
    guide = (root / "docs" / "adding-a-model.md").read_text()
    snippet = guide.split("## 2. The parameters")[1].split("```python\n")[1].split("```")[0]
    code = (root / "src" / "attnphase" / "models" / "potts" / "parameters.py").read_text().splitlines()
    assert "RealRange(1e-6, 1e6)" in snippet
    assert all(line in code for line in snippet.splitlines()), snippet


def test_the_guides_registry_entry_and_size_are_the_code():
    """docs/adding-a-model.md step 5 shows the Potts registry entry: every field it gives is the registry's; and the
    size it quotes for the Potts package is its line count to the nearest fifty."""
    from attnphase.models.registry import get

    root = Path(__file__).resolve().parents[2]
    guide = (root / "docs" / "adding-a-model.md").read_text()
    snippet = guide.split("## 5. The registry entry")[1].split("```python\n")[1].split("```")[0]
    entry = get("potts")
    for field in ("name", "title", "symbolic", "cli", "sweep_point", "sweep_check", "reproduce"):
        assert f'    {field}="{getattr(entry, field)}",' in snippet.splitlines(), field
    quoted = int(re.search(r"\(`models/potts/`, about (\d+) lines of Python", " ".join(guide.split())).group(1))
    lines = sum(len(path.read_text().splitlines()) for path in (root / "src/attnphase/models/potts").glob("*.py"))
    assert quoted == 50 * round(lines / 50), lines



def fold_of(q):
    """β_f (J = 1) of the ordered branch's fold, from the hand-written stationarity and fold equations in x."""
    with mpmath.workdps(50):
        start = (mpmath.mpf(0.7), closed_form_beta_c(q) - 0.05)
        return mpmath.findroot([stationarity(q, 1.0), curvature(q, 1.0)], start)[1]


# q = 2, 3, 5, 10 at two β each: one just above the fold spinodal (q = 2: just above the branch point βJ = 2, where
# the curvature along the family vanishes), one where the ordered minimum is global (with saddles at m < 0), some at
# J ≠ 1 (the values scale with J)
STATE_CASES = [(2, lambda: 2.0001, 1.0), (2, lambda: 1.5, 2.5), (3, lambda: float(fold_of(3) * (1 + 1e-4)), 1.0),
               (3, lambda: 2.8 / 2.5, 2.5), (5, lambda: float(fold_of(5) * (1 + 1e-4)), 1.0), (5, lambda: 4.5, 1.0),
               (10, lambda: float(fold_of(10) * (1 + 1e-4)) / 0.3, 0.3), (10, lambda: 12.0, 1.0)]


@pytest.mark.parametrize("q, beta, J", STATE_CASES, ids=[f"q{c[0]}-{i}" for i, c in enumerate(STATE_CASES)])
def test_every_state_value_lies_within_its_error_of_a_50_digit_recomputation(q, beta, J):
    """free_energy, curvature and transverse_curvature with their errors against an independent 50-digit recomputation
    from the closed forms typed in by hand: the stationary x by mpmath.findroot on ∂f/∂x (started from the state's m),
    f(x) = −J/2 (x² + (1 − x)²/(q − 1)) + (x ln x + (1 − x) ln((1 − x)/(q − 1)))/β, f″ along the log-odds u at a
    stationary point x(1 − x)(1/β − J q x(1 − x)/(q − 1)) (from ∂f/∂u = x(1 − x)(u/β − Jm), by hand), and
    κ⊥ = 2((q − 1)/(β(1 − x)) − J), at the decimal β and J typed. Each error covers the float's deviation, and is
    not absurdly large: below 1e-12 of the value (every value here is far from 0). q = 2 has no transverse direction
    (None), no field is NaN, and m is never −0.0."""
    beta = beta()
    result = solve(q, beta, J)
    assert result.status == "converged" and result.minima, result.message
    with mpmath.workdps(50):
        b, j = typed(beta), typed(J)  # at 50 digits: mpf("0.3") at 53 bits is not 3/10
        F = stationarity(q, j)
        for state in result.minima:
            x = mpmath.findroot(lambda x: F(x, b), (1 + (q - 1) * mpmath.mpf(state.m)) / q, tol=mpmath.mpf(10) ** -45)
            assert abs(mpmath.im(x)) < mpmath.mpf(10) ** -45  # a secant step can leave an imaginary part of 1e-70
            x = mpmath.re(x)
            assert abs((q * x - 1) / (q - 1) - state.m) <= state.m_error
            spread = x * (1 - x)
            references = {"free_energy": free_energy(q, j, x, b),
                          "curvature": spread * (1 / b - j * q * spread / (q - 1)),
                          "transverse_curvature": 2 * ((q - 1) / (b * (1 - x)) - j) if q > 2 else None}
            for name, reference in references.items():
                value, error = getattr(state, name), getattr(state, f"{name}_error")
                if reference is None:
                    assert value is None and error is None, (name, value, error)
                    continue
                assert abs(mpmath.mpf(value) - reference) <= error, (name, value, reference, error)
                assert 0 < error < 1e-12 * abs(reference), (name, value, error)
            assert state.m != 0 or math.copysign(1.0, state.m) == 1.0
    assert "NaN" not in json.dumps(result.as_dict())


def test_the_spinodals_are_frozen_dataclasses_with_the_same_json_keys():
    """Transition.spinodals holds `Spinodal`s (attributes, frozen); as_dict keeps the keys kind, beta, digits, error,
    status. m of a disordered state is 0.0, not −0.0 (q = 500, β = 100 listed m = -0.0)."""
    import dataclasses

    from attnphase.models.potts.results import Spinodal

    result = threshold_once(3, 1.0, 15)
    fold, instability = result.spinodals
    assert isinstance(fold, Spinodal) and fold.kind == "fold" and instability.kind == "branch_point"
    with pytest.raises(dataclasses.FrozenInstanceError):
        fold.beta = 1.0
    assert [list(s) for s in result.as_dict()["spinodals"]] == [["kind", "beta", "digits", "error", "status"]] * 2
    assert result.as_dict()["spinodals"][1]["status"] == "converged"
    for state in solve(500, 100.0).minima:
        assert math.copysign(1.0, state.m) == 1.0 or state.m < 0, state


@pytest.mark.parametrize("above", [1e-7, 1e-9, 1e-11, 1e-13])
def test_q2_just_above_the_pitchfork_lists_both_ordered_minima(above):
    """Audit d18: at q = 2, βJ within 1e-9 of 2 `solve` found no minimum ("failed"): the followed ordered branch
    turns at the branch point, and a level c between the branch point and the branch's nearest point crossed none
    of its segments. Both ordered states ±m are listed, m the root of m = tanh(βJm/2) at 50 digits."""
    beta = 2 + above
    result = solve(2, beta)
    assert result.status == "converged" and [s.stability for s in result.minima] == ["stable", "stable"]
    with mpmath.workdps(50):
        coupling = mpmath.mpf(repr(beta))
        m = mpmath.findroot(lambda m: m - mpmath.tanh(coupling * m / 2), mpmath.sqrt(3 * (coupling - 2) / 2))
        for state, sign in zip(result.minima, (1, -1)):
            assert abs(state.m - sign * m) <= state.m_error


def test_the_errors_deep_in_the_ordered_phase_are_finite_and_cover_the_closed_form():
    """Audit t18 M42: at q = 3, βJ = 100 the polish's error on u is 3e4 wide (f′ carries the factor x(1 − x) ≈ 2e^−u),
    which made κ⊥'s error infinite; the stationarity bound (`_root_distance`) keeps every error finite. κ⊥ = 2(e^u +
    q − 1)/β − 2J at u = βJ m, m from m = (1 − e^−u)/(1 + (q − 1)e^−u) at 50 digits."""
    state = solve(3, 100.0).minima[0]
    assert state.stability == "stable" and state.m > 0.99
    for name in ("m_error", "free_energy_error", "curvature_error", "transverse_curvature_error"):
        assert math.isfinite(getattr(state, name)), name
    with mpmath.workdps(50):
        m = mpmath.findroot(lambda m: m - (1 - mpmath.exp(-100 * m)) / (1 + 2 * mpmath.exp(-100 * m)), 1)
        kappa = 2 * (mpmath.exp(100 * m) + 2) / 100 - 2
        assert abs(state.transverse_curvature - kappa) <= state.transverse_curvature_error <= 1e-12 * kappa


def test_a_minimum_and_a_maximum_closer_than_their_error_are_not_called_a_plain_inflection():
    """Audit r19: at q = 20 within 1e-13 of βJ = q the metastable m = 0 and the transcritical partner lie within the
    point's own error of each other; f″ vanishes within its error and f‴ does not, which also describes an inflection.
    The message names both readings instead of asserting "inflection"."""
    result = solve(20, 19.9999999999999)
    assert [s.stability for s in result.minima] == ["stable"] and result.minima[0].m > 0.99
    assert "not a minimum: inflection (or a minimum and a maximum closer than its error)" in result.message

