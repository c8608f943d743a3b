"""The convergence ladder (numeric.convergence.climb) on rules with known errors.

Rungs: the composite trapezoid rule with n panels for ∫_0^1 e^x dx = e − 1, whose error is
(e − 1)/(12 n²) + O(n⁻⁴) (Euler-Maclaurin), so each refinement by 2 divides it by 4 and the difference
of two rungs over-estimates the finer rung's error by a factor ~3.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.numeric.convergence import Rung, Tolerance, climb, drift_tail

EXACT = math.e - 1


def trapezoid(n, previous=None):
    x = np.linspace(0.0, 1.0, n + 1)
    f = np.exp(x)
    return (f.sum() - 0.5 * (f[0] + f[-1])) / n


RUNGS = [Rung(n, f"{n} panels") for n in (4, 8, 16, 32, 64, 128)]


def measure(value):
    return {"integral": value}


def test_climbs_until_the_verified_error_meets_the_tolerance():
    for rtol in (1e-3, 1e-4):
        result = climb(trapezoid, RUNGS, measure, tolerance=Tolerance(rtol=rtol))
        assert result.success
        error, value = result.errors["integral"], result.values["integral"]
        assert error <= rtol * abs(value)
        assert abs(value - EXACT) <= error  # the reported error holds
        # it stopped at the first rung that meets the tolerance: the rung below did not
        k = [r.label for r in RUNGS].index(result.rung)
        previous = abs(result.answers[k - 1] - result.answers[k - 2]) if k >= 2 else math.inf
        assert previous > rtol * abs(result.answers[k - 1])


def test_top_rung_short_of_the_tolerance_is_limited_with_the_reason():
    result = climb(trapezoid, RUNGS[:3], measure, tolerance=Tolerance(atol=1e-9))
    assert result.status == "limited" and not result.success
    assert result.rung == "16 panels" and "integral" in result.message and "above the tolerance" in result.message
    assert abs(result.values["integral"] - EXACT) <= result.errors["integral"]


def test_without_a_tolerance_every_rung_is_climbed():
    result = climb(trapezoid, RUNGS[:3], measure)
    assert result.success and result.rung == "16 panels" and result.check == "8 panels"
    assert len(result.answers) == 3


def test_verified_reports_the_working_rule_checked_on_the_next_one():
    result = climb(trapezoid, RUNGS[:2], measure, report="verified")
    assert result.rung == "4 panels" and result.check == "8 panels"
    assert result.values["integral"] == trapezoid(4)
    # the difference to the finer rule is 3/4 of the working rule's own error (err(8) = err(4)/4 + O(n⁻⁴)):
    # an estimate, not a bound, for the coarser answer; `refined` reports the finer one, which it bounds
    true = abs(trapezoid(4) - EXACT)
    assert 0.7 * true <= result.errors["integral"] <= 0.8 * true
    refined = climb(trapezoid, RUNGS[:2], measure)
    assert abs(refined.values["integral"] - EXACT) <= refined.errors["integral"] / 2.5


def test_spread_and_warm_starts_and_a_known_first_answer():
    seen = []

    def solve(n, previous):
        seen.append(previous)
        return trapezoid(n)

    result = climb(solve, RUNGS[:3], measure, start="start", first=trapezoid(4), error="spread")
    assert seen == [trapezoid(4), trapezoid(8)]  # rung 0 not solved again; each rung gets the one below
    values = [trapezoid(n) for n in (4, 8, 16)]
    # a one-way drift (the error shrinks 4-fold per rung): the spread plus its geometric tail, d₂·(1/4)/(3/4)
    assert result.errors["integral"] == pytest.approx(max(values) - min(values) + (values[1] - values[2]) / 3, rel=0.01)
    assert abs(result.values["integral"] - EXACT) <= result.errors["integral"]


def test_failed_rungs():
    def failing(n, previous):
        return {"success": False, "message": "no answer"} if n == 8 else trapezoid(n)

    accept = lambda answer: not isinstance(answer, dict)  # noqa: E731
    checked = climb(failing, RUNGS[:2], measure, accept=accept, report="verified")
    assert checked.status == "limited" and math.isnan(checked.errors["integral"])
    assert checked.values["integral"] == trapezoid(4) and "check rule 8 panels failed" in checked.message
    refined = climb(failing, RUNGS[:2], measure, accept=accept)
    assert refined.status == "failed"
    working = climb(lambda n, p: {"success": False}, RUNGS[:2], measure, accept=accept)
    assert working.status == "failed" and working.rung == "4 panels"


def test_tolerance_convention_and_bad_input():
    assert Tolerance(atol=1e-3, rtol=1e-2).bound(-2.0) == pytest.approx(1e-3 + 2e-2)
    assert Tolerance(rtol=0.1).allows(0.1, 1.0) and not Tolerance(rtol=0.1).allows(0.11, 1.0)
    with pytest.raises(ParameterError):
        Tolerance()
    with pytest.raises(ParameterError):
        climb(trapezoid, RUNGS[:1], measure)
    with pytest.raises(ParameterError):
        climb(trapezoid, RUNGS, measure, report="best")


# A rule whose error oscillates in sign and shrinks slowly, so that two successive rungs can agree closely
# while both are off (like the outer Gauss-Hermite rules of the positional-semantic split-line quadrature).
OSCILLATING_ERRORS = {4: 0.5, 8: -0.2, 16: 0.09, 32: 0.085}


def oscillating(n, previous=None):
    return EXACT + OSCILLATING_ERRORS[n]


def test_spread_over_a_window_of_three_rungs_bounds_what_two_rungs_understate():
    """Rungs 16 and 32 agree to 0.005 while both are off by ~0.09: the difference of the last two rungs
    passes a tolerance of 0.1 it should not meet; the spread over the last three (8, 16, 32) does not pass
    it, and bounds the reported rung's error."""
    rungs = [Rung(n, f"{n} panels") for n in OSCILLATING_ERRORS]
    tolerance = Tolerance(atol=0.1)
    two = climb(oscillating, rungs, measure, tolerance=tolerance)
    assert two.success and two.errors["integral"] < abs(two.values["integral"] - EXACT)  # understated
    three = climb(oscillating, rungs, measure, tolerance=tolerance, error="spread", window=3)
    assert three.status == "limited" and three.rung == "32 panels" and three.check == "8 panels, 16 panels"
    assert three.errors["integral"] == pytest.approx(0.09 + 0.2)
    assert abs(three.values["integral"] - EXACT) <= three.errors["integral"]
    early = climb(oscillating, rungs, measure, tolerance=Tolerance(atol=1.0), error="spread", window=3)
    assert early.rung == "16 panels"  # met, but not checked before three rungs were solved
    with pytest.raises(ParameterError):
        climb(oscillating, rungs, measure, window=3)  # a window needs error="spread"


