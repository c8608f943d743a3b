"""The convergence ladder: turn "how accurate" into an input.

A computation that can be done on a sequence of rules of increasing accuracy (quadrature rules, grids,
tolerances) climbs them as a ladder: it solves on the first rung, re-solves on the next one (started
from the previous answer), and takes the difference as the verified error; while a requested tolerance
is not met it climbs on. When the top rung does not meet it the result says so (status `limited`, with
the quantity and the numbers), never a silent coarser answer.

* `Rung(rule, label)`: one rule of the ladder (any object the solve callable understands).
* `Tolerance(atol, rtol)`: the one convention for "accurate enough": error ≤ atol + rtol·|value|, per
  quantity (a mapping quantity -> Tolerance, or one Tolerance for all).
* `climb(solve, rungs, measure, ...)`: the ladder. `solve(rule, previous)` computes an answer on a rule
  (previous: the answer on the rung below, or `start`); `measure(answer)` gives the quantities
  (name -> float) whose errors are verified. Two ways to report:
  - report="refined": the answer on the higher rung of the last pair, with the difference to the rung
    below as its error (conservative when the rules converge);
  - report="verified": the answer on the lower rung (the working rule), with the difference to the
    rung above (its check rule) as its error. A check that fails leaves the working answer with
    unknown (NaN) errors and status `limited`.
  and two error estimates: error="difference" (between the last two rungs) or error="spread" (max − min
  over every rung solved, or over the last `window` rungs: for rules whose values oscillate rather than
  converge monotonically, where two successive rungs can agree by accident). When the values of the spread
  and the one below it move in one direction, the spread does not bound what is still to come, so the geometric
  tail of that drift is added, |d₂| r/(1 − r) with d₁, d₂ the last two differences and r = |d₂/d₁|, and
  a drift that does not slow down (r ≥ 1) leaves the error unbounded (inf, status `limited`). (Three values
  alone are taken as a drift when their two moves agree: where a fourth is known, an oscillation whose last two
  moves happen to agree is not read as a drift. At ω = 0.3, α = 2.5 the positional Φ on split-line 10 … 20
  moves by +2.5e-7, −8.7e-9, −5.9e-8, +1.7e-8, +2.8e-8: from 12, 14, 16 alone a drift that grows.) On rules
  converging like n^(−p) with n in steps of 2 from 8 (the positional-semantic split-line ladder) spread
  plus tail bounds the error for p ≥ 1.5 (`drift_tail`).
  A rung that fails above a checked pair leaves the last checked answer, with status `limited`; with
  skip_failed, a failed rung below the top is skipped instead (named in the message). With `widen_limited`, where
  the top rung leaves a tolerance unmet (status `limited`) the errors are the spread over every solved rung of the
  top rung's family (at least the window's): for rules that scatter without a trend, a window that has not settled
  need not bound what finer rules give (at ω = 0.3, α = 0.08 the positional-semantic q on count-split 12, 14, 16
  spread over 1.1e-5, and count-split 20 and 24 lay 1.8e-5 and 2.0e-5 from count-split 16's value). On rules that
  converge monotonically the window's drift tail is the better bound, and the whole family's spread, set by its
  coarsest rung, would overstate it.
* Families of rules: rungs may belong to families (`Rung.family`, e.g. split-line rules, then count-split rules
  above them) whose errors behave differently. Within one family the spread can miss an offset that varies
  slowly with the rule (a family converging from one side with an oscillation on top: three rungs agree while
  all are off by twice their spread). With `family_checked`, a tolerance met on a rung of a family below the
  top one is checked against the first rung of the next family (solved once, from the answer that met it):
  the difference to it is added to the error of each quantity named there (no bound where that rung fails or
  does not give the quantity), and the tolerance must still be met; otherwise the climb goes on, and the next
  family's first rung is not solved again when reached.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnphase.errors import ParameterError
from attnphase.params import check_choice, check_real
from attnphase.results import Result, Status

__all__ = ["Rung", "Tolerance", "LadderResult", "climb", "drift_tail"]


@dataclass(frozen=True)
class Rung:
    """One rule of a ladder: `rule` is handed to the solve callable; `label` names it in messages; `family`
    groups the rules whose errors behave alike (see the module docstring)."""

    rule: Any
    label: str
    family: str = ""


@dataclass(frozen=True)
class Tolerance:
    """error ≤ atol + rtol·|value|: the one convention for a requested accuracy."""

    atol: float = 0.0
    rtol: float = 0.0

    def __post_init__(self):
        check_real("atol", self.atol, 0.0, None)
        check_real("rtol", self.rtol, 0.0, None)
        if self.atol == 0.0 and self.rtol == 0.0:
            raise ParameterError("atol", self.atol, "atol > 0 or rtol > 0")

    def bound(self, value: float) -> float:
        return self.atol + self.rtol * abs(value)

    def allows(self, error: float, value: float) -> bool:
        return bool(error <= self.bound(value))


@dataclass(frozen=True)
class LadderResult(Result):
    """What the ladder reports.

    values, errors: the reported answer's quantities and their verified errors (name -> float; NaN
    where not verified); status: converged (every error within its tolerance, or no tolerance asked
    for) | limited (a value, but the top rung does not meet the tolerance, or the check failed) | failed
    (no answer on the working rung); rung, check: labels of the rung reported and the rung it was
    compared with; answer: the reported answer; answers: every rung's answer in the order solved.
    """

    values: dict[str, float]
    errors: dict[str, float]
    status: Status
    message: str
    rung: str | None
    check: str | None
    answer: Any = field(default=None, repr=False)
    answers: tuple = field(default=(), repr=False)


# Differences below this fraction of the largest value are rounding, not a drift (a quantity that is the same
# on every rung up to the last bits).
ROUNDING_LEVEL = 1e-12


def drift_tail(values: Sequence[float], noise: float = 0.0) -> float:
    """What a one-way drift of `values` leaves beyond the last one, as a geometric tail: |d₂| r/(1 − r),
    r = |d₂/d₁| (d₁, d₂ the last two differences); 0 when their differences do not all have one sign (an
    oscillation, which the spread itself covers), when a difference is at rounding level (ROUNDING_LEVEL of the
    largest |value|, or below 1e-300) or at most `noise` (the caller's bound on the error of a difference of two
    values, e.g. from an inner quadrature: its sign is then unknown), or fewer than three are given; inf when r ≥ 1."""
    if len(values) < 3:
        return 0.0
    differences = np.diff(np.asarray(values, float))
    floor = max(ROUNDING_LEVEL * max(abs(v) for v in values), 1e-300, noise)
    if not (np.all(differences > 0.0) or np.all(differences < 0.0)) or np.abs(differences).min() <= floor:
        return 0.0
    d1, d2 = differences[-2], differences[-1]
    ratio = abs(d2 / d1)
    return math.inf if ratio >= 1.0 else abs(d2) * ratio / (1.0 - ratio)


def _values_and_errors(measured: list[Mapping[str, float]], reported: int, error: str, window: int | None):
    """Each quantity's value on the last of the first `reported` rungs that measure it, and its error over the rungs
    that measure it: the difference of the last two, or their spread over the last `window` (all without one) plus
    the tail of a one-way drift; inf where only one rung measures it."""
    values, errors = {}, {}
    for name in dict.fromkeys(name for m in measured for name in m):
        seen = [m[name] for m in measured if name in m]
        below = [m[name] for m in measured[:reported] if name in m]
        if not below:
            continue
        values[name] = below[-1]
        last = seen[-2:] if error == "difference" else seen[-(window or len(seen)):]
        tail = drift_tail(seen[-(window or len(seen)) - 1:]) if error == "spread" else 0.0  # one more: module docstring
        errors[name] = max(last) - min(last) + tail if len(last) >= 2 else math.inf
    return values, errors


def _widened_to_the_family(errors: Mapping[str, float], measured: list[Mapping[str, float]], families: list[str],
                           window: int) -> dict[str, float]:
    """`errors` widened to the spread (with its drift tail) over every measured rung of the last rung's family, where
    that family has more rungs than the window."""
    top = [m for m, family in zip(measured, families) if family == families[-1]]
    if len(top) <= window:
        return dict(errors)
    _, spread = _values_and_errors(top, len(top), "spread", None)
    return {name: max(error, spread.get(name, error)) for name, error in errors.items()}


def _unmet(tolerance, values: Mapping[str, float], errors: Mapping[str, float]) -> list[tuple[str, float, float]]:
    """(quantity, error, bound) for each quantity whose error is above its tolerance."""
    return [(name, errors[name], _tolerance_for(tolerance, name).bound(values[name])) for name in values
            if _tolerance_for(tolerance, name) is not None
            and not _tolerance_for(tolerance, name).allows(errors[name], values[name])]


def _next_family(rungs: Sequence[Rung], k: int) -> int | None:
    """The index of the first rung above rungs[k] of another family, or None."""
    return next((j for j in range(k + 1, len(rungs)) if rungs[j].family != rungs[k].family), None)


def _tolerance_for(tolerance, name: str) -> Tolerance | None:
    if tolerance is None or isinstance(tolerance, Tolerance):
        return tolerance
    return tolerance.get(name)


def climb(solve: Callable[[Any, Any], Any], rungs: Sequence[Rung], measure: Callable[[Any], Mapping[str, float]], *,
          tolerance: Tolerance | Mapping[str, Tolerance] | None = None, start: Any = None, first: Any = None,
          accept: Callable[[Any], bool] | None = None, report: str = "refined",
          error: str = "difference", window: int | None = None, skip_failed: bool = False,
          family_checked: Collection[str] = (), widen_limited: bool = False) -> LadderResult:
    """Climb `rungs` until the verified error meets `tolerance` (or, without one, to the top rung).

    solve(rule, previous) -> answer, previous being the answer on the rung below (`start` for the
    first); first: the answer on rungs[0] if it is already known (then it is not solved again);
    accept(answer) -> whether the answer is usable (default: its `success`, or True); measure(answer)
    -> {quantity: value}. See the module docstring for `report` and `error`; window (error="spread"):
    the spread is over the last `window` rungs, and no tolerance is checked before that many are solved.
    skip_failed: a rung above the first that fails (below the top) is skipped, named in the message, and
    the climb goes on from the last answer (for rules on which a solve can fail where the finer ones do
    not, e.g. a fixed point of a discontinuous map); errors are then over the rungs that were solved.
    family_checked: the quantities whose errors include the step to the next family's first rung where the
    tolerance is met below the top family (module docstring). A quantity missing from a rung's measure (one that
    a family of rules does not compute to its accuracy) keeps the value and error of the rungs that measure it.
    widen_limited (error="spread" with a window): a result limited at the top rung gets the spread over the top
    family's rungs as its errors (module docstring).
    """
    if len(rungs) < 2:
        raise ParameterError("rungs", rungs, "at least two rungs (a working rule and a check rule)")
    report = check_choice("report", report, ("refined", "verified"))
    error = check_choice("error", error, ("difference", "spread"))
    if window is not None and (error != "spread" or not 2 <= window <= len(rungs)):
        raise ParameterError("window", window, f"with error='spread', an integer in [2, {len(rungs)}]")
    checked = None  # the last complete check: (values, errors, index, check label)
    accept = accept or (lambda answer: bool(getattr(answer, "success", True)))
    answers: list = []
    measured: list[dict[str, float]] = []
    solved: list[int] = []  # the indices of the rungs with an accepted answer, in order
    skipped: list[str] = []
    family_checks: dict[int, Any] = {}  # rung index -> its answer, solved early to check the family below

    def noted(message: str) -> str:
        return message + (f"; skipped {', '.join(skipped)}" if skipped else "")

    previous = start
    for k, rung in enumerate(rungs):
        if k == 0 and first is not None:
            answer = first
        else:
            answer = family_checks[k] if k in family_checks else solve(rung.rule, previous)
        answers.append(answer)
        if not accept(answer):
            reason = getattr(answer, "message", "")
            if k == 0:
                return LadderResult({}, {}, Status.FAILED, f"{rung.label}: {reason}", rung.label, None, answer,
                                    tuple(answers))
            if skip_failed and k + 1 < len(rungs):
                skipped.append(f"{rung.label} ({reason})")
                continue
            if checked is not None:
                values, errors, index, check = checked
                return LadderResult(values, errors, Status.LIMITED,
                                    noted(f"{rung.label} failed ({reason}); {rungs[index].label} checked on {check}"),
                                    rungs[index].label, check, answers[index], tuple(answers))
            below = solved[-1]
            if report == "verified":
                working = measured[-1]
                return LadderResult(working, {name: math.nan for name in working}, Status.LIMITED,
                                    noted(f"check rule {rung.label} failed: {reason}"), rungs[below].label, rung.label,
                                    answers[below], tuple(answers))
            return LadderResult({}, {}, Status.FAILED, noted(f"{rung.label}: {reason}"), rung.label, rungs[below].label,
                                answer, tuple(answers))
        measured.append({name: float(value) for name, value in measure(answer).items()})
        solved.append(k)
        previous = answer
        if len(measured) == 1 or (window is not None and len(measured) < window):
            continue
        position = -1 if report == "refined" else -2
        index = solved[position]
        values, errors = _values_and_errors(measured, len(measured) + position + 1, error, window)
        unmet = _unmet(tolerance, values, errors)
        check = rungs[solved[-2] if report == "refined" else solved[-1]].label
        if error == "spread" and window is not None:
            check = ", ".join(rungs[i].label for i in solved[-window:-1])
        next_family = _next_family(rungs, k)
        if family_checked and tolerance is not None and not unmet and next_family is not None:
            if next_family not in family_checks:
                family_checks[next_family] = solve(rungs[next_family].rule, answer)
            other = family_checks[next_family]
            there = measure(other) if accept(other) else {}
            steps = {name: abs(values[name] - float(there[name])) if name in there else math.inf
                     for name in family_checked if name in values}
            errors = {name: value + steps.get(name, 0.0) for name, value in errors.items()}
            unmet = _unmet(tolerance, values, errors)
            check += f"; {rungs[next_family].label}"
        checked = (values, errors, index, check)
        if tolerance is not None and not unmet:
            return LadderResult(values, errors, Status.CONVERGED,
                                noted(f"{rungs[index].label} checked on {check}: every requested tolerance met"),
                                rungs[index].label, check, answers[index], tuple(answers))
    if checked is None:  # every rung above the first skipped or short of the window
        below = solved[-1]
        return LadderResult({}, {}, Status.FAILED, noted(f"no check of {rungs[below].label}"), rungs[below].label, None,
                            answers[below], tuple(answers))
    # the top rung: without a tolerance it is where the climb ends; with one, it was not met
    if not unmet:
        return LadderResult(values, errors, Status.CONVERGED, noted(f"{rungs[index].label} checked on {check}: no "
                            "tolerance requested"), rungs[index].label, check, answers[index], tuple(answers))
    if widen_limited and error == "spread" and window is not None:
        errors = _widened_to_the_family(errors, measured, [rungs[i].family for i in solved], window)
        unmet = _unmet(tolerance, values, errors)  # the message quotes the errors the result reports
    worst = max(unmet, key=lambda u: u[1] / u[2] if u[2] > 0 else math.inf)
    shortfall = (f"{worst[0]} still drifts in one direction without slowing (no error bound)" if math.isinf(worst[1])
                 else f"{worst[0]} error {worst[1]:.3g} above the tolerance {worst[2]:.3g}")
    return LadderResult(values, errors, Status.LIMITED,
                        noted(f"top rung {rungs[index].label} (checked on {check}): {shortfall}"), rungs[index].label,
                        check, answers[index], tuple(answers))
