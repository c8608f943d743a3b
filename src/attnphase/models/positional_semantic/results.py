"""Result types of the positional-semantic model (all `results.Result`: status, message, `as_dict()`).

`as_dict()` gives what the CLI prints with --json; where a result's JSON has a fixed, documented shape
(field names the CLI contract and the reproduce pipeline rely on) it is written out here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from attnphase.numeric.threshold import Threshold
from attnphase.results import Result, Status

__all__ = ["BranchSolution", "LinearBaseline", "SolveResult", "StateRow", "EnvelopeRow", "ConvergenceStudy",
           "Thresholds", "CurveResult", "NewtonPoint", "CurveRow", "SplitLineCurve", "Spinodal",
           "SpinodalResult", "TransverseCurvature", "GDResult", "ERROR_FIELDS", "combined_status"]

# The quantities of a branch whose quadrature error `solve` reports with a check rule.
ERROR_FIELDS = ("q", "m", "theta", "V", "test_error", "train_loss", "free_energy")


def combined_status(*statuses: Status) -> Status:
    """converged if every part converged, else the first part's status that is not."""
    return next((s for s in statuses if s != Status.CONVERGED), Status.CONVERGED)


@dataclass(frozen=True)
class BranchSolution(Result):
    """One branch at one (α, parameters): order parameters, energies, stability and solver record.

    status: converged, or the solver's (max_iter, diverged, failed); lost when a refinement collapsed
    onto the trivial set (the message says so). errors (with a check rule, `solve`): |value − value on
    the check rule| for ERROR_FIELDS, NaN where the check solve failed.
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
    stable: bool
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
    check_nodes_per_dim: int | None = None

    def as_dict(self) -> dict:
        out = {"branch": self.branch, "q": self.q, "m": self.m, "theta": self.theta, "V": self.V,
               "test_error": self.test_error, "train_loss": self.train_loss, "free_energy": self.free_energy,
               "stable": self.stable, "spectral_radius": self.spectral_radius, "status": self.status}
        if self.check_nodes_per_dim is not None:
            out.update({f"{name}_error": value for name, value in self.errors.items()},
                       nodes_per_dim=self.nodes_per_dim, check_nodes_per_dim=self.check_nodes_per_dim)
        return out


@dataclass(frozen=True)
class LinearBaseline(Result):
    """ε_g^lin = ½ (1−ω)² σ² Σ_ℓκ Var[softmax(h* h*ᵀ)_ℓκ], h* ~ N(0, σ² I_L) (spec §5).

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
class SolveResult(Result):
    """All branches at one (ω, α): `branches` (converged and distinct), `global_branch` (largest Φ),
    `linear_baseline_error`; status converged when at least one branch was found; message: the branches
    not reported and why, and whether the global branch is uncertain."""

    branches: tuple[BranchSolution, ...]
    global_branch: str | None
    linear_baseline_error: float
    nodes_per_dim: int
    status: Status
    message: str

    def as_dict(self) -> dict:
        return {"branches": [b.as_dict() for b in self.branches], "global_branch": self.global_branch,
                "linear_baseline_error": self.linear_baseline_error, "nodes_per_dim": self.nodes_per_dim,
                "status": self.status, "message": self.message}


@dataclass(frozen=True)
class StateRow:
    """The fixed point of one branch on one state rule of a convergence study."""

    rule: str
    status: Status
    residual: float
    q: float = math.nan
    V: float = math.nan
    m: float = math.nan
    theta: float = math.nan
    test_error: float = math.nan
    free_energy: float = math.nan


@dataclass(frozen=True)
class EnvelopeRow:
    """Φ at the finest state with E[M] on one envelope rule of a convergence study."""

    rule: str
    free_energy: float


