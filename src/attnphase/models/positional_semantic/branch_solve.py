"""One branch's fixed point at one α on a tensor rule (`solve_branch`: frozen basins, Anderson then MINPACK hybr),
and its stability from the Jacobian of the full map (`full_map_stability`).
"""

from __future__ import annotations

import math

import numpy as np

from attnphase.models.positional_semantic.coordinates import BranchCoordinates, initial_guess
from attnphase.models.positional_semantic.parameters import Parameters
from attnphase.models.positional_semantic.results import BranchSolution
from attnphase.models.positional_semantic.state_evolution import SaddlePointEquations
from attnphase.numeric.basins import frozen_basin_rounds
from attnphase.numeric.fixedpoint import Anderson, Chain, Hybr, solve_fixed_point
from attnphase.numeric.jacobian import map_jacobian
from attnphase.results import Status

__all__ = ["BASIN_ROUNDS", "MAX_BASIN_ROUNDS", "GLOBAL_MAP_MAX_ITER", "solve_branch", "unsolved",
           "full_map_stability"]

# Rounds of (frozen-basin fixed point, global check); measured: one or two suffice near the branches
# for L = 2. For L = 3 (6-D rules, many more nodes near a basin switch) the rounds converge linearly
# (reset weight 1.5e-3, 1.1e-3, 4e-4, 6e-6, 6e-12, 0 on 6 nodes at ω = 0.3, α = 1.25, V moving 18.8 → 19.7
# from the default start): rounds beyond BASIN_ROUNDS continue while the reset weight at least halves per
# round, up to MAX_BASIN_ROUNDS; a stalled assignment (a node on a switch) goes to the global-prox map.
BASIN_ROUNDS = 4
MAX_BASIN_ROUNDS = 16
# The global-prox map after a stalled assignment is solved by Anderson alone, up to this many iterations. Where it
# has a fixed point next to the frozen one, Anderson reaches it about as fast as on the frozen map (12 evaluations in
# both such cases of the two standard-grid tests); where the switching node's jump straddles the fixed point it has
# none, and 80 Anderson iterations then MINPACK hybr (whose forward differences straddle the jump) took 119-133
# evaluations, 4-5 s, and never converged (the other 12 cases; three of them are 8 s of `threshold --omega 0.45`).
# The branch then has a hole at that α on the tensor rule (numeric.branches.FollowedBranch), which the callers handle.
GLOBAL_MAP_MAX_ITER = 40


def _branch_solver(n: int) -> Chain:
    """Anderson first (globally robust here); MINPACK hybr from its end point where it stalls."""
    return Chain(Anderson(damping=0.5, max_iter=80), Hybr(max_evaluations=20 * (n + 1)))


