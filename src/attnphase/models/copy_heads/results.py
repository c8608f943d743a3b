"""Result types of the copy-heads theory (frozen dataclasses on `attnphase.results.Result`; the simulations' are
in `simulation_results`, the softmax row mean field's in `row_mean_field_results`).

Every public entry point returns one of the `Result` types below (status from `attnphase.results.Status`,
`as_dict()` for JSON); the parts they are made of (a minimum, a scan point, a well) are plain frozen
dataclasses of numbers, strings and arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnphase.numeric.scaling import LawFit
from attnphase.results import Result, Status, rows_per_part

__all__ = [
    "Minimum", "SolveResult", "Transition", "SoftmaxTransition", "LinearTransition", "CausalLinearTransition",
    "MeanFieldScanPoint", "RowMeanFieldTransition", "ExactRowRateThreshold", "ClaimedLawFit", "ScalingPoint",
    "SoftmaxExtrapolation", "ScalingResult", "ConventionEntry", "ConventionRow", "ConventionTable", "LinearObservables",
    "PosteriorMeans",
]


# -- solve ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Minimum:
    """One local minimum of the reduced action (or a saddle, when stable is False).

    c_uniform = t (row sum, projection on U), c_copy = c (coefficient of S − U); a_copy is the weight
    on the previous position (softmax) or m (linear); rho the remainder norm per row; error: the largest absolute
    error of c_uniform, c_copy and rho, from the mpmath polish of the stationary point (homogeneous actions) or the
    float64 Newton step left there (causal linear), NaN where not estimated (the causal softmax row mean field).
    hessian_eigenvalues: of the reduced action in the coordinates it is solved in (their signs give `stable`):
    softmax, the previous-position logit x; linear, (t, c), and (t, c, ln ρ) with the entropy remainder (causal
    linear: the three smallest, in (t_2..t_L, c[, ln ρ])).
    action_error, a_copy_error, loss_mean_predictor_error, loss_gibbs_error and hessian_eigenvalues_error (a tuple, one
    per eigenvalue): the absolute error of each float, the polished point's coordinate errors propagated through the
    quantity (first-order sensitivity; for the action, stationary there, |gradient|·error + ½|curvature|·error²),
    plus the rounding of its evaluation (mpmath: the difference between two working precisions; float64: measured
    against mpmath, or a few ulps of the terms' size) and of the float64 result; NaN where `error` is (the causal
    softmax row mean field, whose hessian_eigenvalues and their errors are empty).
    """

    c_uniform: float
    c_copy: float
    action: float
    stable: bool
    a_copy: float
    rho: float
    hessian_eigenvalues: tuple
    loss_mean_predictor: float
    loss_gibbs: float
    error: float
    action_error: float
    a_copy_error: float
    hessian_eigenvalues_error: tuple
    loss_mean_predictor_error: float
    loss_gibbs_error: float


@dataclass(frozen=True)
class SolveResult(Result):
    """Every stationary point found at P (`minima`), the index of the global minimum (None when status is failed)
    and the grid or minimiser iterations spent; error: the global minimum's (`Minimum.error`); `as_dict()` adds the
    global minimum as "global"."""

    attention: str
    L: int
    V: int
    P: float
    n: float
    minima: tuple
    global_index: int | None
    status: Status
    message: str
    iterations: int
    error: float

    @property
    def global_minimum(self) -> Minimum:
        if self.global_index is None:
            raise RuntimeError(f"no global minimum: {self.message}")
        return self.minima[self.global_index]

    def as_dict(self) -> dict:
        out = super().as_dict()
        out["global"] = out["minima"][self.global_index] if self.global_index is not None else None
        return out

    def rows(self):
        """One row per stationary point (`minimum` its position: the global one is `global_index`), the point's
        fields on each; a minimum's own error is `minimum_error` beside the point's `error` (the global one's)."""
        return rows_per_part(self, "minima", "minimum")


# -- thresholds -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Transition(Result):
    """A transition located and classified by the code.

    order: "first" (coexisting minima, jump) | "second" (curvature of the symmetric state vanishes with a positive
    quartic term) | "none" (neither found in the range) | "undetermined" (status failed: the float64 action
    overflows at these parameters, nothing computed) | "not classified" (the Landau step was skipped).
    P_star: coexistence point (first) or critical point (second), in the convention's P; P_star_digits: the
    mpmath-polished string (the root rounded to the digits its error supports); error: absolute error of the float
    P_star (the root's error plus the float's rounding); n_star: the control n at P_star.
    """

    attention: str
    L: int
    V: int
    order: str
    P_star: float
    P_star_digits: str
    error: float
    n_star: float
    status: Status
    message: str


@dataclass(frozen=True)
class SoftmaxTransition(Transition):
    """Softmax, homogeneous rows: spinodals (lower, upper) in P (folds of the followed branches); jump of the
    previous-position weight a at P*; a_uniform, a_copy: a on the two branches at P*; n_spinodals: the spinodals
    in n; spinodals_digits: their mpmath-polished digit strings; spinodal_kinds: "fold" (or "range" for a window
    end beyond the range covered)."""

    spinodals: tuple | None = None
    jump: float | None = None
    a_uniform: float | None = None
    a_copy: float | None = None
    n_spinodals: tuple | None = None
    spinodals_digits: tuple | None = None
    spinodal_kinds: tuple | None = None


@dataclass(frozen=True)
class LinearTransition(Transition):
    """Linear attention: the first instability of the symmetric state. exponent: mean-field exponent of the order
    parameter (from the Landau coefficients); landau_a4: the quartic coefficient along the soft mode; P_crossover:
    where the other mode's own curvature vanishes (P_crossover_error: the absolute error of the float); soft_mode:
    which mode goes soft first ("uniform" or "copy"); soft_vector: the soft direction in (t, c) at n* (unit, its
    larger component positive; with landau_a4 evaluated in mpmath there, so that every printed digit holds);
    n_crossover: the crossover in n. From the followed stationary
    branches (when classified): crossover_order "first" when the global minimum jumps again after the transition
    (the uniform-pooling and the copy minimum coexist), with P_crossover_jump (their coexistence point, located in
    float64: ~14 digits), crossover_window (its spinodals in P) and crossover_jump (the jump of √(t² + c²)), each with
    its absolute error (`_error`); "smooth" otherwise."""

    exponent: float | None = None
    landau_a4: float | None = None
    P_crossover: float | None = None
    P_crossover_digits: str | None = None
    P_crossover_error: float | None = None
    soft_mode: str | None = None
    soft_vector: tuple | None = None
    n_crossover: float | None = None
    crossover_order: str | None = None
    P_crossover_jump: float | None = None
    crossover_window: tuple | None = None
    crossover_jump: float | None = None
    P_crossover_jump_error: float | None = None
    crossover_window_error: tuple | None = None
    crossover_jump_error: float | None = None


@dataclass(frozen=True)
class CausalLinearTransition(LinearTransition):
    """Linear attention under the causal mask: soft_vector is in the collective variables (M_t, T1, c);
    soft_row_sums_first_last: the soft row profile's first and last row sums; rho_at_P_star: the remainder at
    the symmetric point (remainder "entropy", else 0)."""

    soft_row_sums_first_last: tuple | None = None
    rho_at_P_star: float | None = None


@dataclass(frozen=True)
class MeanFieldScanPoint:
    """One P of a row mean-field scan: how many minima, the global one's copy strength, every minimum's."""

    P: float
    n_minima: int
    c_global: float
    c_minima: tuple


@dataclass(frozen=True)
class RowMeanFieldTransition(Transition):
    """Softmax under the causal mask, from the row mean field: spinodals (the window of two minima, in P), jump of
    c at P*, the scan, the dual-plane grid's status, and (order "none") where the global c rises most steeply."""

    spinodals: tuple | None = None
    jump: float | None = None
    scan: tuple = ()
    grid_status: Status = Status.CONVERGED
    steepest_P: float | None = None
    steepest_jump_per_step: float | None = None


@dataclass(frozen=True)
class ExactRowRateThreshold(Result):
    """Softmax P* with the exact row rate (Sobol over the other scores) against the large-L shortcut's.

    error: the Sobol error of P*_exact; P_star_exact_digits: only the digits that error supports; k_exact,
    k_shortcut: the participation of the non-copy weights; x_minima: the two minima's logits at P*_exact."""

    order: str
    P_star_exact: float
    error: float
    P_star_exact_digits: str
    P_star_shortcut: float
    k_exact: float
    k_shortcut: float
    x_minima: tuple
    status: Status
    message: str


# -- scaling ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClaimedLawFit(LawFit):
    """One threshold against one claimed law over one variable: `numeric.scaling.law_fit`, labelled with the law
    it tests in words (the power of `variable` alone: `holds` says nothing about the other variable), the part of
    the claim it does not test (`not_tested`, a sentence; "" when none), the variable ("L" or "V") and the threshold
    ("P_star" or "P_crossover")."""

    law: str = ""
    not_tested: str = ""
    variable: str = ""
    threshold: str = ""


@dataclass(frozen=True)
class ScalingPoint:
    """P* (and, linear, the crossover) at one size; the size that varies is L or V. order: as `Transition.order`,
    or, linear attention at a scan's interior size, "skipped (classified at the end sizes only)"
    (`scaling_laws.SKIPPED_ORDER`)."""

    L: int
    V: int
    P_star: float
    P_star_digits: str
    order: str
    P_crossover: float | None = None


@dataclass(frozen=True)
class SoftmaxExtrapolation:
    """Does n*/(T ln²L) tend to a constant? (`softmax_ratio_extrapolation`)"""

    R_inf_predicted: float
    ratio: tuple
    corrected_ratio: tuple
    remainder_over_ln2ell_over_ell2: tuple
    corrected_slope: float = float("nan")
    corrected_slope_low: float = float("nan")
    corrected_slope_high: float = float("nan")


@dataclass(frozen=True)
class ScalingResult(Result):
    """P* over one size variable ("L" or "V", the other `fixed`), with the fit of each threshold against its
    claimed law (`fit`, by threshold) and, softmax over L, the extrapolation of P*/(L ln²L) and the verdict on
    P* ~ L ln²L (`law_verdict`: holds, verdict, criterion and the plain fit's own verdict, verdict_by_plain_fit
    and holds_by_plain_fit; the fit of P_star then carries the corrected ratio's verdict as its `verdict` and
    `holds`, law_verdicts.softmax_scaling_verdict)."""

    attention: str
    variable: str
    fixed: dict
    points: tuple
    fit: dict
    extrapolation: SoftmaxExtrapolation | None
    status: Status
    message: str
    law_verdict: dict | None = None


@dataclass(frozen=True)
class ConventionEntry:
    """One attention under one convention: every claimed law's fit, the orders found, the softmax extrapolation."""

    fits: tuple
    orders: tuple
    extrapolation: SoftmaxExtrapolation | None = None


@dataclass(frozen=True)
class ConventionRow:
    """One convention; an attention whose entry is None has a `note` saying why no fit was made."""

    convention: str
    softmax: ConventionEntry | None
    linear: ConventionEntry | None
    note: str = ""


@dataclass(frozen=True)
class ConventionTable(Result):
    """One `ConventionRow` per convention."""

    conventions: tuple
    status: Status
    message: str


# -- fluctuations of the linear order parameters ---------------------------------------------------------------
@dataclass(frozen=True)
class LinearObservables:
    """t (mean row sum), c, rho (remainder per target row) and the Gibbs test loss."""

    t: float
    c: float
    rho: float
    loss_gibbs: float

    def __getitem__(self, name: str) -> float:
        return getattr(self, name)


@dataclass(frozen=True)
class PosteriorMeans(Result):
    """Posterior means of the linear order parameters under exp(−S) of the reduced action itself.

    means / errors / saddle: `LinearObservables` (rho measured as the sampled network's is: from the
    row-resolved plane under the causal mask, from the shared plane t̄U + cS_⊥ otherwise, so that with
    `row_sums="per-row"` it includes the row-sum spread (⟨t_l²⟩ − t̄²)/L); errors are standard errors over
    independent walkers; saddle is the global minimum.
    """

    L: int
    V: int
    P: float
    n: float
    means: LinearObservables
    errors: LinearObservables
    saddle: LinearObservables
    acceptance: float
    walkers: int
    steps: int
    status: Status
    message: str
