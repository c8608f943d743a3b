"""Entry points at one point (ω, α): every branch, the linear baseline, a sweep point, and the
free-energy curvature out of a branch's invariant set."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from attnphase.models.positional_semantic.branches import BRANCHES, BranchCoordinates, distinct, solve_branch
from attnphase.models.positional_semantic.parameters import Parameters, SolveRules, check_parameter
from attnphase.models.positional_semantic.results import (ERROR_FIELDS, BranchSolution, LinearBaseline, SolveResult,
                                                          TransverseCurvature)
from attnphase.models.positional_semantic.state_evolution import SaddlePointEquations, kernels, tokens
from attnphase.numeric.convergence import Rung, climb
from attnphase.numeric.gauss import gaussian_expectation
from attnphase.params import check_choice, check_positive, check_real
from attnphase.results import Status

__all__ = ["DEFAULT_NODES_PER_DIM", "linear_baseline", "linear_baseline_error", "default_nodes_per_dim",
           "default_check_nodes_per_dim", "with_check", "solve", "sweep_point", "transverse_free_energy_curvature"]

# Default rules of `solve` by L. The tensor rule has (nodes per dimension)^(2L) points: 10^4 for L = 2,
# but 6^6 = 46 656 for L = 3 (one branch ~40 s on two cores, 8^6: several minutes) and 4^8 = 65 536 for
# L = 4. For L ≥ 3 `solve` also re-solves every branch on a check rule two nodes coarser and reports the
# difference as the quadrature error (the L = 2 rules have their own convergence study, see the docs).
DEFAULT_NODES_PER_DIM = {2: 10, 3: 6}


def _baseline(omega: float, sigma: float, L: int, tol: float) -> LinearBaseline:
    attention = kernels(L).attention
    mean, cov = np.zeros(L), sigma**2 * np.eye(L)

    def softmax(z):
        return attention.call(**tokens("hs", z))

    first = gaussian_expectation(softmax, mean, cov, tol=tol)
    centre = np.asarray(first.value, float)
    second = gaussian_expectation(lambda z: (softmax(z) - centre) ** 2, mean, cov, tol=tol)
    variance_sum = float(np.sum(second.value))
    prefactor = 0.5 * (1 - omega) ** 2 * sigma**2
    # E[(S − c)²] is stationary in c at c = E[S], so the error of the centre enters only at second order.
    error = prefactor * float(np.sum(second.error))
    converged = bool(first.converged and second.converged)
    return LinearBaseline(prefactor * variance_sum, error, variance_sum, Status.CONVERGED if converged else Status.LIMITED,
                          second.message, int(second.nodes_per_dim))


def linear_baseline(params: Parameters, *, tol: float = 1e-13) -> LinearBaseline:
    """ε_g^lin for validated parameters (see `linear_baseline_error`)."""
    return _baseline(params.omega, params.sigma, params.L, tol)


def linear_baseline_error(omega, sigma=0.5, L=2, *, tol=1e-13) -> LinearBaseline:
    """The asymptotic test error of the best linear positional predictor B x: it depends on ω, σ and L
    only (not on α, nor on A, which is why A is not asked for)."""
    return _baseline(check_parameter("omega", omega), check_parameter("sigma", sigma), check_parameter("L", L), tol)


def default_nodes_per_dim(L: int) -> int:
    """Gauss-Hermite nodes per dimension `solve` uses by default for L tokens."""
    return DEFAULT_NODES_PER_DIM.get(check_parameter("L", L), 4)


def default_check_nodes_per_dim(L: int, nodes_per_dim: int) -> int | None:
    """The check rule `solve` uses by default: none for L = 2, two nodes coarser (or finer at 4) for L ≥ 3."""
    if L == 2:
        return None
    return nodes_per_dim - 2 if nodes_per_dim >= 6 else nodes_per_dim + 2


def with_check(solution: BranchSolution, params: Parameters, check_nodes_per_dim: int) -> BranchSolution:
    """The solution with quadrature errors: the same branch re-solved on the check rule from its state (a
    two-rung climb of numeric.convergence reporting the working rule's values, verified on the check
    rule); NaN errors when the check solve fails or lands on another branch."""
    coords = BranchCoordinates(solution.branch, params)
    checked = climb(lambda nodes, previous: solve_branch(solution.branch, solution.alpha, params, nodes_per_dim=nodes,
                                                         guess=coords.from_state(previous.state), stability=False),
                    [Rung(solution.nodes_per_dim, f"{solution.nodes_per_dim} nodes"),
                     Rung(check_nodes_per_dim, f"{check_nodes_per_dim} nodes")],
                    lambda s: {name: getattr(s, name) for name in ERROR_FIELDS}, first=solution, accept=distinct,
                    report="verified")
    return replace(solution, errors=checked.errors, check_nodes_per_dim=check_nodes_per_dim)


def _is_auto(value) -> bool:
    return isinstance(value, str) and value == "auto"


def solve(omega, alpha, sigma=0.5, lam=0.01, A=None, L=2, *, nodes_per_dim="auto", branches=BRANCHES,
          stability=True, check_nodes_per_dim="auto") -> SolveResult:
    """Every branch at (ω, α), its stability and energies, the global minimum and the linear baseline.

    Branches are started inside their invariant sets (θ = 0, m = 0, both) and the mixed one from a
    generic point; a branch that does not converge, or collapses onto another, is not reported. A trivial
    branch that fails from its default start (at L = 3 the map leaves V > 0 from V = σ²/(λ+σ²)) is retried
    from the (q, V) of a branch already found.

    nodes_per_dim: tensor Gauss-Hermite nodes per dimension ("auto": `default_nodes_per_dim(L)`).
    check_nodes_per_dim: a second rule on which every reported branch is re-solved (warm-started) to give
    `<field>_error` = |difference| for q, m, θ, V, ε_g, ε_t, Φ; "auto" = `default_check_nodes_per_dim`
    (none for L = 2), None = no check. On these piecewise-smooth integrands (basin switches of the prox)
    the difference is an error indicator, not a bound (docs: the rule sequence 4/6/8 at L = 3).
    """
    params = Parameters.validated(omega=omega, sigma=sigma, lam=lam, A=A, L=L)
    alpha = check_positive("alpha", alpha)
    rules = SolveRules.validated(nodes_per_dim=default_nodes_per_dim(params.L) if _is_auto(nodes_per_dim) else nodes_per_dim,
                                 check_nodes_per_dim=None if _is_auto(check_nodes_per_dim) else check_nodes_per_dim)
    if _is_auto(check_nodes_per_dim):
        rules = rules.replace(check_nodes_per_dim=default_check_nodes_per_dim(params.L, rules.nodes_per_dim))
    nodes_per_dim, check_nodes_per_dim = rules.nodes_per_dim, rules.check_nodes_per_dim
    branches = [check_choice("branch", name, BRANCHES) for name in branches]  # all of them, before any work
    found: list[BranchSolution] = []
    notes = []
    for name in branches:
        solution = solve_branch(name, alpha, params, nodes_per_dim=nodes_per_dim, stability=stability)
        if name == "trivial" and not solution.success and found:
            solution = solve_branch(name, alpha, params, nodes_per_dim=nodes_per_dim, stability=stability,
                                    guess=[found[0].q, found[0].V])
        if distinct(solution, found):
            found.append(solution)
        else:
            notes.append(f"{name}: {solution.status} ({solution.message[:80]}); not reported")
    if check_nodes_per_dim is not None:
        found = [with_check(solution, params, check_nodes_per_dim) for solution in found]
    best = max(found, key=lambda b: b.free_energy).branch if found else None
    if check_nodes_per_dim is not None and len(found) >= 2:
        first, second = sorted(found, key=lambda b: -b.free_energy)[:2]
        gap = first.free_energy - second.free_energy
        if not gap > first.errors["free_energy"] + second.errors["free_energy"]:
            notes.append(f"global branch uncertain: Φ gap {gap:.2g} to {second.branch} within the quadrature errors")
    baseline = linear_baseline(params).value
    status = Status.CONVERGED if found else Status.FAILED
    return SolveResult(tuple(found), best, baseline, nodes_per_dim, status,
                       "; ".join(notes) or "every requested branch reported")


def sweep_point(omega, alpha, sigma=0.5, lam=0.01, L=2, nodes_per_dim=8) -> dict[str, float]:
    """One point of a parameter sweep (picklable, top level): the positional and semantic branches at
    (ω, α), their energies and overlaps, whether the semantic one is global, and the linear baseline."""
    result = solve(omega, alpha, sigma, lam, None, L, nodes_per_dim=nodes_per_dim,
                   branches=("positional", "semantic"), stability=False)
    point = {
        "linear_baseline_error": result.linear_baseline_error,
        "semantic_is_global": math.nan if result.global_branch is None else float(result.global_branch == "semantic"),
    }
    for branch in result.branches:
        for key in ("free_energy", "train_loss", "test_error", "q", "m", "theta"):
            point[f"{branch.branch}_{key}"] = float(getattr(branch, key))
    return point


def transverse_free_energy_curvature(solution: BranchSolution, params: Parameters, *, step: float = 1e-3
                                     ) -> TransverseCurvature:
    """Curvature of Φ(q, V, θ, m) (`free_energy_of_state`, the conjugates eliminated) at the branch's
    fixed point, along the direction out of its invariant set: θ = u for the positional branch,
    m = u × (first row of G_p), i.e. m = (u, −u) for the default encodings, for the semantic one.

    Sign convention (replica saddle): ε_t = −Φ, and the physical state MAXIMISES Φ over the overlaps
    that break the branch's symmetry, while in (q, V) the replica-symmetric Φ is a saddle (at ω = 0.3,
    α = 1.25 its (q, V, θ, m) Hessian is indefinite on both branches, both being stable fixed points),
    so only this transverse curvature has a definite sign: ∂²Φ/∂u² < 0 is stable, > 0 means the
    branch is a saddle that lowers ε_t by leaving its invariant set. Measured at ω = 0 (6 nodes) on
    the positional branch: −0.009 at α = 0.7, +0.012 at α = 0.9, bracketing the map-Jacobian spinodal
    α_s = 0.775; at ω = 0.3, α = 1.25 (8 nodes): −0.198 (positional, θ) and −0.026 (semantic, m), stable
    by the map Jacobian too. The prox basins are frozen at the global minimisers of the fixed point,
    so Φ is smooth on the fixed rule; the difference uses `step` and 2·step (absolute, in u).
    """
    step = check_real("step", step, 1e-8, 0.1, low_open=True)
    if not solution.success or solution.branch not in ("positional", "semantic"):
        return TransverseCurvature(solution.branch, solution.alpha, math.nan, math.nan, Status.FAILED,
                                   f"needs a converged positional or semantic solution ({solution.status})")
    L = params.L
    equations = SaddlePointEquations(params, solution.alpha, solution.nodes_per_dim)
    basins = equations.new_basins()
    equations.reset_basins(basins, solution.state)
    direction = np.zeros(3 + L)
    if solution.branch == "positional":
        direction[2] = 1.0
    else:
        direction[3:] = params.gram_matrix[0]

    def second_difference(h):
        phi = [equations.free_energy_of_state(solution.state + k * h * direction, basins=basins) for k in (-1, 0, 1)]
        return (phi[0] - 2 * phi[1] + phi[2]) / h**2

    fine, coarse = second_difference(step), second_difference(2 * step)
    return TransverseCurvature(solution.branch, solution.alpha, float(fine), float(abs(fine - coarse) / 3),
                               Status.CONVERGED, f"central second difference, steps {step:g} and {2 * step:g}")