def test_a_rung_failing_above_a_checked_one_leaves_the_checked_answer_limited():
    def failing(n, previous):
        return {"success": False, "message": "diverged"} if n == 32 else trapezoid(n)

    result = climb(failing, RUNGS[:4], measure, tolerance=Tolerance(atol=1e-12), accept=lambda a: not isinstance(a, dict))
    assert result.status == "limited" and result.rung == "16 panels" and "32 panels failed" in result.message
    assert result.values["integral"] == trapezoid(16) and result.errors["integral"] == abs(trapezoid(16) - trapezoid(8))


def test_a_failed_rung_is_skipped_on_request_and_named():
    """skip_failed: the 16-panel rung fails, the climb goes on from the 8-panel answer to 32 and 64 panels; the
    spread is over the rungs solved (8, 32, 64), still a bound on the reported error, and the message names the
    skipped rung. The top rung failing is not skipped (the last checked answer is reported, limited)."""
    def failing(n, previous):
        return {"success": False, "message": "no fixed point"} if n == 16 else trapezoid(n)

    accept = lambda answer: not isinstance(answer, dict)  # noqa: E731
    result = climb(failing, RUNGS[:5], measure, tolerance=Tolerance(atol=1e-12), accept=accept, error="spread",
                   window=3, skip_failed=True)
    values = [trapezoid(n) for n in (8, 32, 64)]
    assert result.status == "limited" and result.rung == "64 panels" and result.check == "8 panels, 32 panels"
    assert result.errors["integral"] == max(values) - min(values) + drift_tail(values)
    assert abs(result.values["integral"] - EXACT) <= result.errors["integral"]
    assert "skipped 16 panels" in result.message
    met = climb(failing, RUNGS, measure, tolerance=Tolerance(rtol=1e-3), accept=accept, error="spread", window=3,
                skip_failed=True)
    assert met.success and abs(met.values["integral"] - EXACT) <= met.errors["integral"] <= 1e-3 * EXACT
    top = climb(lambda n, p: {"success": False} if n == 64 else trapezoid(n), RUNGS[:5], measure,
                tolerance=Tolerance(atol=1e-12), accept=accept, skip_failed=True)
    assert top.status == "limited" and top.rung == "32 panels"
    assert climb(failing, RUNGS[:3], measure, accept=accept, skip_failed=True, error="spread",
                 window=3).status == "failed"