@dataclass(frozen=True)
class ConvergenceStudy(Result):
    """Φ, ε_t, ε_g of one branch at one α with error estimates from a convergence study.

    state_rows: the defect-corrected fixed point on each state rule (coarse, fine). envelope_rows: Φ at
    the fine state with E[M] on each envelope rule. free_energy: Φ on the finest envelope rule at the
    fine state; its error adds (i) the spread (max − min) of Φ over the envelope rules (the outer
    Gauss-Hermite rule converges geometrically for the semantic branch but oscillates at the 1e-7 level
    for the positional one, so the spread, not a geometric tail, is the honest bound), (ii) |Φ(coarse
    state) − Φ(fine state)| on one envelope rule: the state enters Φ at second order, so this bounds
    the fine state's contribution by that of the coarse one, which is larger. test_error: ε_g at the
    fine state (tensor rule, smooth integrand); it depends on the state at first order, so its error is
    |ε_g(fine) − ε_g(coarse)|. status: converged when every defect correction converged, else failed.
    envelope: E[M] at the fine state on the finest envelope rule (dΦ/dα = −E[M] along the branch, the
    exact slope for threshold refinement); state: the fine state (q, V, θ, m_1..m_L).
    """

    branch: str
    alpha: float
    state_rows: tuple[StateRow, ...]
    envelope_rows: tuple[EnvelopeRow, ...]
    free_energy: float
    free_energy_error: float
    test_error: float
    test_error_error: float
    status: Status
    message: str
    envelope: float = math.nan
    state: np.ndarray | None = field(default=None, repr=False)

    @property
    def train_loss(self) -> float:
        return -self.free_energy

    def as_dict(self) -> dict:
        return {"branch": self.branch, "alpha": self.alpha, "free_energy": self.free_energy,
                "free_energy_error": self.free_energy_error, "train_loss": self.train_loss,
                "train_loss_error": self.free_energy_error, "test_error": self.test_error,
                "test_error_error": self.test_error_error, "status": self.status, "message": self.message,
                "envelope": self.envelope, "state_rows": list(self.state_rows), "envelope_rows": list(self.envelope_rows)}


@dataclass(frozen=True)
class Thresholds(Result):
    """α_c (free-energy crossing of the positional and semantic branches) and α_l (semantic ε_g crossing
    the linear baseline) at one ω, on the tensor rule; `refined`: name -> the split-line refinement;
    status: converged when both best estimates converged."""

    alpha_c: Threshold
    alpha_l: Threshold
    linear_baseline_error: float
    nodes_per_dim: int
    check_nodes_per_dim: int
    status: Status
    message: str
    refined: dict = field(default_factory=dict)
    studies: tuple = ()

    def best(self, name: str) -> Threshold:
        """The reported estimate of `name`: the refined one when it converged, else the tensor one."""
        refined = self.refined.get(name)
        return refined if refined is not None and refined.success else getattr(self, name)

    def as_dict(self) -> dict:
        out = {"alpha_c": self.alpha_c.value, "alpha_c_error": self.alpha_c.error,
               "alpha_c_status": self.alpha_c.status, "alpha_l": self.alpha_l.value,
               "alpha_l_error": self.alpha_l.error, "alpha_l_status": self.alpha_l.status,
               "linear_baseline_error": self.linear_baseline_error, "nodes_per_dim": self.nodes_per_dim,
               "check_nodes_per_dim": self.check_nodes_per_dim, "message": self.message}
        tensor_rule = f"tensor Gauss-Hermite {self.nodes_per_dim} nodes (check {self.check_nodes_per_dim})"
        for name, coarse in (("alpha_c", self.alpha_c), ("alpha_l", self.alpha_l)):
            out.update({f"{name}_tensor": coarse.value, f"{name}_tensor_error": coarse.error, f"{name}_method": tensor_rule})
        for name, value in self.refined.items():  # "alpha_c" -> alpha_c_refined, alpha_c_refined_error, ...
            out.update({f"{name}_refined": value.value, f"{name}_refined_error": value.error,
                        f"{name}_refined_status": value.status, f"{name}_refined_message": value.message})
            if value.success:  # the best estimate is the refined one
                out.update({name: value.value, f"{name}_error": value.error, f"{name}_status": value.status,
                            f"{name}_method": "split-line refined (Newton on convergence studies)"})
        if self.studies:
            out["studies"] = [study.as_dict() for study in self.studies]
        out["status"] = self.status
        return out


@dataclass(frozen=True)
class CurveResult(Result):
    """α_c(ω) and α_l(ω) along a list of ω (one Threshold each) on tensor rules, the wall time and the
    number of branch solves; status converged when every threshold converged."""

    omegas: tuple[float, ...]
    alpha_c: tuple[Threshold, ...]
    alpha_l: tuple[Threshold, ...]
    nodes_per_dim: int
    check_nodes_per_dim: int
    wall_time: float
    solves: int
    status: Status
    message: str

    def as_dict(self) -> dict:
        return {"omega": list(self.omegas),
                "alpha_c": [t.value for t in self.alpha_c], "alpha_c_error": [t.error for t in self.alpha_c],
                "alpha_c_status": [t.status for t in self.alpha_c],
                "alpha_l": [t.value for t in self.alpha_l], "alpha_l_error": [t.error for t in self.alpha_l],
                "alpha_l_status": [t.status for t in self.alpha_l],
                "nodes_per_dim": self.nodes_per_dim, "check_nodes_per_dim": self.check_nodes_per_dim,
                "wall_time": self.wall_time, "solves": self.solves, "status": self.status, "message": self.message}

    def rows(self):
        return [{"omega": w, "alpha_c": c.value, "alpha_c_error": c.error, "alpha_c_status": c.status,
                 "alpha_l": l.value, "alpha_l_error": l.error, "alpha_l_status": l.status}
                for w, c, l in zip(self.omegas, self.alpha_c, self.alpha_l)]


