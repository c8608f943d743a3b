"""Result types of the positional-semantic model (all `results.Result`: status, message, `as_dict()`).

`as_dict()` gives what the CLI prints with --json; where a result's JSON has a fixed, documented shape
(field names the CLI contract and the reproduce pipeline rely on) it is written out here, and `_json_safe` makes
it what `Result.as_dict` promises: JSON-safe values (non-finite floats None, arrays lists) plus `success`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from attnphase.jsonio import to_jsonable
from attnphase.numeric.threshold import Threshold
from attnphase.results import Result, Status, rows_per_part

__all__ = ["BranchSolution", "LinearBaseline", "MissingBranch", "SolveResult", "RungThreshold", "Thresholds",
           "PhaseCurve", "Spinodal", "SpinodalResult", "TransverseCurvature", "GDResult", "combined_status"]


def _json_safe(result: Result, shape: dict) -> dict:
    """A result's hand-written JSON shape as `Result.as_dict` gives every result: JSON-safe values (an unbounded
    error is None, not inf; arrays are lists) and `success`."""
    return {**to_jsonable(shape), "success": result.success}


def combined_status(*statuses: Status) -> Status:
    """converged if every part converged; else the first part's status that is neither converged nor limited (a part
    without a usable value outweighs one whose error is only above the request, whatever their order); else
    limited."""
    unmet = [s for s in statuses if s != Status.CONVERGED]
    return next((s for s in unmet if s != Status.LIMITED), Status.LIMITED) if unmet else Status.CONVERGED


@dataclass(frozen=True)
class BranchSolution(Result):
    """One branch at one (α, parameters): order parameters, energies, stability and solver record.

    status: converged, limited (the values of the highest rule reached, whose errors do not meet the
    requested tolerance, or a tensor-only ladder whose errors are not verified on a split-line rule), or
    the solver's (max_iter, diverged, failed); lost when a fixed point collapsed onto the trivial set.
    errors: `<field>_error` for each of `accurate.FIELDS` (the fields with a verified error), the spread of the field
    over the last rules of the ladder (`accurate.climb_branch`); rule: the rule the values are on; checked_on: the
    rules of that spread.
    stable, spectral_radius: from the Jacobian of the full map on the tensor rule the branch was followed on
    (`nodes_per_dim`), not recomputed on the split-line rules; stable means every eigenvalue has real part < 1
    (`branch_solve.solve_branch`, not numeric.fixedpoint's spectral radius < 1). Not computed (`stability=False`, or
    no converged fixed point): stable None, spectral_radius NaN (JSON null).
    """

    branch: str
    alpha: float
    q: float
    m: float
    theta: float
    V: float
    free_energy: float
    train_loss: float
    test_error: float
    stable: bool | None
    spectral_radius: float
    status: Status
    message: str
    evaluations: int
    residual: float
    nodes_per_dim: int
    state: np.ndarray = field(repr=False)
    # E[M] at the fixed point on the rule it was solved on: dΦ/dα = −E[M] along the branch
    envelope: float = math.nan
    errors: dict = field(default_factory=dict, repr=False)
    rule: str = ""
    checked_on: str = ""

    def as_dict(self) -> dict:
        out = {"branch": self.branch, "q": self.q, "m": self.m, "theta": self.theta, "V": self.V,
               "test_error": self.test_error, "train_loss": self.train_loss, "free_energy": self.free_energy,
               "stable": self.stable, "spectral_radius": self.spectral_radius, "status": self.status}
        if self.errors:
            out.update({f"{name}_error": value for name, value in self.errors.items()}, rule=self.rule,
                       checked_on=self.checked_on, message=self.message)
        return _json_safe(self, out)


@dataclass(frozen=True)
class LinearBaseline(Result):
    """ε_g^lin = ½ (1−ω)² σ² Σ_ℓκ Var[softmax(h* h*ᵀ)_ℓκ], h* ~ N(0, σ² I_L): the linear positional baseline
    (f(x) = Bx with the best fixed L×L matrix B).

    variance_sum: Σ_ℓκ Var[...]; error: absolute error estimate of `value` (quadrature refinement);
    status: converged, or limited when the quadrature did not reach its tolerance.
    """

    value: float
    error: float
    variance_sum: float
    status: Status
    message: str
    nodes_per_dim: int


@dataclass(frozen=True)
class MissingBranch(Result):
    """A requested branch that is not reported, and why: status not_found (it does not exist at this α: the
    message gives the evidence, e.g. where it was lost when followed from its anchor), failed (no
    solution even at its anchor) or lost/limited (its fixed point on the accurate rules collapsed). A `Result` like
    the solutions it stands in for (`compare_with_theory`'s `theory` may be one): `success` is False."""

    branch: str
    status: Status
    message: str


@dataclass(frozen=True)
class SolveResult(Result):
    """All branches at one (ω, α): `branches` (found and distinct, each with its errors), `missing` (the
    requested branches not found, with the evidence), `global_branch` (of the requested branches, the one with the
    largest Φ, i.e. the lowest training loss ε_t = −Φ; None where the Φ gap to the next is within their errors or
    a requested branch was not solved, the message says which), `linear_baseline_test_error` (ε_g^lin, a value, not an
    error bar), `tol` (the relative
    tolerance asked of every field); status converged when every requested branch was either found to `tol` or
    shown not to exist, limited when a branch's errors do not meet `tol`, failed when a branch could not be followed
    at all."""

    branches: tuple[BranchSolution, ...]
    global_branch: str | None
    linear_baseline_test_error: float
    tol: float
    status: Status
    message: str
    missing: tuple[MissingBranch, ...] = ()

    def as_dict(self) -> dict:
        return _json_safe(self, {
            "branches": [b.as_dict() for b in self.branches], "global_branch": self.global_branch,
            "linear_baseline_test_error": self.linear_baseline_test_error, "tol": self.tol,
            "missing": [{"branch": m.branch, "status": m.status, "message": m.message} for m in self.missing],
            "status": self.status, "message": self.message})

    def rows(self):
        """One row per branch found (its order parameters, energies and their errors), the point's fields on each; a
        branch's own status and message are `branch_status`, `branch_message` (a missing branch has no row)."""
        return rows_per_part(self, "branches", "branch")


@dataclass(frozen=True)
class RungThreshold:
    """A threshold on one rung of the ladder: alpha (one Newton step from the last Newton point of the first
    rung, with this rung's crossing function `value` and `slope` there)."""

    rule: str
    alpha: float
    value: float
    slope: float


def _threshold_fields(name: str, t: Threshold) -> dict:
    return {name: t.value, f"{name}_error": t.error, f"{name}_status": t.status, f"{name}_message": t.message}


@dataclass(frozen=True)
class Thresholds(Result):
    """α_c (where the positional and semantic branches have the same training loss, Φ_sem = Φ_pos) and α_l
    (where the semantic ε_g equals the linear baseline's) at one ω, each a numeric.threshold.Threshold with
    its verified error; tol: the absolute tolerance asked; rungs_alpha_c / rungs_alpha_l: each rung's value
    (the error is the spread of the last three); states: name -> branch -> AccurateState at the reported
    threshold (the branches there, on the rung reported). status: converged when every requested threshold
    converged, else the first other status. read_back: the thresholds read back from a checkpoint directory
    (finished by an earlier call with the same arguments) instead of computed."""

    alpha_c: Threshold
    alpha_l: Threshold
    linear_baseline_test_error: float
    tol: float
    status: Status
    message: str
    rungs_alpha_c: tuple[RungThreshold, ...] = ()
    rungs_alpha_l: tuple[RungThreshold, ...] = ()
    states: dict = field(default_factory=dict, repr=False)
    read_back: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        out = {**_threshold_fields("alpha_c", self.alpha_c), **_threshold_fields("alpha_l", self.alpha_l),
               "linear_baseline_test_error": self.linear_baseline_test_error, "tol": self.tol}
        for name in ("alpha_c", "alpha_l"):
            out[f"rungs_{name}"] = [{"rule": r.rule, name: r.alpha} for r in getattr(self, f"rungs_{name}")]
        out.update(status=self.status, message=self.message, read_back=list(self.read_back))
        return _json_safe(self, out)


@dataclass(frozen=True)
class PhaseCurve(Result):
    """α_c(ω) and α_l(ω) along a list of ω (ascending), one `Thresholds` per ω (`points`), and the wall time;
    status converged when every threshold converged."""

    omegas: tuple[float, ...]
    points: tuple[Thresholds, ...]
    tol: float
    wall_time: float
    status: Status
    message: str

    @property
    def alpha_c(self) -> tuple[Threshold, ...]:
        return tuple(p.alpha_c for p in self.points)

    @property
    def alpha_l(self) -> tuple[Threshold, ...]:
        return tuple(p.alpha_l for p in self.points)

    def as_dict(self) -> dict:
        out = {"omega": list(self.omegas)}
        for name in ("alpha_c", "alpha_l"):
            values = getattr(self, name)
            out.update({name: [t.value for t in values], f"{name}_error": [t.error for t in values],
                        f"{name}_status": [t.status for t in values], f"{name}_message": [t.message for t in values]})
        out.update(tol=self.tol, wall_time=self.wall_time, status=self.status, message=self.message,
                   read_back=[w for w, point in zip(self.omegas, self.points) if point.read_back])
        return _json_safe(self, out)

    def rows(self):
        return [{"omega": w, **{k: v for name in ("alpha_c", "alpha_l")
                                for k, v in _threshold_fields(name, getattr(p, name)).items()
                                if not k.endswith("message")}}
                for w, p in zip(self.omegas, self.points)]


@dataclass(frozen=True)
class Spinodal(Result):
    """The spinodal α_s of one branch at one ω.

    value: α_s on the working rule (midpoint of the final bisection bracket); error: half the bracket
    width + |α_s(check rule) − α_s(working rule)|; bracket: (last α where the branch was alive, first α
    where it was lost) on the working rule; criterion: what fired at the lost end — "not_converged",
    "collapsed" (semantic |θ| or positional |m| < 1e-6), "jumped" (the solve left the continued branch
    for another fixed point), or "unstable" (an eigenvalue of the full map's Jacobian with real part
    ≥ 1); check_value: α_s on the check rule. status: converged | not_found (alive over the whole range;
    value NaN, bracket = the range) | failed (e.g. no start on the branch, not quadrature-robust).
    """

    branch: str
    value: float
    error: float
    status: Status
    message: str
    bracket: tuple[float, float] | None
    criterion: str | None
    nodes_per_dim: int
    check_nodes_per_dim: int
    check_value: float = math.nan

    def as_dict(self) -> dict:
        return _json_safe(self, {
            "value": self.value, "error": self.error, "status": self.status, "message": self.message,
            "bracket": None if self.bracket is None else list(self.bracket), "criterion": self.criterion,
            "check_value": self.check_value})


@dataclass(frozen=True)
class SpinodalResult(Result):
    """Spinodals of the positional and semantic branches at one ω (see `spinodals`)."""

    omega: float
    positional: Spinodal
    semantic: Spinodal
    alpha_range: tuple[float, float]
    nodes_per_dim: int
    check_nodes_per_dim: int
    status: Status
    message: str

    def as_dict(self) -> dict:
        out = {"omega": self.omega, "alpha_range": list(self.alpha_range), "nodes_per_dim": self.nodes_per_dim,
               "check_nodes_per_dim": self.check_nodes_per_dim, "status": self.status, "message": self.message}
        for s in (self.positional, self.semantic):
            out.update({f"spinodal_{s.branch}": s.value, f"spinodal_{s.branch}_error": s.error,
                        f"spinodal_{s.branch}_status": s.status, f"spinodal_{s.branch}_criterion": s.criterion,
                        f"spinodal_{s.branch}_bracket": None if s.bracket is None else list(s.bracket),
                        f"spinodal_{s.branch}_message": s.message})
        return _json_safe(self, out)


@dataclass(frozen=True)
class TransverseCurvature(Result):
    """∂²Φ/∂u² at a branch's fixed point along the direction u leaving its invariant set.

    value: the curvature (negative: stable against leaving the invariant set, see
    `transverse_free_energy_curvature`); error: Richardson estimate |D(h) − D(2h)|/3 of the central
    second difference; status: converged | failed (the branch solution had not converged).
    """

    branch: str
    alpha: float
    value: float
    error: float
    status: Status
    message: str


@dataclass(frozen=True)
class GDResult(Result):
    """Per-trial end-of-training measurements (arrays of length `trials`) and the run's settings.

    status: converged (every trial's training loss and order parameters settled, network.SETTLED_LOSS_CHANGE and
    SETTLED_ORDER_CHANGE), limited (a trial's loss or an order parameter still moving), or diverged when a measurement
    of some trial is not finite (e.g. a huge lr).
    threads: the torch CPU threads the run used.
    test_error_sem: standard error of each trial's ε_g estimate from the finite test set (per-sample
    loss spread / √N): the Monte-Carlo part of the trial-to-trial spread of `test_error`, which
    finite-size gaps subtract.
    alpha, params: the run's α and model `Parameters` (what `comparison.compare_with_theory` solves at).
    theory, theory_tol, theory_choice, landed, comparisons: set by `comparison.compare_with_theory` (theory_tol None
    where the run was not held against the theory): the compared branch as `solve` gives it (a BranchSolution, or
    the MissingBranch where it does not exist at α; None where no branch was chosen), the tolerance it was solved to,
    why that branch, the branch each trial landed on, and one validate.compare.Comparison per compared quantity.

    as_dict, per measured quantity x: x (per trial), x_mean, x_error (the standard error of x_mean, x_std/√trials:
    the bar the comparison uses; None for one trial) and x_std (the spread of the trials, ddof 1: how far one run at
    this d typically lies from their mean).
    """

    m: np.ndarray
    theta: np.ndarray
    q: np.ndarray
    test_error: np.ndarray
    train_loss: np.ndarray
    init: str
    optimizer: str
    d: int
    n: int
    steps: int
    lr: float
    device: str
    test_samples: int
    status: Status
    message: str
    test_error_sem: np.ndarray | None = None
    threads: int = 1
    alpha: float = math.nan
    params: object = field(default=None, repr=False)
    theory: BranchSolution | MissingBranch | None = None
    theory_tol: float | None = None
    theory_choice: str = ""
    landed: tuple[str, ...] = ()
    comparisons: tuple = ()

    @property
    def theory_agrees(self) -> bool | None:
        """False when a compared quantity rejects the theory, True when every one agrees, None otherwise (no
        comparison, or no verdict on some and no rejection). `status` says whether the run itself settled."""
        from attnphase.validate.compare import verdict_of

        return verdict_of(self.comparisons)

    def as_dict(self) -> dict:
        out = {"init": self.init, "optimizer": self.optimizer, "d": self.d, "n": self.n, "steps": self.steps,
               "status": self.status, "message": self.message}
        for key in ("m", "theta", "q", "test_error", "train_loss"):
            values = getattr(self, key)
            out[key] = values
            out[key + "_mean"] = float(values.mean())
            out[key + "_error"] = float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else None
            out[key + "_std"] = float(values.std(ddof=1)) if values.size > 1 else 0.0
        if self.test_error_sem is not None:
            out["test_error_mc_sem"] = self.test_error_sem
        if self.theory_tol is not None:
            solution = ({"branch": None} if self.theory is None else self.theory.as_dict()
                        if isinstance(self.theory, BranchSolution) else dataclasses.asdict(self.theory))
            out["theory"] = {"branch": solution.pop("branch"), "choice": self.theory_choice, "tol": self.theory_tol,
                             **solution}
            out["landed"] = list(self.landed)
            out["comparisons"] = list(self.comparisons)
            out["theory_agrees"] = self.theory_agrees
        return _json_safe(self, out)