@pytest.mark.parametrize("power", [1.5, 2.0, 3.0])
def test_spread_and_drift_tail_bound_algebraic_convergence_on_the_split_line_ladder(power):
    """Values converging like n^(−p) on the rungs n = 8, 10, ..., 16 (the shape of the positional-semantic
    split-line ladder): the spread of the last three rungs alone understates the top rung's error (for p ≤ 2);
    with the geometric tail of the drift it bounds it for p ≥ 1.5."""
    rungs = [Rung(n, f"{n} nodes") for n in (8, 10, 12, 14, 16)]
    result = climb(lambda n, previous: 1.0 + n ** -power, rungs, measure, error="spread", window=3)
    true_error = 16.0 ** -power
    last = [1.0 + n ** -power for n in (12, 14, 16)]
    assert result.errors["integral"] == pytest.approx(max(last) - min(last) + drift_tail(last))
    assert true_error <= result.errors["integral"] <= 3.0 * true_error
    if power <= 2.0:
        assert max(last) - min(last) < true_error


def test_a_drift_that_does_not_slow_down_has_no_error_bound():
    """Differences that grow (0.0029, 0.0038, 0.0006, 0.0010: the α_l(0) rungs of the positional-semantic
    ladder, whose converged value lies 0.0036 above the last) leave the error unbounded: status limited,
    error inf, and the message says why."""
    steps = {8: 0.73508, 10: 0.73798, 12: 0.74178, 14: 0.74242, 16: 0.74340}
    rungs = [Rung(n, f"{n} nodes") for n in steps]
    result = climb(lambda n, previous: steps[n], rungs, measure, tolerance=Tolerance(atol=1e-3), error="spread",
                   window=3)
    assert result.status == "limited" and math.isinf(result.errors["integral"])
    assert "drifts in one direction without slowing" in result.message
    assert drift_tail([1.0, 2.0, 1.5]) == 0.0 and drift_tail([1.0, 2.0]) == 0.0  # oscillation; too few values
    # rounding-level moves of a quantity that is constant on every rung are not a drift; exact zeros neither
    assert drift_tail([0.5, 0.5 + 1e-16, 0.5 + 3e-16]) == 0.0 and drift_tail([0.0, 0.0, 0.0]) == 0.0
    assert math.isinf(drift_tail([0.5, 0.5 + 1e-9, 0.5 + 3e-9]))
    # nor are moves within the caller's noise level (their sign is unknown); moves above it still are
    assert drift_tail([0.5, 0.5 + 1e-9, 0.5 + 3e-9], noise=1e-9) == 0.0
    assert math.isinf(drift_tail([0.5, 0.5 + 1e-9, 0.5 + 3e-9], noise=0.9e-9))


# A family converging from one side with an oscillation on top (the shape of the positional-semantic split-line
# rules' semantic V): its rungs agree to 6e-4 while all lie about 4e-3 above the limit 1; the next family converges
# without that offset.
OFFSET_FAMILY = {8: 1.0040, 10: 1.0046, 12: 1.0043, 14: 1.0041, 16: 1.0038}
NEXT_FAMILY = {8: 1.0004, 10: 1.00015, 12: 1.00005}
FAMILY_RUNGS = ([Rung(("a", n), f"a{n}", "a") for n in OFFSET_FAMILY]
                + [Rung(("b", n), f"b{n}", "b") for n in NEXT_FAMILY])


def _families(calls):
    def solve(rule, previous):
        calls.append(rule)
        family, n = rule
        return (OFFSET_FAMILY if family == "a" else NEXT_FAMILY)[n]
    return solve


def test_a_tolerance_met_within_a_family_is_checked_against_the_next_family():
    """Without a family check the spread of a8, a10, a12 (6e-4) meets 1e-2 and is reported as the error, which the
    true error of a12 (4.3e-3) exceeds. With it the error of a checked quantity is that spread plus the step to b8
    (3.9e-3), which covers it; an unchecked quantity keeps its spread."""
    def both(value):
        return {"integral": value, "unchecked": value}

    plain = climb(_families([]), FAMILY_RUNGS, both, tolerance=Tolerance(atol=1e-2), error="spread", window=3)
    assert plain.rung == "a12" and plain.errors["integral"] == pytest.approx(6e-4)
    assert plain.errors["integral"] < abs(plain.values["integral"] - 1.0)
    calls = []
    checked = climb(_families(calls), FAMILY_RUNGS, both, tolerance=Tolerance(atol=1e-2), error="spread", window=3,
                    family_checked=("integral",))
    assert checked.status == "converged" and checked.rung == "a12" and checked.check == "a8, a10; b8"
    assert checked.errors["integral"] == pytest.approx(6e-4 + (1.0043 - 1.0004))
    assert checked.errors["integral"] >= abs(checked.values["integral"] - 1.0)
    assert checked.errors["unchecked"] == pytest.approx(6e-4)
    assert calls == [("a", 8), ("a", 10), ("a", 12), ("b", 8)]