@dataclass(frozen=True)
class NewtonPoint:
    """One Newton point of the split-line curve at one ω: Δ_c = Φ_sem − Φ_pos and its slope on the state rule."""

    alpha: float
    delta: float
    slope: float


@dataclass(frozen=True)
class CurveRow:
    """Diagnostics of `alpha_c_curve_split_line` at one ω.

    newton: the Newton points on the state rule; alpha_k, delta_state_rule, slope_state_rule: the last
    one; alpha_state_rule: its Newton root; curvature: |Δ''| used; positional_m, semantic_theta: the
    order parameters there; state_rule_term: the second-order Φ terms of unconverged state-rule solves;
    state_rule_residual: the larger residual. Where the envelope rules were evaluated: correction and
    slope_correction (their change of Δ_c and its slope), correction_error, and per branch Φ, its error
    and its state term (`envelope_values`). alpha_c..quadrature_error: the corrected threshold and its
    error terms; seconds, evaluations: the cost at this ω.
    """

    omega: float
    newton: tuple[NewtonPoint, ...] = ()
    alpha_k: float = math.nan
    delta_state_rule: float = math.nan
    slope_state_rule: float = math.nan
    alpha_state_rule: float = math.nan
    curvature: float = math.nan
    positional_m: float = math.nan
    semantic_theta: float = math.nan
    state_rule_term: float = math.nan
    state_rule_residual: float = math.nan
    correction: float | None = None
    slope_correction: float | None = None
    correction_error: float | None = None
    envelope_values: dict = field(default_factory=dict)
    alpha_c: float = math.nan
    alpha_c_error: float = math.nan
    delta: float = math.nan
    slope: float = math.nan
    linearisation_error: float = math.nan
    quadrature_error: float = math.nan
    seconds: float = math.nan
    evaluations: int = 0


@dataclass(frozen=True)
class SplitLineCurve(Result):
    """α_c(ω) from split-line free energies, with per-ω diagnostics (`alpha_c_curve_split_line`).

    alpha_c: one Threshold per ω (ascending ω); rows: one CurveRow per ω; wall_time in seconds;
    evaluations: split-line map evaluations in all; status converged when every ω converged.
    """

    omegas: tuple[float, ...]
    alpha_c: tuple[Threshold, ...]
    curve_rows: tuple[CurveRow, ...]
    state_rule: str
    envelope_rules: tuple[str, ...]
    wall_time: float
    evaluations: int
    status: Status
    message: str

    def as_dict(self) -> dict:
        return {"omega": list(self.omegas), "alpha_c": [t.value for t in self.alpha_c],
                "alpha_c_error": [t.error for t in self.alpha_c], "alpha_c_status": [t.status for t in self.alpha_c],
                "alpha_c_message": [t.message for t in self.alpha_c], "state_rule": self.state_rule,
                "envelope_rules": list(self.envelope_rules), "wall_time": self.wall_time,
                "evaluations": self.evaluations, "rows": list(self.curve_rows), "status": self.status,
                "message": self.message}

    def rows(self):
        return [{"omega": w, "alpha_c": t.value, "alpha_c_error": t.error, "alpha_c_status": t.status}
                for w, t in zip(self.omegas, self.alpha_c)]


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
        return {"value": self.value, "error": self.error, "status": self.status, "message": self.message,
                "bracket": None if self.bracket is None else list(self.bracket), "criterion": self.criterion,
                "check_value": self.check_value}


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
        return out


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

    status: converged, or diverged when a measurement of some trial is not finite (e.g. a huge lr).
    test_error_sem: standard error of each trial's ε_g estimate from the finite test set (per-sample
    loss spread / √N): the Monte-Carlo part of the trial-to-trial spread of `test_error`, which
    finite-size gaps subtract.
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

    def as_dict(self) -> dict:
        out = {"init": self.init, "optimizer": self.optimizer, "d": self.d, "n": self.n, "steps": self.steps,
               "status": self.status, "message": self.message}
        for key in ("m", "theta", "q", "test_error", "train_loss"):
            values = getattr(self, key)
            out[key] = values
            out[key + "_mean"] = float(values.mean())
            out[key + "_std"] = float(values.std(ddof=1)) if values.size > 1 else 0.0
        if self.test_error_sem is not None:
            out["test_error_mc_sem"] = self.test_error_sem
        return out