def solve_branch(branch: str, alpha: float, params: Parameters, *, nodes_per_dim: int = 12, guess=None,
                 tol: float = 1e-10, accept: float = 1e-8, stability: bool = True) -> BranchSolution:
    """Fixed point of the state-evolution map inside the branch's invariant set, with its stability.

    α is trusted (validated by the entry point). The solver (numeric.fixedpoint: Anderson, then MINPACK
    hybr, in unconstrained coordinates) runs on the restricted map to `tol` with FROZEN BASINS
    (numeric.basins): each node's prox is continued from its previous minimiser, which makes the map
    smooth and each evaluation ~5× cheaper; at the fixed point the global prox is recomputed, and if any
    node's global minimiser lies in another basin the basins are reset and the solve repeated
    (BASIN_ROUNDS times, more while the reset weight keeps halving; then the global-prox map is solved
    directly, by GLOBAL_MAP_MAX_ITER Anderson iterations at most). A residual up to `accept` is accepted (the
    global-prox map is piecewise smooth on a fixed rule, so its noise floor can exceed `tol`), anything larger is
    reported as not converged.

    Stability (`stability=True`, `full_map_stability`): from the eigenvalues λ of the Jacobian dF of the FULL map (all
    of q, V, θ, m), so an instability transverse to the invariant set (e.g. a semantic fixed point unstable towards
    m ≠ 0) is seen. `stable` is True when every λ has real part < 1: the fixed point attracts a suitably damped
    iteration x <- (1 − η) x + η F(x); `spectral_radius` (max |λ|) is reported beside it. This is NOT the rule of
    `numeric.fixedpoint.FixedPointResult.stable` (spectral radius < 1: the undamped iteration x <- F(x) converges):
    a fixed point with an eigenvalue below −1 is stable here with a spectral radius above 1. Where the stability is
    not computed (`stability=False`, or the solve did not converge) `stable` is None and `spectral_radius` NaN (both
    null in the JSON, "n/a" in the tables).
    """
    coords = BranchCoordinates(branch, params)
    equations = SaddlePointEquations(params, alpha, nodes_per_dim)
    basins = equations.new_basins()
    y0 = initial_guess(branch, params) if guess is None else np.asarray(guess, float)
    if not coords.contains(y0):  # a guess extrapolated, or carried from other parameters, past q = 0 or |c| = 1
        return unsolved(branch, alpha, params, nodes_per_dim,
                        "the start lies outside the branch's domain (q, V > 0, |θ| < √(ρq))")
    solver = _branch_solver(len(y0))
    frozen = coords.restricted_map(lambda x: equations.evaluate(x, basins).next)

    def solve(F, y, with_solver=solver):
        return solve_fixed_point(F, y, with_solver, transforms=coords.transforms, tol=tol, spectrum=False)

    global_solver = Anderson(damping=0.5, max_iter=GLOBAL_MAP_MAX_ITER)
    rounds = frozen_basin_rounds(lambda y: solve(frozen, y),
                                 lambda y: solve(coords.restricted_map(equations), y, global_solver),
                                 lambda y: equations.reset_basins(basins, coords.to_state(y)), basins, y0,
                                 accept=accept, rounds=BASIN_ROUNDS, max_rounds=MAX_BASIN_ROUNDS)
    result, evaluations = rounds.result, rounds.evaluations
    # the map the solution belongs to: frozen basins unless the assignment stalled (then the global map)
    in_use = None if rounds.stalled else basins
    converged = bool(np.isfinite(result.residual) and result.residual <= accept)
    status = Status.CONVERGED if converged else result.status
    message = result.message if result.success or not converged else (
        f"{result.message}; accepted: residual {result.residual:.2g} <= {accept:g}")
    x = coords.to_state(result.value)
    L = params.L
    m_rep = float(x[3]) if L == 2 else float(np.linalg.norm(x[3:3 + L]) / math.sqrt(L))
    common = dict(branch=branch, alpha=alpha, q=float(x[0]), m=m_rep, theta=float(x[2]), V=float(x[1]),
                  status=status, message=message, residual=float(result.residual),
                  nodes_per_dim=nodes_per_dim, state=x)
    if not converged:
        return BranchSolution(free_energy=math.nan, train_loss=math.nan, test_error=math.nan, stable=None,
                              spectral_radius=math.nan, evaluations=evaluations, **common)
    radius, stable = math.nan, None  # not computed
    if stability:
        stable, radius, n_eval = full_map_stability(lambda x: equations.evaluate(x, in_use).next, x, params)
        evaluations += n_eval
    evaluation = equations.evaluate(x, in_use)
    phi = equations.free_energy(x, evaluation)
    return BranchSolution(free_energy=phi, train_loss=-phi, test_error=equations.test_error(x), stable=stable,
                          spectral_radius=radius, evaluations=evaluations, envelope=evaluation.envelope, **common)


def unsolved(branch: str, alpha: float, params: Parameters, nodes_per_dim: int, why: str) -> BranchSolution:
    """A failed solve of the branch at α that never started (no evaluation; every number NaN, `stable` None), saying
    why."""
    nan = math.nan
    return BranchSolution(branch, alpha, nan, nan, nan, nan, nan, nan, nan, None, nan, Status.FAILED, why, 0, nan,
                          nodes_per_dim, np.full(3 + params.L, nan))


def full_map_stability(F, state, params: Parameters) -> tuple[bool, float, int]:
    """(stable, spectral radius, evaluations) of the FULL map F (all of q, V, θ, m) at a fixed point `state`, from
    its Jacobian by central differences. Stable = attracting for the damped iteration x <- (1 − η) x + η F(x) at
    some η in (0, 1]: every eigenvalue of dF has real part < 1. An eigenvalue below −1 (radius > 1) only means the
    undamped iteration overshoots; an eigenvalue with real part > 1 is a genuine saddle direction. (So `stable` here
    is not numeric.fixedpoint's spectral radius < 1; see `solve_branch`.)"""
    full = BranchCoordinates("mixed", params)
    J, evaluations = map_jacobian(full.restricted_map(F), full.from_state(state), transforms=full.transforms)
    eigenvalues = np.linalg.eigvals(J)
    return bool(eigenvalues.real.max() < 1.0), float(np.abs(eigenvalues).max()), evaluations