def test_where_the_family_check_fails_the_climb_goes_on_and_solves_the_next_family_once():
    """Tolerance 1e-3: the step to b8 fails it on every rung of family a, so the climb goes on into family b (b8
    solved once, when first needed as the check) and meets it on b8, b10, b12: spread 3.5e-4 plus the drift's tail."""
    calls = []
    result = climb(_families(calls), FAMILY_RUNGS, measure, tolerance=Tolerance(atol=1e-3), error="spread", window=3,
                   family_checked=("integral",))
    assert result.status == "converged" and result.rung == "b12", result.message
    assert calls.count(("b", 8)) == 1 and len(calls) == len(FAMILY_RUNGS)
    assert abs(result.values["integral"] - 1.0) <= result.errors["integral"] <= 1e-3


def test_a_quantity_a_family_does_not_measure_keeps_the_value_and_error_of_the_rungs_that_do():
    """"phi" is measured on family a only: where the climb goes on into family b (as above), its value is a16's and
    its error the spread over a12, a14, a16 (oscillating: no tail), while the integral is b12's."""
    phi = {8: 0.5, 10: 0.6, 12: 0.55, 14: 0.57, 16: 0.56}

    def measure_by_family(rule):
        family, n = rule
        if family == "b":
            return {"integral": NEXT_FAMILY[n]}
        return {"integral": OFFSET_FAMILY[n], "phi": phi[n]}

    result = climb(lambda rule, previous: rule, FAMILY_RUNGS, measure_by_family, tolerance={"integral": Tolerance(atol=1e-3)},
                   error="spread", window=3, family_checked=("integral",))
    assert result.rung == "b12" and result.values["integral"] == NEXT_FAMILY[12]
    assert result.values["phi"] == phi[16] and result.errors["phi"] == pytest.approx(0.02)


def test_where_the_next_familys_first_rung_fails_the_check_gives_no_bound_and_the_climb_goes_on():
    """b8 fails: the check of a12 against it bounds nothing, so tolerance 1e-2 is not met on family a; the climb goes
    on, skips b8 (solved once, as the check) and meets the tolerance on a16, b10, b12 (spread, and the tail of a drift
    that a14 continues)."""
    calls = []

    def failing_b8(rule, previous):
        calls.append(rule)
        return {"success": False, "message": "no fixed point"} if rule == ("b", 8) else _families([])(rule, previous)

    result = climb(failing_b8, FAMILY_RUNGS, measure, tolerance=Tolerance(atol=1e-2), error="spread", window=3,
                   accept=lambda answer: not isinstance(answer, dict), skip_failed=True, family_checked=("integral",))
    assert result.status == "converged" and result.rung == "b12" and "skipped b8" in result.message, result.message
    assert calls.count(("b", 8)) == 1
    last = [OFFSET_FAMILY[14], OFFSET_FAMILY[16], NEXT_FAMILY[10], NEXT_FAMILY[12]]
    assert result.errors["integral"] == pytest.approx(last[1] - last[3] + drift_tail(last))


# A family that scatters without a trend around its limit 1 (the shape of the positional-semantic count-split rules
# at ω = 0.3, α = 0.08): its last three rungs happen to agree to 1.5e-3 while the value is 2e-2 off.
SCATTERING = {8: 0.96, 10: 1.03, 12: 1.0205, 14: 1.021, 16: 1.0200}


def test_a_limited_result_may_take_the_spread_over_its_whole_family():
    """With widen_limited, a result left limited at the top rung gets the spread over every rung of the top family
    (8 … 16: 0.07), which covers its distance from the limit; the window's spread (12, 14, 16: 1e-3) does not. A
    result that meets its tolerance keeps the window's error."""
    rungs = [Rung(n, f"{n} nodes", "count") for n in SCATTERING]

    def solve(n, previous):
        return SCATTERING[n]

    narrow = climb(solve, rungs, measure, tolerance=Tolerance(atol=1e-4), error="spread", window=3)
    wide = climb(solve, rungs, measure, tolerance=Tolerance(atol=1e-4), error="spread", window=3, widen_limited=True)
    assert narrow.status == wide.status == "limited" and narrow.values == wide.values
    assert narrow.errors["integral"] < abs(narrow.values["integral"] - 1.0) <= wide.errors["integral"]
    assert wide.errors["integral"] >= max(SCATTERING.values()) - min(SCATTERING.values())
    # the message quotes the error the result reports, not the window's it replaced
    assert f"integral error {wide.errors['integral']:.3g} above the tolerance" in wide.message, wide.message
    met = climb(solve, rungs, measure, tolerance=Tolerance(atol=0.01), error="spread", window=3, widen_limited=True)
    assert met.status == "converged" and met.errors == climb(solve, rungs, measure, tolerance=Tolerance(atol=0.01),
                                                               error="spread", window=3).errors
