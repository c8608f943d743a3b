"""Public entry points for the copy-heads model (`attnphase solve|threshold|scaling|simulate copy-heads`).

The reduced actions of `attnphase.models.copy_heads` are compiled once (derive.codegen, numpy for
scans and mpmath for polishing) and solved here:

* `solve`: all local minima of the reduced action at one P, their Hessian spectra (stability), the
  global one and the predicted test losses.
* `threshold`: the transition, classified by the code. Softmax: the minima are counted along n; two
  coexisting minima with a jump of the global one is first order (both spinodals and the coexistence
  point are returned); linear: the curvature of the pooled-free state vanishes (second order; the
  Landau expansion along the soft mode gives the exponent), then the copy curvature gives the crossover.
  P* is polished with mpmath (numeric.threshold) to the requested digits.
* `scaling`: P* over L = 2^k (or over V) and fits against each claimed law (numeric.scaling).
* `simulate`: the real network with SGLD or Adam (validate.sgld).
* `softmax_row_mean_field` / `softmax_mean_field_window`: the softmax free energy with each row's
  fluctuations kept (Cramér function of one row; under the causal mask one per row length), the theory
  that finite-L sampling follows; its minima and mountain-pass barriers are searched on the dual plane of the tilts;
* causal mask (`Convention(boundary="causal")`): `causal_solve`, `causal_linear_transition` (row-resolved
  Convention A or, with `remainder="entropy"`, the remainder's radial volume; exact 3×3 stability reduction),
  `causal_softmax_transition` (row mean field, minima from the dual plane: `softmax_dual_mean_field`);
* `linear_posterior_means`: the linear order parameters averaged over exp(−S) (their own fluctuations), what
  posterior sampling of the network measures (with `row_sums="per-row"` one row sum per target row, as sampling has);
  `simulate_hysteresis`: uniform- and copy-start chains on shared data sets across a window.
* softmax copy branch, theory against sampling: row density "joint" (each row's logit and its other weights'
  participation jointly), `softmax_row_posterior_means` (means over each well instead of the mode),
  `softmax_finite_data_correction` (one finite data set to second order) and `simulate_row_model` (MALA of the scores
  under the self-averaged data term, which separates the two).

P convention (default): P counts target tokens and the loss is summed, so n = β·P (β = 1). Other
conventions are `Convention` fields (see models.copy_heads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import mpmath
import numpy as np
import sympy
from scipy.special import expit

from attnphase.derive.calculus import gradient, hessian
from attnphase.derive.codegen import compile_kernel
from attnphase.errors import ParameterError
from attnphase.models import copy_heads as model
from attnphase.numeric.metropolis import metropolis_means
from attnphase.params import check_choice, check_int, check_real

ATTENTIONS = ("softmax", "linear")
REDUCTIONS = ("convention-a", "first-attempt")

# -- compiled kernels ------------------------------------------------------------------------------
_LIN_PARAMS = [model.n, model.L, model.V, model.tau, model.lam_t, model.lam_c, model.ld]
_LIN_RHO_PARAMS = _LIN_PARAMS + [model.lam_r, model.dim_r]
_SOFT_PARAMS = [model.n, model.L, model.V, model.T, model.tau, model.sigma2, model.ld, model.k_rest]
_FIRST_PARAMS = [model.n, model.V, model.tau, model.lam_r, model.dim_r, model.ld]
_r = sympy.Symbol("r", real=True)  # ρ = e^r keeps the remainder positive


@dataclass(frozen=True)
class _Kernels:
    variables: tuple
    params: tuple
    action: object
    grad: object
    hess: object
    action_mp: object
    grad_mp: object
    hess_mp: object


def _compile(expr, variables, params) -> _Kernels:
    args = list(variables) + list(params)
    g = gradient(expr, list(variables))
    h = hessian(expr, list(variables))
    return _Kernels(
        tuple(variables), tuple(params),
        compile_kernel(expr, args), compile_kernel(list(g), args), compile_kernel(h, args),
        compile_kernel(expr, args, backend="mpmath"), compile_kernel(list(g), args, backend="mpmath"),
        compile_kernel(h, args, backend="mpmath"),
    )


@lru_cache(maxsize=None)
def linear_kernels(remainder: str = "map", centred: bool = False) -> _Kernels:
    if remainder == "map":
        return _compile(model.linear_action_map(centred), (model.t, model.c), _LIN_PARAMS)
    expr = model.linear_action(centred).subs(model.rho, sympy.exp(_r))
    return _compile(expr, (model.t, model.c, _r), _LIN_RHO_PARAMS)


@lru_cache(maxsize=None)
def softmax_kernels() -> _Kernels:
    return _compile(model.softmax_action(), (model.x,), _SOFT_PARAMS)


@lru_cache(maxsize=None)
def first_attempt_kernels() -> _Kernels:
    # q = m² + e^r keeps q > m²
    expr = model.first_attempt_action().subs(model.q, model.m**2 + sympy.exp(_r))
    return _compile(expr, (model.m, _r), _FIRST_PARAMS)


@lru_cache(maxsize=None)
def loss_kernels(centred: bool = False):
    args = [model.m, model.q, model.t, model.n, model.V, model.tau]
    return compile_kernel([model.mean_predictor_loss(model.m, model.q, model.t, centred),
                           model.gibbs_loss(model.m, model.q, model.t, centred)], args)


# -- parameters of one model instance ----------------------------------------------------------------
def _check_common(attention, L, V, convention):
    attention = check_choice("attention", attention, ATTENTIONS)
    if not isinstance(convention, model.Convention):
        raise ParameterError("convention", convention, "an attnphase.models.copy_heads.Convention")
    L, V = model.check_sizes(L, V)
    if convention.boundary in ("drop-first", "causal") and L < 3:
        raise ParameterError("L", L, f"an integer >= 3 with boundary '{convention.boundary}'")
    return attention, L, V


def linear_parameters(n, L, V, conv: model.Convention) -> list:
    pre = conv.linear_precisions(L)
    base = [n, L, V, conv.tau(V), pre["lam_t"], pre["lam_c"], conv.log_det_weight]
    return base + ([pre["lam_r"], pre["D_r"]] if conv.remainder == "entropy" else [])


def softmax_parameters(n, L, V, conv: model.Convention) -> list:
    # participation of the non-copy weights: e^{σ²} at large L (lognormal law of large numbers), at most L−1
    # (compared in logs: e^{σ²} overflows a float for σ² > 709)
    k = L - 1.0 if conv.sigma2 >= math.log(L - 1.0) else math.exp(conv.sigma2)
    # L as a float: the asymptotic checks go far beyond 2^63
    return [n, float(L), V, float(conv.targets(L)), conv.tau(V), conv.sigma2, conv.log_det_weight, k]


def first_attempt_parameters(n, L, V, conv: model.Convention) -> list:
    s_g = conv.kappa(L) ** 2 * conv.sigma2
    T_ = conv.targets(L)
    return [n, V, conv.tau(V), T_ / s_g, (T_ * L - 2) / 2, conv.log_det_weight]


# -- result objects --------------------------------------------------------------------------------
@dataclass
class Minimum:
    """One local minimum of the reduced action (or a saddle, when stable is False).

    c_uniform = t (row sum, projection on U), c_copy = c (coefficient of S − U); a_copy is the weight
    on the previous position (softmax) or m (linear); rho the remainder norm per row.
    """

    c_uniform: float
    c_copy: float
    action: float
    stable: bool
    a_copy: float
    rho: float
    hessian_eigenvalues: list
    loss_mean_predictor: float
    loss_gibbs: float


@dataclass
class SolveResult:
    attention: str
    L: int
    V: int
    P: float
    n: float
    minima: list
    global_index: int | None  # None when status is "failed"
    status: str
    message: str
    iterations: int
    error: float

    @property
    def global_minimum(self) -> Minimum:
        if self.global_index is None:
            raise RuntimeError(f"no global minimum: {self.message}")
        return self.minima[self.global_index]


@dataclass
class TransitionResult:
    """A transition located and classified by the code.

    order: "first" (coexisting minima, jump) | "second" (curvature of the symmetric state vanishes
    with a positive quartic term) | "none" (neither found in the range) | "undetermined" (status
    "failed": the float64 action overflows at these parameters, nothing computed). P_star: coexistence point
    (first) or critical point (second), in the convention's P; P_star_digits: mpmath-polished string;
    spinodals: (lower, upper) for first order; jump: change of the copy order parameter at P*;
    exponent: mean-field exponent of the order parameter for second order (from the Landau
    coefficients); P_crossover (linear): where the copy mode's own curvature vanishes;
    soft_mode: which mode goes soft first (linear).
    """

    attention: str
    L: int
    V: int
    order: str
    P_star: float
    P_star_digits: str
    error: float
    n_star: float
    spinodals: tuple | None = None
    jump: float | None = None
    exponent: float | None = None
    landau_a4: float | None = None
    P_crossover: float | None = None
    P_crossover_digits: str | None = None
    soft_mode: str | None = None
    status: str = "converged"
    message: str = ""
    details: dict = field(default_factory=dict)


# -- minima of the reduced actions ---------------------------------------------------------------------
def _softmax_grid(L, conv):
    sigma = math.sqrt(conv.sigma2)
    lo = -math.log(L - 1) - conv.sigma2 / 2 - 12 * sigma
    return np.linspace(lo, 80.0, 1601)


def _softmax_stationary(n, L, V, conv, refine=True):
    """(x_min list, x_max list) of the softmax action at n: sign changes of S' on a grid, refined by
    a safeguarded Newton iteration run on all brackets at once (bisection when Newton leaves one)."""
    ker = softmax_kernels()
    p = softmax_parameters(n, L, V, conv)
    xs = _softmax_grid(L, conv)
    g = ker.grad(xs, *p)[..., 0]
    idx = np.nonzero(np.sign(g[:-1]) != np.sign(g[1:]))[0]
    is_min = g[idx] < 0
    if not refine or len(idx) == 0:
        roots = 0.5 * (xs[idx] + xs[idx + 1])
    else:
        lo, hi = xs[idx].copy(), xs[idx + 1].copy()
        g_lo = g[idx].copy()
        r = 0.5 * (lo + hi)
        for _ in range(60):
            gr = ker.grad(r, *p)[..., 0]
            hr = ker.hess(r, *p)[..., 0, 0]
            left = np.sign(gr) == np.sign(g_lo)
            lo, hi = np.where(left, r, lo), np.where(left, hi, r)
            g_lo = np.where(left, gr, g_lo)
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = r - gr / hr
            inside = np.isfinite(newton) & (newton > lo) & (newton < hi)
            r_new = np.where(inside, newton, 0.5 * (lo + hi))
            # 1e-13: the action at a stationary point is quadratic in the error of x, and the mpmath
            # polish starts from here anyway
            done = np.all(np.abs(r_new - r) <= 1e-13 * np.maximum(1.0, np.abs(r)))
            r = r_new
            if done:
                break
        roots = r
    return roots[is_min].tolist(), roots[~is_min].tolist()


def _linear_minima(n, L, V, conv):
    """Local minima of the linear action (t, c[, r]) from several starts (the action is even)."""
    from scipy.optimize import minimize

    ker = linear_kernels(conv.remainder, conv.centred)
    p = linear_parameters(n, L, V, conv)
    dim = len(ker.variables)
    starts = []
    for t0 in (0.0, 0.5, 1.0, 2.0):
        for c0 in (0.0, 0.1, 0.5, 1.0):
            starts.append([t0, c0] + ([math.log(1e-2)] if dim == 3 else []))
    found, iters = [], 0
    for s in starts:
        try:
            with np.errstate(all="ignore"):
                res = minimize(
                    lambda v: float(ker.action(*v, *p)), np.array(s, float),
                    jac=lambda v: np.asarray(ker.grad(*v, *p), float), hess=lambda v: np.asarray(ker.hess(*v, *p), float),
                    method="trust-exact", options={"gtol": 1e-10, "maxiter": 500},
                )
        except (ValueError, ArithmeticError, np.linalg.LinAlgError, UnboundLocalError):
            # the action overflowed float64 along this start's path (extreme n, τ or σ²): no minimum
            # from here; `solve` reports "failed" if no start gives one. (scipy's trust-exact
            # subproblem raises UnboundLocalError when its Hessian turns non-finite.)
            continue
        iters += res.nit
        if not (np.all(np.isfinite(res.x)) and np.isfinite(res.fun)):
            continue
        v = res.x * (1 if res.x[0] >= 0 else np.r_[-1, -1, np.ones(dim - 2)])  # (t, c) ↦ (−t, −c) symmetry
        if not any(np.allclose(v, f, atol=1e-6, rtol=1e-6) for f in found):
            found.append(v)
    return found, iters


def solve(attention: str, L: int, V: int, P: float, convention: model.Convention = model.DEFAULT) -> SolveResult:
    """All local minima of the reduced action at P, with stability, the global one and the losses."""
    attention, L, V = _check_common(attention, L, V, convention)
    P = model.check_P(P)
    n_ = convention.n_of_P(P, L)
    if convention.boundary == "causal":
        return causal_solve(attention, L, V, P, convention)
    lossk = loss_kernels(convention.centred)
    tau_ = convention.tau(V)
    minima = []
    if attention == "softmax":
        ker = softmax_kernels()
        p = softmax_parameters(n_, L, V, convention)
        xs, _ = _softmax_stationary(n_, L, V, convention)
        iters = len(_softmax_grid(L, convention))
        for xv in xs:
            a = float(expit(xv))  # logistic without overflow at x ≪ 0 (huge σ²)
            k = p[-1]
            q_ = a * a + k * (1 - a) ** 2 / (L - 1)
            h = float(ker.hess(xv, *p)[..., 0, 0])
            losses = lossk(a, q_, 1.0, n_, V, tau_)
            minima.append(Minimum(1.0, (L * a - 1) / (L - 1), float(ker.action(xv, *p)), h > 0, a,
                                  q_ - (1 + (L - 1) * ((L * a - 1) / (L - 1)) ** 2) / L, [h], float(losses[0]), float(losses[1])))
    else:
        ker = linear_kernels(convention.remainder, convention.centred)
        p = linear_parameters(n_, L, V, convention)
        found, iters = _linear_minima(n_, L, V, convention)
        for v in found:
            eig = np.linalg.eigvalsh(np.asarray(ker.hess(*v, *p), float))
            t_, c_ = float(v[0]), float(v[1])
            rho_ = math.exp(v[2]) if len(v) == 3 else 0.0
            m_ = (t_ + (L - 1) * c_) / L
            q_ = (t_ * t_ + (L - 1) * c_ * c_) / L + rho_
            losses = lossk(m_, q_, t_, n_, V, tau_)
            minima.append(Minimum(t_, c_, float(ker.action(*v, *p)), bool(eig.min() > 0), m_, rho_, eig.tolist(),
                                  float(losses[0]), float(losses[1])))
    # Stationary points whose numbers overflowed are float64 noise, not minima (e.g. the softmax copy
    # minimum beyond the grid's x = 80 at n ≳ 1e30, where S' is rounding noise around a → 1).
    minima = [mn for mn in minima if _all_finite(mn)]
    stable = [i for i, mn in enumerate(minima) if mn.stable]
    if not stable:
        return SolveResult(attention, L, V, P, n_, minima, None, "failed",
                           f"no stable minimum of the reduced action resolved in float64 at n = {n_:.6g} "
                           f"({len(minima)} finite stationary point(s)); the parameters are outside the solvable range",
                           iters, math.nan)
    g = min(stable, key=lambda i: minima[i].action)
    msg = f"{len(stable)} stable minimum/minima"
    return SolveResult(attention, L, V, P, n_, minima, g, "converged", msg, iters, 0.0)


def _all_finite(mn: Minimum) -> bool:
    values = [mn.c_uniform, mn.c_copy, mn.action, mn.a_copy, mn.rho, mn.loss_mean_predictor, mn.loss_gibbs,
              *mn.hessian_eigenvalues]
    return all(math.isfinite(v) for v in values)


# -- softmax: first-order transition -----------------------------------------------------------------
def _softmax_branch_mp(xstart, p_mp):
    ker = softmax_kernels()
    root = mpmath.findroot(lambda xv: ker.grad_mp(xv, *p_mp)[0], mpmath.mpf(xstart),
                           df=lambda xv: _entry(ker.hess_mp(xv, *p_mp), 0, 0))
    return root, ker.action_mp(root, *p_mp)


def _n_scale_softmax(L, V, conv):
    return max(1.0, conv.targets(L) * math.log(L) ** 2 / conv.sigma2 + V * V)


def _count_minima_softmax(n_, L, V, conv, refine=False):
    return _softmax_stationary(n_, L, V, conv, refine)[0]


def _bisect_count(fun, lo, hi, iters=60):
    """Geometric bisection for the n where len(fun(n)) changes from its value at lo."""
    c_lo = len(fun(lo))
    for _ in range(iters):
        mid = math.sqrt(lo * hi)
        if len(fun(mid)) == c_lo:
            lo = mid
        else:
            hi = mid
        if hi / lo - 1 < 1e-6:  # the mpmath saddle-node solve polishes further
            break
    return lo, hi


def _softmax_spinodal_mp(n64, x64, L, V, conv, dps):
    """Saddle-node point: S'(x) = S''(x) = 0 solved jointly in (x, ln n) at the working precision."""
    ker = softmax_kernels()
    with mpmath.workdps(dps):
        def eqs(xv, ln_n):
            p = softmax_parameters(mpmath.exp(ln_n), L, V, conv)
            p = [mpmath.mpf(v) if not isinstance(v, mpmath.mpf) else v for v in p]
            return [ker.grad_mp(xv, *p)[0], _entry(ker.hess_mp(xv, *p), 0, 0)]
        try:
            sol = mpmath.findroot(eqs, (mpmath.mpf(x64), mpmath.log(n64)))
            return mpmath.exp(sol[1])
        except (ValueError, ZeroDivisionError):
            return mpmath.mpf(n64)


def _mp_params(plist):
    return [v if isinstance(v, mpmath.mpf) else mpmath.mpf(v) for v in plist]


def softmax_transition(L, V, conv=model.DEFAULT, digits=30) -> TransitionResult:
    """Classify the softmax transition by counting the minima of S(x; n) along n; polish with mpmath.

    The softmax action has no symmetric "disordered" state (x -> −x is not a symmetry and the copy
    minimum is far from the uniform one), so a Landau expansion cannot see it; instead: two
    coexisting stable minima over an interval of n with a change of the global one => first order;
    the interval ends are the spinodals (saddle-node S' = S'' = 0 solved in mpmath), the coexistence
    point is the crossing of the two branches' actions (numeric.threshold.branch_crossing with an
    mpmath evaluation of each branch at its polished minimum). A single minimum everywhere => "none"
    (a smooth crossover; happens at small L, e.g. L <= 6 for V = 4).
    """
    from attnphase.numeric.threshold import branch_crossing

    scale = _n_scale_softmax(L, V, conv)
    grid = np.geomspace(scale * 1e-4, scale * 1e4, 121)
    counts = [len(_count_minima_softmax(v, L, V, conv)) for v in grid]
    two = [i for i, k in enumerate(counts) if k >= 2]
    if not two:
        return TransitionResult("softmax", L, V, "none", math.nan, "", math.nan, math.nan,
                                status="not_found", message="one minimum at every n scanned: no first-order transition")
    i0, i1 = two[0], two[-1]
    fun = lambda v: _count_minima_softmax(v, L, V, conv)  # noqa: E731
    s_lo = _bisect_count(fun, grid[i0 - 1], grid[i0])[1] if i0 > 0 else grid[0]
    s_hi = _bisect_count(fun, grid[i1], grid[i1 + 1])[0] if i1 + 1 < len(grid) else grid[-1]

    def branch(which):
        def f(n_):
            mins = _count_minima_softmax(n_, L, V, conv, refine=True)
            if len(mins) < 2:
                return math.nan
            xv = mins[0] if which == 0 else mins[-1]
            return float(softmax_kernels().action(xv, *softmax_parameters(n_, L, V, conv)))

        def f_mp(n_mp):
            mins = _count_minima_softmax(float(n_mp), L, V, conv)
            xv = mins[0] if which == 0 else mins[-1]
            p = _mp_params(softmax_parameters(n_mp, L, V, conv))
            return _softmax_branch_mp(xv, p)[1]

        return f, f_mp

    f1, f1_mp = branch(0)
    f2, f2_mp = branch(1)
    lo, hi = s_lo * (1 + 1e-9), s_hi * (1 - 1e-9)
    dps = digits + 15 + int(2 * math.log10(L))  # actions ~ n ~ L ln²L: digits lost in their difference
    with mpmath.workdps(dps):
        res = branch_crossing(f1, f2, lo, hi, f1_mp=f1_mp, f2_mp=f2_mp, digits=digits, n_scan=8)
    n_star = res.value
    mins = _count_minima_softmax(n_star, L, V, conv, refine=True)
    a = [float(expit(v)) for v in (mins[0], mins[-1])]
    P_star = conv.P_of_n(n_star, L)
    with mpmath.workdps(dps):
        P_mp = conv.P_of_n(res.value_mp, L) if res.value_mp is not None else mpmath.mpf(P_star)
        P_digits = mpmath.nstr(P_mp, digits) if res.status == "converged" else res.digits_string
        lo_mins = _count_minima_softmax(s_lo * (1 + 1e-6), L, V, conv)
        hi_mins = _count_minima_softmax(s_hi * (1 - 1e-6), L, V, conv)
        # the spinodal where the copy minimum is born (left) and where the uniform one dies (right)
        sp_lo = _softmax_spinodal_mp(s_lo, _count_minima_softmax(s_lo * (1 + 1e-6), L, V, conv)[-1] if lo_mins else 0.0, L, V, conv, dps)
        sp_hi = _softmax_spinodal_mp(s_hi, hi_mins[0], L, V, conv, dps)
    return TransitionResult(
        "softmax", L, V, "first", P_star, P_digits, conv.P_of_n(res.error, L) if math.isfinite(res.error) else res.error, n_star,
        spinodals=(conv.P_of_n(float(sp_lo), L), conv.P_of_n(float(sp_hi), L)), jump=a[1] - a[0],
        status=res.status, message=f"two coexisting minima for n in ({s_lo:.6g}, {s_hi:.6g}); " + res.message,
        details={"a_uniform": a[0], "a_copy": a[1], "n_spinodals": (float(sp_lo), float(sp_hi))},
    )


# -- linear: second-order transition and crossover ------------------------------------------------------
def _linear_origin_hessian(n_, L, V, conv, mp=False):
    """Hessian in (t, c) at the symmetric state t = c = 0 (remainder at its own minimum)."""
    ker = linear_kernels(conv.remainder, conv.centred)
    p = linear_parameters(n_, L, V, conv)
    if conv.remainder == "map":
        if mp:
            h = ker.hess_mp(mpmath.mpf(0), mpmath.mpf(0), *_mp_params(p))
            return h
        return np.asarray(ker.hess(0.0, 0.0, *p), float)
    # remainder: ∂S/∂ρ = λ_ρ/2 − D_r/ρ + ∂S_data/∂q = 0 solved for r = ln ρ at t = c = 0
    g = lambda r, pp, k=ker: k.grad(0.0, 0.0, r, *pp)[..., 2]  # noqa: E731
    from scipy.optimize import brentq

    r0 = brentq(lambda r: float(g(r, p)), -200, 50)
    if mp:
        pm = _mp_params(p)
        r_mp = mpmath.findroot(lambda r: ker.grad_mp(mpmath.mpf(0), mpmath.mpf(0), r, *pm)[2], mpmath.mpf(r0))
        h = ker.hess_mp(mpmath.mpf(0), mpmath.mpf(0), r_mp, *pm)
        return h
    return np.asarray(ker.hess(0.0, 0.0, r0, *p), float)[:2, :2]


def _entry(h, i, j):
    return h[i, j] if hasattr(h, "rows") or isinstance(h, np.ndarray) else h[i][j]


def _log_crossing(fun, fun_mp, lo, hi, digits, values=None):
    """First root of fun(n) in ln n (n spans many decades).

    `values(ln_n_grid)`, when given, evaluates fun on the whole scan grid at once (vectorised) and the
    threshold layer is called on the bracketing cell only.
    """
    from attnphase.numeric.threshold import find_crossing

    lo_s, hi_s = math.log(lo), math.log(hi)
    if values is not None:
        grid = np.linspace(lo_s, hi_s, 1201)
        v = values(grid)
        change = np.nonzero(np.sign(v[:-1]) != np.sign(v[1:]))[0]
        if len(change):
            lo_s, hi_s = grid[change[0]], grid[change[0] + 1]
    return find_crossing(lambda s: fun(math.exp(s)), lo_s, hi_s, digits=digits + 2,
                         f_mp=lambda s: fun_mp(mpmath.exp(s)), n_scan=4 if values is not None else 400)


def linear_transition(L, V, conv=model.DEFAULT, digits=30, classify=True) -> TransitionResult:
    """First instability of the symmetric state (det Hessian = 0) and the copy-curvature crossover.

    classify=False skips the Landau classification (order "not classified"), for long sweeps.
    """
    dps = digits + 15 + int(3 * math.log10(L))  # curvatures span ~L³: digits lost in det H
    scale = V * V + L**1.5 * V**0.5 + L * V
    lo, hi = 1e-3, scale * 1e6  # n_U ~ V^2 does not grow with L: start low

    # the smallest eigenvalue of the 2×2 Hessian (scaled by its trace norm) changes sign exactly at the
    # first instability; det H would change sign twice when both modes go soft within one grid cell
    # (written as det/λ_max: the difference form loses every digit of the small curvature when the
    # copy curvature is ~L³ times larger)
    def lam_min(a, b, d, sqrt=np.sqrt):
        # scale-invariant: normalise first, so that squares of curvatures ~1e300 (σ² → 0) do not overflow
        size = abs(a) + abs(b) + abs(d)
        a, b, d = a / size, b / size, d / size
        lam_max = (a + d) / 2 + sqrt(((a - d) / 2) ** 2 + b * b)
        return (a * d - b * b) / (lam_max * (abs(a) + abs(d)))

    def det(n_):
        h = _linear_origin_hessian(n_, L, V, conv)
        return float(lam_min(h[0, 0], h[0, 1], h[1, 1]))  # noqa: E501

    def det_mp(n_):
        h = _linear_origin_hessian(n_, L, V, conv, mp=True)
        return lam_min(_entry(h, 0, 0), _entry(h, 0, 1), _entry(h, 1, 1), sqrt=mpmath.sqrt)

    vec_det = vec_curv = None
    if conv.remainder == "map":
        ker = linear_kernels("map", conv.centred)

        def hess_grid(ln_n):
            return np.asarray(ker.hess(0.0, 0.0, *linear_parameters(np.exp(ln_n), L, V, conv)), float)

        def vec_det(ln_n):
            h = hess_grid(ln_n)
            return lam_min(h[:, 0, 0], h[:, 0, 1], h[:, 1, 1])

        def vec_curv(ln_n):
            return hess_grid(ln_n)[:, other, other]

    with mpmath.workdps(dps):
        res = _log_crossing(det, det_mp, lo, hi, digits, vec_det)
    if res.status not in ("converged",) and not math.isfinite(res.value):
        return TransitionResult("linear", L, V, "none", math.nan, "", math.nan, math.nan, status="not_found", message=res.message)
    n_star = math.exp(res.value)
    h = _linear_origin_hessian(n_star * (1 + 1e-9), L, V, conv)
    w, vecs = np.linalg.eigh(h)
    soft = vecs[:, 0]
    soft_mode = "uniform" if abs(soft[0]) >= abs(soft[1]) else "copy"
    other = 1 if soft_mode == "uniform" else 0

    def curv(n_):
        return float(_linear_origin_hessian(n_, L, V, conv)[other, other])

    def curv_mp(n_):
        return _entry(_linear_origin_hessian(n_, L, V, conv, mp=True), other, other)

    with mpmath.workdps(dps):
        cross = _log_crossing(curv, curv_mp, lo, hi, digits, vec_curv)
        n_mp = mpmath.exp(res.value_mp)
        P_digits = mpmath.nstr(conv.P_of_n(n_mp, L), digits)
        nc_mp = mpmath.exp(cross.value_mp) if math.isfinite(cross.value) else None
        Pc_digits = mpmath.nstr(conv.P_of_n(nc_mp, L), digits) if nc_mp is not None else None
    land = classify_linear(L, V, conv, n_star, soft) if classify else {"order": "not classified", "message": ""}
    return TransitionResult(
        "linear", L, V, land["order"], conv.P_of_n(n_star, L), P_digits, conv.P_of_n(n_star, L) * res.error, n_star,
        exponent=land.get("exponent"), landau_a4=land.get("a4"),
        P_crossover=conv.P_of_n(math.exp(cross.value), L) if math.isfinite(cross.value) else None,
        P_crossover_digits=Pc_digits, soft_mode=soft_mode, status=res.status,
        message=f"symmetric state loses stability along the {soft_mode} mode; " + land.get("message", ""),
        details={"soft_vector": soft.tolist(), "n_crossover": math.exp(cross.value) if math.isfinite(cross.value) else None},
    )


_phi = sympy.Symbol("phi", real=True)
_vt, _vc = sympy.symbols("v_t v_c", real=True)


@lru_cache(maxsize=None)
def landau_kernel(remainder: str = "map", centred: bool = False):
    """Kernel of (da₂/dn, a₂, a₄, a₆) of S(φ v_t, φ v_c) (remainder frozen at ρ for "entropy").

    Coefficients from derive.landau.landau_expansion of the symbolic action, computed once for
    symbolic soft vector (v_t, v_c) and parameters.
    """
    from attnphase.derive.landau import landau_expansion

    if remainder == "map":
        expr, params = model.linear_action_map(centred), _LIN_PARAMS
    else:
        expr, params = model.linear_action(centred), _LIN_RHO_PARAMS + [model.rho]
    F = expr.subs({model.t: _phi * _vt, model.c: _phi * _vc})
    exp = landau_expansion(F, _phi, 0, 6)
    outs = [sympy.diff(exp.coefficient(2), model.n), exp.coefficient(2), exp.coefficient(4), exp.coefficient(6)]
    return compile_kernel(outs, [_vt, _vc] + list(params))


def classify_linear(L, V, conv, n_star, soft) -> dict:
    """Classify the linear transition with derive.landau along the soft mode.

    The action is even under (t, c) -> (−t, −c), so cubic terms vanish and the restriction to the
    soft line φ·v carries the quartic coefficient that decides the order. Near the critical point the
    Landau polynomial is F = a₂'(n*) δ φ² + a₄(n*) φ⁴ + a₆(n*) φ⁶ with δ = n − n* (a₂ linear in the
    control, the standard Landau form); its coefficients come from `landau_expansion` of the full
    action (`landau_kernel`), and `classify_transition` decides the order and derives the exponent.
    """
    p = linear_parameters(n_star, L, V, conv)
    if conv.remainder == "entropy":
        p = p + [_remainder_at_origin(n_star, L, V, conv)]
    a2_slope, a2, a4, a6 = (float(v) for v in landau_kernel(conv.remainder, conv.centred)(float(soft[0]), float(soft[1]), *p))
    order, exponent, message = _classify_canonical(_sign(a2_slope), _sign(a4), _sign(a6))
    return {"order": order, "exponent": exponent, "a4": a4, "a2_slope": a2_slope, "a2_at_critical": a2, "message": message}


def _sign(v: float) -> int:
    return (v > 0) - (v < 0)


@lru_cache(maxsize=None)
def _classify_canonical(s2: int, s4: int, s6: int):
    """derive.landau.classify_transition on the canonical polynomial s₂δφ² + s₄φ⁴ + s₆φ⁶.

    Positive rescalings of F, δ and φ map a₂'δφ² + a₄φ⁴ + a₆φ⁶ onto this form (δ → δ|a₄|/|a₂'|·s⁻²,
    φ → φs with s² = |a₄/a₆|, F → F/|a₄|), and leave the order and the exponent unchanged, so the
    classification depends on the three signs only (and is cached).
    """
    from attnphase.derive.landau import classify_transition

    delta = sympy.Symbol("delta", real=True)
    result = classify_transition(s2 * delta * _phi**2 + s4 * _phi**4 + s6 * _phi**6, _phi, delta)
    exponent = float(result.exponent) if result.exponent is not None else None
    return result.order, exponent, result.message


def _remainder_at_origin(n_, L, V, conv):
    from scipy.optimize import brentq

    ker = linear_kernels(conv.remainder, conv.centred)
    p = linear_parameters(n_, L, V, conv)
    r0 = brentq(lambda r: float(ker.grad(0.0, 0.0, r, *p)[..., 2]), -200, 50)
    return math.exp(r0)


def _first_attempt_state(n_, L, V, conv):
    """r₀ = ln(q₀) of the first-attempt action at m = 0 (its own minimum) and the curvature in m there."""
    from scipy.optimize import brentq

    ker = first_attempt_kernels()
    p = first_attempt_parameters(n_, L, V, conv)
    r0 = brentq(lambda r: float(ker.grad(0.0, r, *p)[..., 1]), -300, 60)
    return r0, float(ker.hess(0.0, r0, *p)[..., 0, 0])


@lru_cache(maxsize=None)
def first_attempt_landau_kernel():
    from attnphase.derive.landau import landau_expansion

    r0 = sympy.Symbol("r0", real=True)
    F = model.first_attempt_action().subs(model.q, model.m**2 + sympy.exp(r0))
    exp = landau_expansion(F, model.m, 0, 6)
    outs = [sympy.diff(exp.coefficient(2), model.n), exp.coefficient(4), exp.coefficient(6)]
    return compile_kernel(outs, [r0] + _FIRST_PARAMS)


def first_attempt_transition(L, V, conv=model.DEFAULT, digits=30) -> TransitionResult:
    """Spec §2 first attempt (only m and q, i.i.d. G with its entropy, no all-ones mode): the overlap m
    becomes nonzero where its curvature at m = 0 (q at its own minimum) vanishes; classified by
    derive.landau along m with q frozen at the critical point."""
    from attnphase.numeric.threshold import find_crossing

    ker = first_attempt_kernels()
    dps = digits + 15 + int(3 * math.log10(L))

    def curv(n_):
        return _first_attempt_state(n_, L, V, conv)[1]

    def curv_mp(n_):
        r0, _ = _first_attempt_state(float(n_), L, V, conv)
        p = _mp_params(first_attempt_parameters(n_, L, V, conv))
        r_mp = mpmath.findroot(lambda r: ker.grad_mp(mpmath.mpf(0), r, *p)[1], mpmath.mpf(r0))
        return _entry(ker.hess_mp(mpmath.mpf(0), r_mp, *p), 0, 0)

    grid = np.linspace(math.log(1e-2), math.log(1e14 + 1e4 * (L * L + V * V)), 200)
    vals = np.array([curv(math.exp(v)) for v in grid])
    change = np.nonzero(np.sign(vals[:-1]) != np.sign(vals[1:]))[0]
    if not len(change):
        return TransitionResult("linear", L, V, "none", math.nan, "", math.nan, math.nan, status="not_found",
                                message="the curvature of m at m = 0 never vanishes in the range scanned")
    with mpmath.workdps(dps):
        res = find_crossing(lambda s_: curv(math.exp(s_)), grid[change[0]], grid[change[0] + 1], digits=digits + 2,
                            f_mp=lambda s_: curv_mp(mpmath.exp(s_)), n_scan=4)
        n_mp = mpmath.exp(res.value_mp)
        P_digits = mpmath.nstr(conv.P_of_n(n_mp, L), digits)
    n_star = math.exp(res.value)
    r0, _ = _first_attempt_state(n_star, L, V, conv)
    a2s, a4, a6 = (float(v) for v in first_attempt_landau_kernel()(r0, *first_attempt_parameters(n_star, L, V, conv)))
    order, exponent, message = _classify_canonical(_sign(a2s), _sign(a4), _sign(a6))
    return TransitionResult("linear", L, V, order, conv.P_of_n(n_star, L), P_digits, conv.P_of_n(n_star, L) * res.error,
                            n_star, exponent=exponent, landau_a4=a4, soft_mode="copy (m)", status=res.status,
                            message="first attempt (spec §2): " + message)


def threshold(attention: str, L: int, V: int, digits: int = 30, convention: model.Convention = model.DEFAULT,
              classify: bool = True, reduction: str = "convention-a") -> TransitionResult:
    """P* (and the crossover for linear attention) to `digits` significant digits.

    The softmax order is always found (by counting minima); classify=False skips the Landau step of
    the linear classification (used inside sweeps, where the end points are classified).
    """
    attention, L, V = _check_common(attention, L, V, convention)
    digits = check_int("digits", digits, 1, 100)
    reduction = check_choice("reduction", reduction, REDUCTIONS)
    overflow = "" if convention.boundary == "causal" else _action_overflow(attention, L, V, convention)
    if overflow:
        # a scan over non-finite curvatures would find no sign change and report "no transition"
        return TransitionResult(attention, L, V, "undetermined", math.nan, "", math.nan, math.nan, status="failed",
                                message=overflow)
    if convention.boundary == "causal":
        if reduction == "first-attempt":
            raise ParameterError("reduction", reduction, "'convention-a' with boundary 'causal'")
        if attention == "softmax":
            return causal_softmax_transition(L, V, convention, digits)
        return causal_linear_transition(L, V, convention, digits, classify)
    if attention == "softmax":
        return softmax_transition(L, V, convention, digits)
    if reduction == "first-attempt":
        return first_attempt_transition(L, V, convention, digits)
    return linear_transition(L, V, convention, digits, classify)


def _action_overflow(attention, L, V, conv) -> str:
    """Why the float64 action cannot be scanned at these parameters ("" when it can).

    Softmax: S' on the x grid at the natural scale of n; linear: the Hessian at the symmetric
    state at both ends of the n scan (remainder at ρ = 1 for "entropy"). Extreme τ, σ² or β make these
    overflow (e.g. τ = 1e300), and the scans would then see no sign change at all.
    """
    with np.errstate(all="ignore"):
        if attention == "softmax":
            ker = softmax_kernels()
            n_ = _n_scale_softmax(L, V, conv)
            p = softmax_parameters(n_, L, V, conv)
            xs = _softmax_grid(L, conv)
            # S' only: the minima are its sign changes (bisection works without S'', which overflows at
            # L ~ 2^256 while the scan and the mpmath polish still work)
            values = [ker.grad(xs, *p)]
        else:
            ker = linear_kernels(conv.remainder, conv.centred)
            zero = [0.0, 0.0] + ([0.0] if conv.remainder == "entropy" else [])
            scale = V * V + L**1.5 * V**0.5 + L * V
            values = [ker.hess(*zero, *linear_parameters(n_, L, V, conv)) for n_ in (1e-3, scale * 1e6)]
    if all(np.all(np.isfinite(np.asarray(v, float))) for v in values):
        return ""
    return (f"the reduced {attention} action overflows float64 at these parameters (L = {L}, V = {V}, tau = {conv.tau(V):g}, "
            f"sigma2 = {conv.sigma2:g}, beta = {conv.beta:g}): threshold not computed")


# -- causal mask: linear attention (row-resolved Convention A) -----------------------------------------
# models.copy_heads.causal_linear_action: the action depends on the T row sums t_l (rows l = 2..L) through
# Q_t = Σ t_l²/l, M_t = Σ t_l/l, T1 = Σ t_l, T2 = Σ t_l² and on the shared copy strength c. The kernels give
# S, its gradient and Hessian in these five collective variables; the chain rule maps them to (t, c).
_CAUSAL_COLLECTIVE = (model.sum_t2_l, model.sum_t_l, model.sum_t, model.sum_t2, model.c)
_CAUSAL_PARAMS = [model.n, model.V, model.T, model.harmonic, model.tau, model.lam_a, model.w_b, model.ld]
# remainder-entropy convention: the entropy weight D_r joins the parameters; ρ = e^r is a variable of the
# action (solve) or, at the symmetric point, a parameter at its own minimum ρ₀(n) (stability, Landau)
_CAUSAL_RHO_PARAMS = _CAUSAL_PARAMS + [model.dim_r]


def _entropy(conv: model.Convention) -> bool:
    return conv.remainder == "entropy"


@lru_cache(maxsize=None)
def causal_linear_kernels(centred: bool = False, remainder: bool = False) -> _Kernels:
    if not remainder:
        return _compile(model.causal_linear_action(centred), _CAUSAL_COLLECTIVE, _CAUSAL_PARAMS)
    expr = model.causal_linear_action(centred, remainder=True).subs(model.rho, sympy.exp(_r))
    return _compile(expr, _CAUSAL_COLLECTIVE + (_r,), _CAUSAL_RHO_PARAMS)


@lru_cache(maxsize=None)
def causal_stability_kernels(centred: bool = False, remainder: bool = False):
    """(λ, μ) of the row curvatures d_l = λ/l + μ, and the 3×3 stability matrix K (float64 and mpmath).
    remainder=True: both take ρ (the remainder at the symmetric point) as their last argument."""
    lam_mu = list(model.causal_row_curvatures(centred, remainder))
    K = model.causal_stability_matrix(centred, remainder)
    params = _CAUSAL_PARAMS + ([model.dim_r, model.rho] if remainder else [])
    args = list(model.causal_gram) + params
    return (compile_kernel(lam_mu, params), compile_kernel(lam_mu, params, backend="mpmath"),
            compile_kernel(K, args), compile_kernel(K, args, backend="mpmath"))


def _row_resolved(conv: model.Convention) -> bool:
    """One row sum per target row: always under the causal mask, on request (`row_sums="per-row"`) otherwise."""
    return conv.boundary == "causal" or conv.row_sums == "per-row"


def row_lengths(L: int, conv: model.Convention) -> np.ndarray:
    """Positions each target row attends to: l = 2..L under the causal mask, L for each of the T rows otherwise."""
    if conv.boundary == "causal":
        return np.arange(2, L + 1, dtype=float)
    return np.full(conv.targets(L), float(L))


def causal_linear_parameters(n, L, V, conv: model.Convention) -> list:
    """[n, V, T, H, τ, λ_a, w_b, ld] (+ [D_r] for the remainder-entropy convention) of the row-resolved linear action,
    H = Σ_rows 1/l and w_b = 1/(Σ_rows l + σ²/s₁) over the target rows: G = κ(A + b)·mask on the rows l = 2..L (causal
    mask, D = L(L−1)/2 − 1), or G = κ(A + b11ᵀ) with every target row of length L (`row_sums="per-row"`: H = T/L,
    w_b = 1/(TL + σ²/s₁), D = T(L − 1) − 1 zero-row-sum directions less the shared copy direction)."""
    causal = conv.boundary == "causal"
    T_ = conv.targets(L)
    sum_l = L * (L + 1) / 2 - 1 if causal else T_ * L
    w = 1.0 / (sum_l + conv.sigma2 / conv.s1) if conv.bias else 0.0
    if causal:
        H = model.causal_row_uniform_weight(L) if L <= 2**16 else _harmonic_tail(L)
    else:
        H = T_ / L
    p = [n, V, float(T_), H, conv.tau(V), 1.0 / (conv.kappa(L) ** 2 * conv.sigma2), w, conv.log_det_weight]
    if _entropy(conv):
        D = model.causal_remainder_dimension(L) if causal else T_ * (L - 1) - 1
        p.append((D - 2) / 2)
    return p


@lru_cache(maxsize=None)
def _causal_remainder_quadratic():
    """Coefficients (a₂, a₁, a₀) of ρ(1 + τnρ/V)·∂S/∂ρ = a₂ρ² + a₁ρ + a₀ at the symmetric point
    (models.causal_remainder_stationarity; a₂ > 0 > a₀, so exactly one positive root)."""
    expr = sympy.expand(model.causal_remainder_stationarity() * model.rho * (1 + model.tau * model.n * model.rho / model.V))
    expr = sympy.expand(sympy.cancel(expr))
    coeffs = [expr.coeff(model.rho, k) for k in (2, 1, 0)]
    assert sympy.simplify(expr - sum(cf * model.rho**k for cf, k in zip(coeffs, (2, 1, 0)))) == 0
    return compile_kernel(coeffs, _CAUSAL_RHO_PARAMS), compile_kernel(coeffs, _CAUSAL_RHO_PARAMS, backend="mpmath")


def causal_remainder_at_origin(p, mp=False):
    """ρ₀: the positive root of a₂ρ² + a₁ρ + a₀ (parameters p = causal_linear_parameters, arrays allowed),
    in the cancellation-free form (2|a₀|/(b + √disc) when b = a₁/a₂ > 0)."""
    ker, ker_mp = _causal_remainder_quadratic()
    if mp:
        a2, a1, a0 = ker_mp(*_mp_params(p))
        b, c0 = a1 / a2, a0 / a2
        root = mpmath.sqrt(b * b - 4 * c0)
        return -2 * c0 / (b + root) if b > 0 else (root - b) / 2
    a2, a1, a0 = np.moveaxis(np.asarray(ker(*p), float), -1, 0)
    b, c0 = a1 / a2, a0 / a2
    root = np.sqrt(b * b - 4 * c0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, -2 * c0 / (b + root), (root - b) / 2)


def _harmonic_tail(L, mp=False):
    """Σ_{l=2}^{L} 1/l = ψ(L + 1) − ψ(2)."""
    if mp:
        return mpmath.digamma(L + 1) - mpmath.digamma(2)
    from scipy.special import digamma

    return float(digamma(L + 1.0) - digamma(2.0))


def _causal_gram(lam, mu, L, H, mp=False):
    """Σ_a = Σ 1/(l(λ + μl)), Σ_b = Σ 1/(λ + μl), Σ_c = Σ l/(λ + μl) over l = 2..L.

    Direct sums in float64 up to L = 4096; beyond, digamma differences Σ_b = (ψ(L + 1 + z) − ψ(2 + z))/μ,
    z = λ/μ, in mpmath: at the threshold z ~ L³ ≫ L, so the difference and Σ_c = (T − λΣ_b)/μ cancel about
    2·log10(z) digits, which the working precision is raised by (float64 would return noise)."""
    T_ = L - 1
    if mp:
        if mu == 0:
            return H / lam, T_ / lam, (mpmath.mpf(L) * (L + 1) / 2 - 1) / lam
        extra = 2 * int(abs(mpmath.log10(lam / mu))) + 10
        with mpmath.workdps(mpmath.mp.dps + extra):
            z = lam / mu  # at the raised precision: its rounding error is amplified z-fold in Σ_c
            Sb = (mpmath.digamma(L + 1 + z) - mpmath.digamma(2 + z)) / mu
            out = ((H - mu * Sb) / lam, Sb, (T_ - lam * Sb) / mu)
        return tuple(+v for v in out)  # rounded back to the working precision
    lam, mu = np.asarray(lam, float), np.asarray(mu, float)
    if L <= 4096:
        ls = np.arange(2, L + 1, dtype=float)
        den = lam[..., None] + mu[..., None] * ls
        return (1 / (ls * den)).sum(-1), (1 / den).sum(-1), (ls / den).sum(-1)
    out = np.empty((3,) + lam.shape)
    with mpmath.workdps(20):
        for idx in np.ndindex(lam.shape):
            out[(slice(None),) + idx] = [float(v) for v in _causal_gram(mpmath.mpf(float(lam[idx])), mpmath.mpf(float(mu[idx])),
                                                                         L, mpmath.mpf(float(H)), mp=True)]
    return out[0], out[1], out[2]


def _causal_origin_parameters(n_, L, V, conv, mp=False) -> list:
    """Parameters of the stability kernels at n: causal_linear_parameters, plus ρ₀(n) for the
    remainder-entropy convention."""
    p = causal_linear_parameters(n_, L, V, conv)
    if mp:
        p = _mp_params(p)
        if L > 2**16:
            p[3] = _harmonic_tail(L, mp=True)
    if _entropy(conv):
        p = p + [causal_remainder_at_origin(p, mp)]
    return p


def _causal_K(n_, L, V, conv, mp=False):
    """The stability matrix K (models.causal_stability_matrix) at n (array in float64, scalar in mpmath)."""
    lm, lm_mp, K, K_mp = causal_stability_kernels(conv.centred, _entropy(conv))
    p = _causal_origin_parameters(n_, L, V, conv, mp)
    if mp:
        lam, mu = lm_mp(*p)
        return K_mp(*_causal_gram(lam, mu, L, p[3], mp=True), *p)
    lam_mu = np.asarray(lm(*p), float)
    gram = _causal_gram(lam_mu[..., 0], lam_mu[..., 1], L, p[3])
    return np.asarray(K(*gram, *p), float)


def _normalised_min_eigenvalue(K, mp=False):
    """Smallest eigenvalue of D^{-1/2} K D^{-1/2}, D = diag|K| (Sylvester: same inertia as K, scale-free)."""
    if mp:
        d = [mpmath.sqrt(abs(K[i, i])) for i in range(3)]
        Kn = mpmath.matrix(3, 3)
        for i in range(3):
            for j in range(3):
                Kn[i, j] = K[i, j] / (d[i] * d[j])
        return min(mpmath.eigsy(Kn)[0])
    d = np.sqrt(np.abs(np.diagonal(K, axis1=-2, axis2=-1)))
    return np.linalg.eigvalsh(K / (d[..., :, None] * d[..., None, :]))[..., 0]


def causal_row_profile(y, n_, L, V, conv):
    """Row sums t_l (l = 2..L) that realise the collective soft vector y = (M_t, T1) at least cost:
    t_l = (α/l + β)/d_l, (α, β) = Σ⁻¹ y, d_l = λ/l + μ (see models.causal_stability_matrix)."""
    lm = causal_stability_kernels(conv.centred, _entropy(conv))[0]
    p = _causal_origin_parameters(n_, L, V, conv)
    lam, mu = (float(v) for v in np.asarray(lm(*p), float))
    ls = np.arange(2, L + 1, dtype=float)
    d = lam / ls + mu
    A = np.stack([1 / ls, np.ones_like(ls)])
    gram = (A / d) @ A.T
    alpha, beta = np.linalg.solve(gram, np.asarray(y[:2], float))
    return (alpha / ls + beta) / d


@lru_cache(maxsize=None)
def causal_landau_kernel(centred: bool = False, remainder: bool = False):
    """(da₂/dn, a₂, a₄, a₆) of S along the direction φ·(t, c), given its collective sums (Q_v, M_v, T1_v, T2_v, c_v).

    remainder=True (ρ the last argument, at its minimum ρ₀(n) at φ = 0): the remainder relaxes along the
    soft direction, S = S₀ + a₂φ² + a₄φ⁴ + b φ²δρ + ½S_ρρ δρ² + ..., b = ∂a₂/∂ρ, so minimising over δρ gives
    the effective quartic a₄ − b²/(2S_ρρ) (freezing ρ would miss this negative, first-order-favouring
    term); da₂/dn is the total derivative along ρ₀(n), ∂a₂/∂n − b ∂²S/∂ρ∂n / S_ρρ. a₆ is the frozen-ρ one (it
    decides only when the effective a₄ vanishes)."""
    from attnphase.derive.landau import landau_expansion

    direction = sympy.symbols("Q_v M_v T1_v T2_v c_v", real=True)
    Qv, Mv, T1v, T2v, cv = direction
    S = model.causal_linear_action(centred, remainder)
    F = S.subs({model.sum_t2_l: _phi**2 * Qv, model.sum_t_l: _phi * Mv, model.sum_t: _phi * T1v,
                model.sum_t2: _phi**2 * T2v, model.c: _phi * cv})
    exp = landau_expansion(F, _phi, 0, 6)
    a2, a4, a6 = exp.coefficient(2), exp.coefficient(4), exp.coefficient(6)
    if not remainder:
        return compile_kernel([sympy.diff(a2, model.n), a2, a4, a6], list(direction) + _CAUSAL_PARAMS)
    S0 = S.subs({v: 0 for v in _CAUSAL_COLLECTIVE})  # the symmetric point t_l = c = 0
    s_rr, s_rn = sympy.diff(S0, model.rho, 2), sympy.diff(S0, model.rho, model.n)
    b = sympy.diff(a2, model.rho)
    outs = [sympy.diff(a2, model.n) - b * s_rn / s_rr, a2, a4 - b**2 / (2 * s_rr), a6]
    return compile_kernel(outs, list(direction) + _CAUSAL_RHO_PARAMS + [model.rho])


def causal_linear_transition(L, V, conv=model.DEFAULT, digits=30, classify=True) -> TransitionResult:
    """Masked linear attention: first n where the symmetric point t_l = c = 0 loses stability (the smallest
    eigenvalue of the normalised stability matrix K crosses zero; mpmath polish), the soft row profile,
    the Landau classification along it (derive.landau) and the crossover where the copy mode's own
    curvature K_cc vanishes."""
    dps = digits + 15 + int(3 * math.log10(L))
    scale = V * V + L**1.5 * V**0.5 + L * V
    lo, hi = 1e-3, scale * 1e6

    def values(ln_n):
        return _normalised_min_eigenvalue(_causal_K(np.exp(ln_n), L, V, conv))

    f = lambda n_: float(values(np.array([math.log(n_)]))[0])  # noqa: E731
    f_mp = lambda n_: _normalised_min_eigenvalue(_causal_K(n_, L, V, conv, mp=True), mp=True)  # noqa: E731
    with mpmath.workdps(dps):
        res = _log_crossing(f, f_mp, lo, hi, digits, values)
    if not math.isfinite(res.value):
        return TransitionResult("linear", L, V, "none", math.nan, "", math.nan, math.nan, status="not_found", message=res.message)
    n_star = math.exp(res.value)
    K = _causal_K(np.array([n_star * (1 + 1e-9)]), L, V, conv)[0]
    d = np.sqrt(np.abs(np.diag(K)))
    vecs = np.linalg.eigh(K / np.outer(d, d))[1]
    y = vecs[:, 0] / d
    t_rows = causal_row_profile(y, n_star, L, V, conv)
    ls = np.arange(2, L + 1, dtype=float)
    spread = (L - 1) - float(causal_linear_parameters(n_star, L, V, conv)[3])
    rho_star = float(_causal_origin_parameters(n_star, L, V, conv)[-1]) if _entropy(conv) else 0.0
    uniform_norm2, copy_norm2 = float((t_rows**2 / ls).sum()), y[2] ** 2 * spread
    soft_mode = "uniform" if uniform_norm2 >= copy_norm2 else "copy"

    def curvature(K_):  # the other mode's own curvature: K_cc (copy) or the t-block's smallest eigenvalue
        if soft_mode == "uniform":
            return K_[..., 2, 2]
        return np.linalg.eigvalsh(K_[..., :2, :2])[..., 0]

    def curvature_mp(n_):
        K_ = _causal_K(n_, L, V, conv, mp=True)
        if soft_mode == "uniform":
            return K_[2, 2]
        return min(mpmath.eigsy(mpmath.matrix([[K_[0, 0], K_[0, 1]], [K_[1, 0], K_[1, 1]]]))[0])

    cvals = lambda ln_n: curvature(_causal_K(np.exp(ln_n), L, V, conv))  # noqa: E731
    with mpmath.workdps(dps):
        cross = _log_crossing(lambda n_: float(cvals(np.array([math.log(n_)]))[0]), curvature_mp, lo, hi, digits, cvals)
        P_digits = mpmath.nstr(conv.P_of_n(mpmath.exp(res.value_mp), L), digits)
        Pc_digits = mpmath.nstr(conv.P_of_n(mpmath.exp(cross.value_mp), L), digits) if math.isfinite(cross.value) else None
    land = {"order": "not classified", "message": ""}
    if classify:
        direction = [uniform_norm2, float((t_rows / ls).sum()), float(t_rows.sum()), float((t_rows**2).sum()), float(y[2])]
        p = _causal_origin_parameters(n_star, L, V, conv)
        a2s, a2, a4, a6 = (float(v) for v in causal_landau_kernel(conv.centred, _entropy(conv))(*direction, *p))
        order, exponent, message = _classify_canonical(_sign(a2s), _sign(a4), _sign(a6))
        land = {"order": order, "exponent": exponent, "a4": a4, "message": message}
    P_cross = conv.P_of_n(math.exp(cross.value), L) if math.isfinite(cross.value) else None
    return TransitionResult(
        "linear", L, V, land["order"], conv.P_of_n(n_star, L), P_digits, conv.P_of_n(n_star, L) * res.error, n_star,
        exponent=land.get("exponent"), landau_a4=land.get("a4"), P_crossover=P_cross, P_crossover_digits=Pc_digits,
        soft_mode=soft_mode, status=res.status,
        message=f"causal mask: symmetric point loses stability along the {soft_mode} mode; " + land.get("message", ""),
        details={"soft_vector": {"M_t": float(y[0]), "T1": float(y[1]), "c": float(y[2])},
                 "soft_row_sums_first_last": [float(t_rows[0]), float(t_rows[-1])], "rho_at_P_star": rho_star},
    )


def _causal_collective(t_rows, ls):
    return np.array([(t_rows**2 / ls).sum(), (t_rows / ls).sum(), t_rows.sum(), (t_rows**2).sum()])


def causal_linear_action_of(t_rows, c_, n_, L, V, conv, r_=None) -> tuple[float, np.ndarray, np.ndarray]:
    """Action, gradient and Hessian of the causal linear action in (t_2..t_L, c) (chain rule from the
    collective kernels: ∂Q_t/∂t_l = 2t_l/l, ∂M_t/∂t_l = 1/l, ∂T1/∂t_l = 1, ∂T2/∂t_l = 2t_l); for the
    remainder-entropy convention in (t_2..t_L, c, r), ρ = e^r (r_ required). Also the row-resolved periodic and
    drop-first actions (`row_sums="per-row"`, every row of length L: `row_lengths`)."""
    entropy = _entropy(conv)
    ker = causal_linear_kernels(conv.centred, entropy)
    p = causal_linear_parameters(n_, L, V, conv)
    ls = row_lengths(L, conv)
    z = list(_causal_collective(t_rows, ls)) + [c_] + ([r_] if entropy else [])
    S = float(ker.action(*z, *p))
    gz = np.asarray(ker.grad(*z, *p), float)
    hz = np.asarray(ker.hess(*z, *p), float)
    T_ = len(ls)
    k = len(z) - 5  # 0 or 1 extra variable (r), mapped to itself
    J = np.zeros((5 + k, T_ + 1 + k))
    J[0, :T_], J[1, :T_], J[2, :T_], J[3, :T_], J[4, T_] = 2 * t_rows / ls, 1 / ls, 1.0, 2 * t_rows, 1.0
    if k:
        J[5, T_ + 1] = 1.0
    grad = J.T @ gz
    hess = J.T @ hz @ J
    hess[np.arange(T_), np.arange(T_)] += 2 * gz[0] / ls + 2 * gz[3]
    return S, grad, hess


def _causal_linear_minima(n_, L, V, conv):
    from scipy.optimize import minimize

    T_ = conv.targets(L)
    entropy = _entropy(conv)
    # remainder-entropy: start r at ln ρ₀(n), the remainder's minimum at the symmetric point
    r0 = [math.log(float(causal_remainder_at_origin(causal_linear_parameters(n_, L, V, conv))))] if entropy else []
    found, iters = [], 0
    for t0 in (0.0, 0.5, 1.0, 2.0):
        for c0 in (0.0, 0.1, 0.5, 1.0):
            x0 = np.r_[np.full(T_, t0), c0, r0]
            fun = lambda v: causal_linear_action_of(v[:T_], v[T_], n_, L, V, conv, *v[T_ + 1:])  # noqa: E731
            try:
                with np.errstate(all="ignore"):
                    res = minimize(lambda v: fun(v)[0], x0, jac=lambda v: fun(v)[1], hess=lambda v: fun(v)[2],
                                   method="trust-exact", options={"gtol": 1e-10, "maxiter": 500})
            except (ValueError, ArithmeticError, np.linalg.LinAlgError, UnboundLocalError):
                continue
            iters += res.nit
            if not (np.all(np.isfinite(res.x)) and np.isfinite(res.fun)):
                continue
            v = res.x.copy()
            if v[:T_].mean() < 0:  # (t, c) ↦ (−t, −c) symmetry (r unchanged)
                v[:T_ + 1] *= -1
            if not any(np.allclose(v, f_, atol=1e-6, rtol=1e-6) for f_ in found):
                found.append(v)
    return found, iters


@lru_cache(maxsize=None)
def causal_loss_kernels(centred: bool = False):
    args = [model.m, model.q, model.t, model.t2, model.n, model.V, model.tau]  # t: mean row sum t1
    return compile_kernel([model.mean_predictor_loss_rows(model.m, model.q, model.t, model.t2, centred),
                           model.gibbs_loss_rows(model.m, model.q, model.t, model.t2, centred)], args)


def causal_solve(attention, L, V, P, conv) -> SolveResult:
    """`solve` under the causal mask. Linear: minima of the row-resolved action over (t_2..t_L, c) (L ≤ 1024,
    a dense (L × L) Hessian per Newton step); c_uniform = mean row sum. Softmax: minima of the row
    mean-field free energy F(m) (each row its own Cramér function; `softmax_row_mean_field`)."""
    n_ = conv.n_of_P(P, L)
    tau_ = conv.tau(V)
    lossk = causal_loss_kernels(conv.centred)
    minima = []
    if attention == "softmax":
        r = softmax_row_mean_field(L, V, P, conv)
        for mn in r.minima:
            losses = lossk(mn["m"], mn["q"], 1.0, 1.0, n_, V, tau_)
            minima.append(Minimum(1.0, mn["c"], mn["free_energy"], True, mn["m"], 0.0, [], float(losses[0]), float(losses[1])))
        iters = r.n_grid**2  # grid evaluations of F̃
    else:
        if L > 1024:
            raise ParameterError("L", L, "at most 1024 for solve with boundary 'causal' (one row sum per row)")
        found, iters = _causal_linear_minima(n_, L, V, conv)
        ls = np.arange(2, L + 1, dtype=float)
        T_ = L - 1
        spread = T_ - model.causal_row_uniform_weight(L)
        for v in found:
            t_rows, c_ = v[:T_], float(v[T_])
            S, _, hess = causal_linear_action_of(t_rows, c_, n_, L, V, conv, *v[T_ + 1:])
            eig = np.linalg.eigvalsh(hess)
            Qt, Mt, T1, T2 = _causal_collective(t_rows, ls)
            rho_ = math.exp(v[T_ + 1]) if len(v) > T_ + 1 else 0.0
            m_, q_ = (Mt + c_ * spread) / T_, (Qt + c_**2 * spread) / T_ + rho_
            losses = lossk(m_, q_, T1 / T_, T2 / T_, n_, V, tau_)
            minima.append(Minimum(float(T1 / T_), c_, S, bool(eig[0] > 0), m_, rho_, eig[:3].tolist(), float(losses[0]),
                                  float(losses[1])))
    minima = [mn for mn in minima if _all_finite(mn)]
    stable = [i for i, mn in enumerate(minima) if mn.stable]
    if not stable:
        return SolveResult(attention, L, V, P, n_, minima, None, "failed", "no stable minimum resolved", iters, math.nan)
    g = min(stable, key=lambda i: minima[i].action)
    return SolveResult(attention, L, V, P, n_, minima, g, "converged", f"causal mask: {len(stable)} stable minimum/minima",
                       iters, 0.0)


# -- scaling laws ------------------------------------------------------------------------------------
# (attention, threshold, variable) -> (claimed exponent, log power of the claimed law, law in words)
CLAIMED_LAWS = {
    ("softmax", "P_star", "L"): (1.0, 2.0, "P* ~ L ln^2 L"),
    ("linear", "P_star", "L"): (0.0, 0.0, "P* ~ V^2 (no L dependence)"),
    ("linear", "P_crossover", "L"): (1.5, 0.0, "P_crossover ~ L^(3/2) V^(1/2)"),
    ("softmax", "P_star", "V"): (None, 0.0, "P* ~ L ln^2 L (no V dependence claimed)"),
    ("linear", "P_star", "V"): (2.0, 0.0, "P* ~ V^2"),
    ("linear", "P_crossover", "V"): (0.5, 0.0, "P_crossover ~ L^(3/2) V^(1/2)"),
}


@dataclass
class LawFit:
    """Fit of one threshold against one claimed law over one variable.

    exponent [exponent_low, exponent_high]: least-squares log-log slope of y/(ln x)^log_power over the
    upper half of the points (at least 4; the asymptotic part) with its 95% band; systematic:
    |exponent − local slope of the last two points| (how much the slope still drifts); holds: the claimed exponent
    lies within band ± systematic; durbin_watson < ~1 flags smooth residuals (curvature).
    """

    law: str
    variable: str
    threshold: str
    claimed_exponent: float | None
    log_power: float
    exponent: float
    exponent_low: float
    exponent_high: float
    systematic: float
    local_slope: float
    durbin_watson: float
    n: int
    holds: bool | None


@dataclass
class ScalingResult:
    attention: str
    variable: str
    fixed: dict
    points: list
    fits: dict
    extrapolation: dict | None
    status: str
    message: str


def _law_fit(xs, ys, attention, which, variable) -> LawFit:
    from attnphase.numeric.scaling import fit_power_law

    claimed, log_power, words = CLAIMED_LAWS[(attention, which, variable)]
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    ok = np.isfinite(ys) & (ys > 0)
    xs, ys = xs[ok], ys[ok]
    half = min(len(xs), max(4, (len(xs) + 1) // 2))
    fit = fit_power_law(xs[-half:], ys[-half:], log_power=log_power)
    lx = np.log(xs[-2:])
    ly = np.log(ys[-2:] / np.log(xs[-2:]) ** log_power) if log_power else np.log(ys[-2:])
    local = float((ly[1] - ly[0]) / (lx[1] - lx[0]))
    syst = abs(local - fit.exponent)
    holds = None if claimed is None else bool(fit.exponent_low - syst <= claimed <= fit.exponent_high + syst)
    return LawFit(words, variable, which, claimed, log_power, fit.exponent, fit.exponent_low, fit.exponent_high,
                  syst, local, fit.durbin_watson, int(fit.n), holds)


def softmax_large_L_correction(L, V, conv=model.DEFAULT) -> float:
    """Large-L form of the softmax coexistence point, n* ≈ T ℓ²/(4εσ²) · C(ℓ), ℓ = ln L.

    Derivation (shortcut row rate, u ≫ 1): on the copy branch a² ≫ k/L, so the fit gain is
    (εn/2)ρ with ρ = m²/q = 1/(1 + e^{−2y}), s = ℓ/2 + σ² + y the previous-position score. Stationarity
    T s/σ² = εn dρ/dy gives e^{−2y} = 2/ℓ; equating the two branches, T s²/(2σ²) = (εn/2)(1 − 2/ℓ), so
    C(ℓ) = 1 + (2 ln ℓ + 4σ² + 2 − 2 ln 2)/ℓ + O(ln²ℓ/ℓ²).
    """
    ell = math.log(L)
    return 1 + (2 * math.log(ell) + 4 * conv.sigma2 + 2 - 2 * math.log(2)) / ell


def softmax_ratio_extrapolation(Ls, P_stars, V, conv=model.DEFAULT) -> dict:
    """Does n*/(T ln²L) tend to a constant? Compared with the large-L analysis.

    R(L) = n*/(T ℓ²); R∞ = 1/(4εσ²) is the predicted limit. The corrected ratio R/(R∞ C(ℓ)) must tend
    to 1 with a remainder O(ln²ℓ/ℓ²); `corrected_slope` is its log-log slope against L over the
    points given (band from numeric.scaling), which must be ≈ 0.
    """
    from attnphase.numeric.scaling import fit_power_law

    Ls = [int(v) for v in Ls]
    eps_ = 1 - 1 / V
    R_inf = 1 / (4 * eps_ * conv.sigma2)
    R = np.array([conv.n_of_P(p, L) / (conv.targets(L) * math.log(L) ** 2) for p, L in zip(P_stars, Ls)])
    corrected = R / (R_inf * np.array([softmax_large_L_correction(L, V, conv) for L in Ls]))
    remainder_scale = np.array([math.log(math.log(L)) ** 2 / math.log(L) ** 2 for L in Ls])
    out = {"R_inf_predicted": R_inf, "ratio": R.tolist(), "corrected_ratio": corrected.tolist(),
           "remainder_over_ln2ell_over_ell2": ((corrected - 1) / remainder_scale).tolist()}
    if len(Ls) >= 3:
        fit = fit_power_law(np.array(Ls, float), corrected)
        out.update({"corrected_slope": fit.exponent, "corrected_slope_low": fit.exponent_low,
                    "corrected_slope_high": fit.exponent_high})
    return out


def default_L_values(L_min, L_max):
    L_min = check_int("L_min", L_min, 2, None)
    L_max = check_int("L_max", L_max, L_min, 2**24)
    Ls = {L_min, L_max}
    k = 1
    while 2**k <= L_max:
        if 2**k > L_min:
            Ls.add(2**k)
        k += 1
    return sorted(Ls)


def scaling(attention: str, V: int, L_min: int, L_max: int, digits: int = 15,
            convention: model.Convention = model.DEFAULT, L_values=None) -> ScalingResult:
    """P* (and the crossover) at L = L_min, 2^k in between, L_max; fits against each claimed law."""
    attention = check_choice("attention", attention, ATTENTIONS)
    V = check_int("V", V, 2, None)
    if attention == "softmax" and convention.boundary == "causal":
        raise ParameterError("boundary", "causal", "'periodic' or 'drop-first' for softmax scaling: under the causal mask "
                                                   "the row mean field has no first-order transition at L = 8...256, so there is no P* to fit")
    if L_values is not None:
        Ls = sorted({check_int("L_values", v, 2, None) for v in L_values})
        if len(Ls) < 3:
            raise ParameterError("L_values", L_values, "at least 3 distinct integers >= 2 (a fit has 2 parameters)")
    else:
        Ls = default_L_values(L_min, L_max)
        if len(Ls) < 3:
            raise ParameterError("L_max", L_max, f"large enough that L_min, the powers of 2 in between and L_max give at "
                                                 f"least 3 values of L (a fit has 2 parameters); L_min = {L_min}, e.g. "
                                                 f"L_max >= {2 * 2 ** math.ceil(math.log2(Ls[0] + 1))}")
    points, fits = [], {}
    for i, L in enumerate(Ls):
        tr = threshold(attention, L, V, digits, convention, classify=i in (0, len(Ls) - 1))
        pt = {"L": L, "P_star": tr.P_star, "P_star_digits": tr.P_star_digits, "order": tr.order}
        if attention == "linear":
            pt["P_crossover"] = tr.P_crossover
        points.append(pt)
    xs = [p["L"] for p in points]
    fits["P_star"] = _law_fit(xs, [p["P_star"] for p in points], attention, "P_star", "L")
    extrap = None
    if attention == "linear":
        fits["P_crossover"] = _law_fit(xs, [p["P_crossover"] or math.nan for p in points], attention, "P_crossover", "L")
    else:
        extrap = softmax_ratio_extrapolation(xs, [p["P_star"] for p in points], V, convention)
    return ScalingResult(attention, "L", {"V": V}, points, fits, extrap, "converged", f"{len(points)} values of L")


def scaling_in_V(attention: str, L: int, V_values, digits: int = 15, convention: model.Convention = model.DEFAULT) -> ScalingResult:
    """P* (and the crossover) against V at fixed L, fitted against the claimed V laws."""
    attention = check_choice("attention", attention, ATTENTIONS)
    L = check_int("L", L, 2, None)
    Vs = sorted({check_int("V_values", v, 2, None) for v in V_values})
    if len(Vs) < 3:
        raise ParameterError("V_values", V_values, "at least 3 distinct integers >= 2 (a fit has 2 parameters)")
    points = []
    for i, V in enumerate(Vs):
        tr = threshold(attention, L, V, digits, convention, classify=i in (0, len(Vs) - 1))
        points.append({"V": V, "P_star": tr.P_star, "P_crossover": tr.P_crossover, "order": tr.order})
    fits = {"P_star": _law_fit(Vs, [p["P_star"] for p in points], attention, "P_star", "V")}
    if attention == "linear":
        fits["P_crossover"] = _law_fit(Vs, [p["P_crossover"] or math.nan for p in points], attention, "P_crossover", "V")
    return ScalingResult(attention, "V", {"L": L}, points, fits, None, "converged", f"{len(points)} values of V")


NAMED_CONVENTIONS = {
    "A (default)": model.DEFAULT,
    "no 1/L scale (kappa=1)": model.DEFAULT.with_(linear_scale="1"),
    "kappa=1/sqrt(L)": model.DEFAULT.with_(linear_scale="1/sqrt(L)"),
    "no bias": model.DEFAULT.with_(bias=False),
    "tau=1/V": model.DEFAULT.with_(tau_scale="inverse-V"),
    "entropy of the remainder": model.DEFAULT.with_(remainder="entropy"),
    "drop-first boundary": model.DEFAULT.with_(boundary="drop-first"),
    "causal mask": model.DEFAULT.with_(boundary="causal"),
    "causal mask, remainder entropy": model.DEFAULT.with_(boundary="causal", remainder="entropy"),
    "P counts sequences": model.DEFAULT.with_(P_counts="sequences"),
    "P counts sequences, loss averaged": model.DEFAULT.with_(P_counts="sequences", loss="averaged"),
    "centred tokens": model.DEFAULT.with_(tokens="centred"),
}
# the softmax action does not contain the linear-attention choices, and centring the inputs shifts its
# features by the constant 1/V·1 (rows sum to 1): the action changes by a constant
_SOFTMAX_BLIND = {"linear_scale", "bias", "remainder", "tokens"}


def convention_table(L_values=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096), V_values=(4, 8, 16, 32, 64),
                     V_fixed=4, L_fixed=1024, conventions=None) -> list[dict]:
    """For each convention: the fitted exponents of every claimed law and whether the claim holds."""
    rows = []
    for name, conv in (conventions or NAMED_CONVENTIONS).items():
        row = {"convention": name}
        changed = {f for f in _SOFTMAX_BLIND if getattr(conv, f) != getattr(model.DEFAULT, f)}
        for attention in ATTENTIONS:
            if attention == "softmax" and changed and changed <= _SOFTMAX_BLIND and conv.boundary == model.DEFAULT.boundary:
                row["softmax"] = "same as default (softmax does not depend on this choice)"
                continue
            if attention == "softmax" and conv.boundary == "causal":
                # P* under the mask comes from the row mean field (L <= 256), not from a scan up to 4096
                row["softmax"] = ("no scaling fit: row mean field (causal_softmax_transition) computable for L <= 256; "
                                  "it finds a continuous onset (order 'none') at L = 8...256 (V = 4)")
                continue
            sL = scaling(attention, V_fixed, min(L_values), max(L_values), convention=conv, L_values=L_values)
            entry = {f"{k} vs L": v for k, v in sL.fits.items()}
            if attention == "linear":
                sV = scaling_in_V(attention, L_fixed, V_values, convention=conv)
                entry.update({f"{k} vs V": v for k, v in sV.fits.items()})
                entry["orders"] = sorted({p["order"] for p in sL.points + sV.points})
            else:
                entry["orders"] = sorted({p["order"] for p in sL.points})
                entry["extrapolation"] = sL.extrapolation
            row[attention] = entry
        rows.append(row)
    return rows


# -- fluctuations of the order parameters (linear attention) -------------------------------------------
@dataclass
class PosteriorMeans:
    """Posterior means of the linear order parameters under exp(−S) of the reduced action itself.

    means / errors / saddle: dicts over "t" (mean row sum), "c", "rho" (remainder per target row, measured as the
    sampled network's is: from the row-resolved plane under the causal mask, from the shared plane t̄U + cS_⊥
    otherwise, so that with `row_sums="per-row"` it includes the row-sum spread (⟨t_l²⟩ − t̄²)/L) and "loss_gibbs";
    errors are standard errors over independent walkers; saddle is the global minimum.
    """

    L: int
    V: int
    P: float
    n: float
    means: dict
    errors: dict
    saddle: dict
    acceptance: float
    walkers: int
    steps: int
    status: str
    message: str


def linear_posterior_means(L: int, V: int, P: float, convention: model.Convention = model.DEFAULT, *, walkers: int = 256,
                           steps: int = 6000, seed: int = 0) -> PosteriorMeans:
    """Means of (t, c, ρ, Gibbs loss) over exp(−S(order parameters)) instead of their values at the minimum of S.

    The reduced action S is the self-averaged −log posterior of G with W integrated out and, for
    `remainder="entropy"`, the remainder R integrated radially; its variables are coordinates of G along
    fixed directions (t U + c S_⊥, or per row t_l U_l + c(δ_{l−1} − U_l) under the causal mask and with
    `row_sums="per-row"`), so the
    posterior of the order parameters is exp(−S) with Lebesgue measure in (t[_l], c) and dρ = ρ dr in r = ln ρ.
    The saddle point drops the order parameters' own fluctuations; these are not small at L ~ 8 because the
    likelihood is invariant under G → λG, W → W/λ at large n, so the overall scale of G is held only by the
    prior and the O(V² + D) log terms (relative width ~ (V² + D)^{−1/2}), and the mean of a skewed scale
    distribution lies above its mode. Random-walk Metropolis, `walkers` independent walkers started near the
    minimum with the proposal covariance (2.38²/d)·H⁻¹ (H the Hessian there); the first third is burn-in. The
    sign symmetry (t, c) ↦ (−t, −c) is folded (each sample reported with t ≥ 0).
    """
    _, L, V = _check_common("linear", L, V, convention)
    P = model.check_P(P)
    walkers = check_int("walkers", walkers, 2, 10**6)
    steps = check_int("steps", steps, 30, 10**8)
    conv = convention
    n_ = conv.n_of_P(P, L)
    tau_ = conv.tau(V)
    entropy = _entropy(conv)
    if _row_resolved(conv):
        if L > 1024:
            raise ParameterError("L", L, "at most 1024 with one row sum per row (boundary 'causal' or row_sums 'per-row')")
        T_ = conv.targets(L)
        ls = row_lengths(L, conv)
        # the sampled network's periodic/drop-first ρ is measured from the shared plane t̄U + cS_⊥ (`order_parameters_of`),
        # so it also holds the row-sum spread (⟨t_l²⟩ − t̄²)/L; the causal ρ is measured from the row-resolved plane
        spread_in_rho = 0.0 if conv.boundary == "causal" else 1.0 / L
        ker = causal_linear_kernels(conv.centred, entropy)
        p = causal_linear_parameters(n_, L, V, conv)
        spread = T_ - float(p[3])
        lossk = causal_loss_kernels(conv.centred)
        found, _ = _causal_linear_minima(n_, L, V, conv)
        local = lambda v: causal_linear_action_of(v[:T_], v[T_], n_, L, V, conv, *v[T_ + 1:])  # noqa: E731

        def observables(X):  # X (..., T + 1 [+ 1]) -> t, c, ρ, Gibbs loss and the action
            t_rows, c_ = X[..., :T_], X[..., T_]
            r_ = X[..., T_ + 1] if entropy else None
            Qt, Mt, T1, T2 = ((t_rows**2 / ls).sum(-1), (t_rows / ls).sum(-1), t_rows.sum(-1), (t_rows**2).sum(-1))
            rho_ = np.exp(r_) if entropy else np.zeros_like(c_)
            S = np.asarray(ker.action(Qt, Mt, T1, T2, c_, *([r_] if entropy else []), *p), float)
            m_, q_ = (Mt + c_ * spread) / T_, (Qt + c_**2 * spread) / T_ + rho_
            loss = np.asarray(lossk(m_, q_, T1 / T_, T2 / T_, n_, V, tau_), float)[..., 1]
            return T1 / T_, c_, rho_ + spread_in_rho * (T2 / T_ - (T1 / T_) ** 2), loss, S
    else:
        ker = linear_kernels(conv.remainder, conv.centred)
        p = linear_parameters(n_, L, V, conv)
        lossk = loss_kernels(conv.centred)
        found, _ = _linear_minima(n_, L, V, conv)

        def local(v):
            return (float(ker.action(*v, *p)), np.asarray(ker.grad(*v, *p), float),
                    np.asarray(ker.hess(*v, *p), float))

        def observables(X):
            t_, c_ = X[..., 0], X[..., 1]
            r_ = X[..., 2] if entropy else None
            rho_ = np.exp(r_) if entropy else np.zeros_like(c_)
            S = np.asarray(ker.action(t_, c_, *([r_] if entropy else []), *p), float)
            m_, q_ = (t_ + (L - 1) * c_) / L, (t_**2 + (L - 1) * c_**2) / L + rho_
            loss = np.asarray(lossk(m_, q_, t_, n_, V, tau_), float)[..., 1]
            return t_, c_, rho_, loss, S

    names = ("t", "c", "rho", "loss_gibbs")
    stable = [v for v in found if np.linalg.eigvalsh(local(v)[2])[0] > 0]
    if not stable:
        nan = {k: math.nan for k in names}
        return PosteriorMeans(L, V, P, n_, nan, nan, nan, math.nan, walkers, steps, "failed",
                              "no stable minimum of the reduced action to start from")
    best = min(stable, key=lambda v: local(v)[0])
    r_index = len(best) - 1 if entropy else None

    def log_density(X):
        return -observables(X)[4] + (X[..., r_index] if entropy else 0.0)  # dρ = ρ dr

    def folded(X):  # the sign symmetry (t, c) ↦ (−t, −c): each sample reported with t ≥ 0
        t_, c_, rho_, loss, _ = observables(X)
        sign = np.where(t_ < 0, -1.0, 1.0)
        return np.stack([t_ * sign, c_ * sign, rho_, loss], axis=-1)

    sampled = metropolis_means(log_density, folded, best, local(best)[2], walkers=walkers, steps=steps, seed=seed)
    t0, c0, rho0, loss0, _ = observables(best)
    saddle = {"t": float(t0), "c": float(c0), "rho": float(rho0), "loss_gibbs": float(loss0)}
    return PosteriorMeans(L, V, P, n_, dict(zip(names, sampled.means.tolist())), dict(zip(names, sampled.errors.tolist())),
                          saddle, sampled.acceptance, walkers, steps, sampled.status,
                          f"random-walk Metropolis on the reduced action (numeric.metropolis), acceptance "
                          f"{sampled.acceptance:.2f}")


# -- simulation ----------------------------------------------------------------------------------------
def _batch_means(x: np.ndarray, n_batches: int = 10) -> np.ndarray:
    """Means of consecutive batches of a chain (approximately independent for long batches)."""
    S = x.shape[-1]
    nb = max(1, min(n_batches, S))
    usable = (S // nb) * nb
    return x[..., :usable].reshape(x.shape[:-1] + (nb, usable // nb)).mean(-1)


def network_config(attention, L, V, conv: model.Convention, qk_width=None):
    from attnphase.validate.sgld import CopyTaskConfig

    if conv.centred:
        raise ParameterError("tokens", conv.tokens, "'one-hot' (the simulation implements one-hot inputs)")
    return CopyTaskConfig(L=L, V=V, attention=attention, beta=conv.beta_per_target(L), tau=conv.tau(V),
                          sigma2=conv.sigma2, s1=conv.s1, kappa=conv.kappa(L), bias=conv.bias, qk_width=qk_width,
                          boundary=conv.boundary)


# Largest array a simulation may build, in float64 entries (4 GiB): the one-hot data (sequences × L × V),
# the sufficient statistics (chains × L² × V², twice) and the recorded samples of G (chains × L² per
# 10 steps after burn-in). Beyond it a run would exhaust memory instead of failing with a message.
MAX_SIMULATION_ENTRIES = 2**29


def _check_simulation_size(L, V, P, n_seq, chains, steps, n_test_sequences):
    cap = MAX_SIMULATION_ENTRIES
    if 2 * chains * L * L * V * V > cap or n_test_sequences * L * V > cap:
        raise ParameterError("L", L, f"small enough that 2·chains·L²·V² <= 2^29 (chains = {chains}, V = {V}): "
                                     "the simulation keeps L²V² statistics per chain")
    if n_seq * L * V > cap:
        raise ParameterError("P", P, f"at most about {cap / (L * V) * (P / n_seq):.3g} for L = {L}, V = {V} "
                                     f"(the training set is one-hot encoded in (P/T) × L × V <= 2^29 entries)")
    if chains * L * L * (steps // 20 + 1) > cap:
        raise ParameterError("steps", steps, f"small enough that chains·L²·steps/20 <= 2^29 (chains = {chains}, L = {L}): "
                                             "samples of G are recorded every 10 steps after burn-in")


def simulate(attention: str, L: int, V: int, P: float, *, sampler: str = "sgld", chains: int = 2, steps: int = 4000,
             seed: int = 0, device: str = "auto", convention: model.Convention = model.DEFAULT, qk_width=None,
             n_test_sequences: int = 2000, rng: str = "device", fluctuations: bool = False) -> dict:
    """Sample (SGLD/MALA, chains alternating uniform and copy starts) or train (Adam, `chains` seeds)
    the real network at P and compare the measured order parameters and losses with the theory.
    rng: "device" or "cpu", where the random numbers are drawn (`attnphase.validate.seeds`; "cpu"
    gives the same numbers on every device).

    The number of training sequences is P/T rounded (P counts target tokens by default) or P
    (`P_counts="sequences"`). Linear attention has the symmetry (G, W) -> (−G, −W); its order
    parameters are reported as |t| and c·sign(t).

    fluctuations (linear attention, sgld): compare with the means of the order parameters and of the Gibbs
    loss over exp(−S) of the reduced action (`linear_posterior_means`, its Monte Carlo error added to the
    theory error) instead of their values at the minimum; the result gains "posterior_means".
    """

    from attnphase.validate import sgld
    from attnphase.validate.compare import compare
    from attnphase.validate.device import select_device
    from attnphase.validate.seeds import generator

    attention, L, V = _check_common(attention, L, V, convention)
    P = model.check_P(P)
    sampler = check_choice("sampler", sampler, ("sgld", "adam"))
    chains = check_int("chains", chains, 1, 4096)
    steps = check_int("steps", steps, 10, 10**7)
    n_test_sequences = check_int("n_test_sequences", n_test_sequences, 2, 10**6)
    if qk_width is not None:
        qk_width = check_int("qk_width", qk_width, L, None)  # >= L so that the copy start is representable
    cfg = network_config(attention, L, V, convention, qk_width)
    n_seq = max(1, int(round(P / convention.targets(L)))) if convention.P_counts == "tokens" else max(1, int(round(P)))
    _check_simulation_size(L, V, P, n_seq, chains, steps, n_test_sequences)
    dev = select_device(device)
    P_used = n_seq * convention.targets(L) if convention.P_counts == "tokens" else n_seq
    # Langevin samples the Bayesian posterior (read-out integrated out); Adam minimises the joint
    # objective over all weights, whose reduced action has no log-det terms.
    theory_conv = convention if sampler == "sgld" else convention.with_(read_out="map")
    theory = solve(attention, L, V, P_used, theory_conv)
    if theory.status != "converged":  # before sampling: without a theory there is nothing to compare with
        raise RuntimeError(f"the theory at P = {P_used:g} was not computed: {theory.message}")
    gen = generator(seed, dev, rng)
    train = sgld.statistics([sgld.sample_tokens(n_seq, cfg, gen, dev)], V, boundary=cfg.boundary)
    test = sgld.statistics([sgld.sample_tokens(n_test_sequences, cfg, gen, dev)], V, boundary=cfg.boundary)
    if sampler == "sgld":
        starts = [("uniform", "copy")[i % 2] for i in range(chains)]
        run = sgld.run_langevin(cfg, train, test, starts, steps=steps, seed=seed + 1, device=str(dev), rng=rng)
    else:
        run = sgld.run_adam(cfg, train, test, chains, steps=steps, seed=seed + 1, device=str(dev), rng=rng)
    op = model.order_parameters_of(run.G, convention.boundary)
    t_meas, c_meas = op["t"], op["c"]
    if attention == "linear":
        sign = np.where(np.mean(t_meas, axis=-1, keepdims=True) < 0, -1.0, 1.0)
        t_meas, c_meas = t_meas * sign, c_meas * sign
    g = theory.global_minimum
    keep = run.kept if run.kept.size else np.ones(len(run.starts), bool)
    per_chain = []
    for k in range(len(run.starts)):
        per_chain.append({"start": run.starts[k], "kept": bool(keep[k]), "c_uniform": float(t_meas[k].mean()),
                          "c_copy": float(c_meas[k].mean()), "c_copy_std": float(c_meas[k].std()),
                          "rho": float(op["rho"][k].mean()),
                          "train_loss": float(run.train_loss[k].mean()), "test_loss": float(run.test_loss[k].mean()),
                          "acceptance": float(run.acceptance[k])})
    sel = np.nonzero(keep)[0]
    # The theory is the self-averaged (P → ∞) action: at N target tokens its order parameters carry a
    # sample-fluctuation error ~ |value|/√N (cf. the reduced-vs-exact test), and the test loss an
    # estimation error ~ V²/n on top.
    N_tokens = n_seq * convention.targets(L)
    n_used = convention.n_of_P(P_used, L)

    def th_err(value, loss=False):
        return (abs(value) + 1e-3) / math.sqrt(N_tokens) + (V * V / n_used if loss else 0.0)

    loss_theory = g.loss_gibbs if sampler == "sgld" else g.loss_mean_predictor
    comparisons = []
    measured = [("c_copy", c_meas, g.c_copy, False), ("c_uniform", t_meas, g.c_uniform, False),
                ("test_loss", run.test_loss, loss_theory, True)]
    if attention == "linear":
        # remainder norm per target row: 0 in Convention A, ρ at the minimum with the remainder's entropy kept
        measured.append(("rho", op["rho"], g.rho, False))
    means = None
    key = {"c_copy": "c", "c_uniform": "t", "test_loss": "loss_gibbs", "rho": "rho"}
    if fluctuations and attention == "linear" and sampler == "sgld":
        means = linear_posterior_means(L, V, P_used, theory_conv, seed=seed)
        measured = [(name, meas, means.means[key[name]], is_loss) for name, meas, _, is_loss in measured]
    for name, meas, th, is_loss in measured:
        samples = _batch_means(meas[sel]).reshape(-1) if sampler == "sgld" else meas[sel].reshape(-1)
        error = th_err(th, is_loss) if means is None else math.hypot(th_err(th, is_loss), means.errors[key[name]])
        comparisons.append(compare(name, th, samples, theory_error=error))
    cov = sgld.coverage(run.G[sel], convention.boundary)
    return {"sampler": sampler, "P_used": P_used, "sequences": n_seq, "n": convention.n_of_P(P_used, L),
            "chains": per_chain, "theory": {"minima": theory.minima, "global": g},
            "comparisons": comparisons, "coverage": cov, "status": run.status, "message": run.message,
            **({"posterior_means": means} if means is not None else {})}


def simulate_sweep(attention: str, L: int, V: int, P_values, *, sampler: str = "sgld", chains_per_P: int = 2,
                   steps: int = 2000, seed: int = 0, device: str = "auto", convention: model.Convention = model.DEFAULT,
                   n_test_sequences: int = 2000) -> list[dict]:
    """Order parameters and losses of the real network at several P in ONE batched run (a data set per
    P; SGLD chains alternate uniform/copy starts, Adam seeds start from prior draws and are filtered
    per P by the rule of validate.sgld.run_adam)."""
    from attnphase.validate import sgld
    from attnphase.validate.device import select_device
    from attnphase.validate.seeds import generator

    attention, L, V = _check_common(attention, L, V, convention)
    cfg = network_config(attention, L, V, convention)
    dev = select_device(device)
    gen = generator(seed, dev)
    T_ = convention.targets(L)
    n_seqs = [max(1, int(round(model.check_P(P) / T_))) if convention.P_counts == "tokens" else max(1, int(round(P))) for P in P_values]
    train = sgld.statistics([sgld.sample_tokens(k, cfg, gen, dev) for k in n_seqs], V, boundary=cfg.boundary).repeat(chains_per_P)
    test = sgld.statistics([sgld.sample_tokens(n_test_sequences, cfg, gen, dev)], V, boundary=cfg.boundary)
    K = len(n_seqs) * chains_per_P
    if sampler == "sgld":
        run = sgld.run_langevin(cfg, train, test, [("uniform", "copy")[i % 2] for i in range(K)], steps=steps, seed=seed + 1,
                                device=str(dev))
        kept = np.ones(K, bool)
    else:
        run = sgld.run_adam(cfg, train, test, K, steps=steps, seed=seed + 1, device=str(dev))
        U = run.objective
        kept = np.zeros(K, bool)
        for i in range(len(n_seqs)):
            block = slice(i * chains_per_P, (i + 1) * chains_per_P)
            best = U[block].min()
            kept[block] = U[block] <= best + max(1.0, 1e-3 * abs(best))
    op = model.order_parameters_of(run.G, convention.boundary)
    out = []
    for i, k in enumerate(n_seqs):
        for j in range(chains_per_P):
            idx = i * chains_per_P + j
            t_, c_ = op["t"][idx], op["c"][idx]
            if attention == "linear" and t_.mean() < 0:
                t_, c_ = -t_, -c_
            bm = _batch_means(c_[None])[0]
            out.append({"P": k * T_ if convention.P_counts == "tokens" else k, "chain": j, "start": run.starts[idx],
                        "kept": bool(kept[idx]), "c_uniform": float(t_.mean()), "c_copy": float(c_.mean()),
                        "c_copy_sem": float(bm.std(ddof=1) / math.sqrt(len(bm))) if len(bm) > 1 else 0.0,
                        "train_loss": float(run.train_loss[idx].mean()), "test_loss": float(run.test_loss[idx].mean()),
                        "G_mean": run.G[idx].mean(0)})
    return out


def sweep_point(attention: str = "softmax", L: int = 16, V: int = 4, P: float = 100.0, **convention_fields) -> dict[str, float]:
    """One point of a parameter sweep: the global minimum and its losses (picklable, top level)."""
    conv = model.Convention(**convention_fields) if convention_fields else model.DEFAULT
    g = solve(attention, L, V, P, conv).global_minimum
    return {"c_uniform": g.c_uniform, "c_copy": g.c_copy, "a_copy": g.a_copy, "action": g.action,
            "loss_mean_predictor": g.loss_mean_predictor, "loss_gibbs": g.loss_gibbs}


def supported_digits_string(value: float, error: float, requested: int = 17) -> str:
    """`value` with only the significant digits its error supports: d = ⌊log10(|value| / (2·error))⌋
    (the 2-sigma interval moves no digit kept), at least 1 and at most `requested` (and 17, float64).

    The exact-row-rate P* is a float64 computation whose precision is set by the Sobol error of the row
    density (relative ~1e-3), not by the arithmetic: an mpmath evaluation of the same Sobol sums would
    carry more digits of the same estimate, not more correct digits. This string is what `--digits`
    can honestly deliver for it."""
    if not (math.isfinite(value) and math.isfinite(error)):
        return ""
    digits = 17 if error <= 0 else int(math.floor(math.log10(abs(value) / (2 * error))))
    kept = max(1, min(digits, requested, 17))
    return f"{value:.{kept}g}"


def softmax_exact_prior_threshold(L: int, V: int, convention: model.Convention = model.DEFAULT, *,
                                  n_points: int = 2**12, replicates: int = 8, n_grid: int = 241) -> dict:
    """P* with the EXACT row rate instead of the large-L shortcut (the shortcut's effect on P*).

    I(x) = −ln p(x), p(x) = E[φ_σ(x + ln Σ_{m≠prev} e^{z_m})] over the other L−1 scores (numeric.gauss
    Sobol points), and k = (L−1)E Σw² likewise, tabulated on a grid of x and interpolated by a cubic
    spline; the action is the compiled shortcut action with T·I_shortcut replaced by T·I. Float64
    (the Sobol error, propagated through the branch difference, bounds the precision).
    """
    from scipy.interpolate import CubicSpline
    from scipy.optimize import brentq

    from attnphase.numeric.gauss import sobol_expectation

    L, V = model.check_sizes(L, V)
    if convention.boundary == "causal":
        raise ParameterError("boundary", "causal", "'periodic' or 'drop-first' (under the causal mask the threshold already "
                                                   "uses the exact row densities, one per row length)")
    conv = convention
    s2 = conv.sigma2
    short = softmax_transition(L, V, conv, digits=15)
    # the copy branch sits at a < 0.9 (x < 2.2) for every size tested; beyond x ≈ 6 the density is so far
    # in the tail that its Sobol estimate loses relative accuracy
    xs = np.linspace(-math.log(L - 1) - s2 / 2 - 6 * math.sqrt(s2), 6.0, n_grid)
    mean, cov = np.zeros(L - 1), np.eye(L - 1) * s2
    dens = sobol_expectation(model.row_logit_density_integrand(xs, s2), mean, cov, n_points=n_points, replicates=replicates)
    part = sobol_expectation(model.row_participation_integrand(s2), mean, cov, n_points=n_points, replicates=replicates)
    I_exact = -np.log(np.asarray(dens.value))
    I_err_spline = CubicSpline(xs, np.asarray(dens.error) / np.asarray(dens.value))  # absolute error of I(x)
    spline = CubicSpline(xs, I_exact)
    k_exact = float(part.value)
    ker = softmax_kernels()
    T_ = conv.targets(L)
    shortcut_rate = lambda x: (x + math.log(L - 1) + s2 / 2) ** 2 / (2 * s2) + 0.5 * math.log(2 * math.pi * s2)  # noqa: E731

    def action(x, n_):
        p = softmax_parameters(n_, L, V, conv)[:-1] + [k_exact]
        return np.asarray(ker.action(x, *p)) - T_ * shortcut_rate(x) + T_ * spline(x)

    def minima(n_):
        S = action(xs, n_)
        i = np.nonzero((S[1:-1] < S[:-2]) & (S[1:-1] < S[2:]))[0] + 1
        out = []
        for j in i:
            from scipy.optimize import minimize_scalar

            r = minimize_scalar(lambda x: float(action(x, n_)), bracket=(xs[j - 1], xs[j], xs[j + 1]))
            out.append((r.x, r.fun))
        return out

    lo_n, hi_n = short.n_star / 30, short.n_star * 30
    grid = np.geomspace(lo_n, hi_n, 121)
    two = [v for v in grid if len(minima(v)) >= 2]
    if not two:
        return {"order": "none", "P_star_exact": math.nan, "P_star_shortcut": short.P_star, "k_exact": k_exact,
                "message": "one minimum at every n scanned with the exact rate"}

    def diff(n_):
        m = minima(n_)
        return m[-1][1] - m[0][1] if len(m) >= 2 else math.nan

    a, b = two[0], two[-1]
    da, db = diff(a), diff(b)
    n_star = brentq(diff, a, b, xtol=1e-12 * b) if da * db < 0 else math.nan
    if not math.isfinite(n_star):
        return {"order": "undetermined", "P_star_exact": math.nan, "P_star_shortcut": short.P_star, "k_exact": k_exact,
                "message": "two minima but no sign change of their action difference"}
    # error: the Sobol error of I at the two minima (T rows each), over the slope of the branch difference
    m = minima(n_star)
    slope = (diff(n_star * (1 + 1e-6)) - diff(n_star * (1 - 1e-6))) / (2e-6 * n_star)
    err_diff = T_ * (abs(float(I_err_spline(m[0][0]))) + abs(float(I_err_spline(m[-1][0]))))
    err = err_diff / abs(slope)
    P_exact, P_err = conv.P_of_n(n_star, L), conv.P_of_n(err, L)
    return {"order": "first", "P_star_exact": P_exact, "error": P_err,
            "P_star_exact_digits": supported_digits_string(P_exact, P_err),
            "P_star_shortcut": short.P_star, "k_exact": k_exact, "k_shortcut": math.exp(s2),
            "x_minima": [m[0][0], m[-1][0]], "message": "coexistence of two minima with the exact row rate"}


# -- softmax: row mean-field free energy (the theory of finite-L sampling) ------------------------------
#
# The homogeneous reduced action T·I(x) + S_data puts every target row at the same previous-position logit
# x (a Laplace approximation per row). The data term couples the rows only through the averages
# m = (1/T) Σ_l a_l and q = (1/T) Σ_l q_l (q_l = ‖g_l‖²), and the rows are independent under the prior,
# so for many rows the density of (m, q) is exp(−T Λ*(m, q)) (Cramér), with Λ* the Legendre transform of
# the cumulant function of one row,
#
#     Λ(h, g) = ln ∫ dx p(x) exp(h a(x) + g q(x)),   a = 1/(1 + e^{−x}),  q(x) = a² + k(1 − a)²/(L − 1),
#
# (p the row-logit density, exact or the large-L shortcut; k the participation of the other weights as in
# the homogeneous action). Row density "joint" keeps the participation Y = Σ_{m≠prev} w_m² of the other weights
# (w their own softmax) as a random variable, q = a² + (1 − a)² Y with (x, Y) from their exact joint density:
#
#     Λ(h, g) = ln ∫ dx dY p(x, Y) exp(h a(x) + g [a² + (1 − a)² Y]).
#
# On the copy branch the tilt g = −S_q/T is large and negative (−24 to −80 at L = 32, V = 4, P = 640…1920): rows
# whose other weights are spread evenly (small Y) are favoured, which the prior mean k/(L − 1) misses. The mean
# participation makes q too large and Λ too small there, and the copy minimum comes out 0.01–0.02 too high in c
# (L = 32; MALA of the scores under the self-averaged data term agrees with "joint" to ≤ 0.001, see docs). The free energy in the order parameters is F(m, q) = T Λ*(m, q) + S_data(m, q).
# The homogeneous action is its limit when each row's tilted density concentrates (large fields, large L);
# at L ~ 32 it does not, and the homogeneous barrier (22 units at L = 32) does not exist in F.
#
# F is computed along the path that minimises it over q at each m: for a tilt h, g solves
# g = −(1/T) ∂S_data/∂q at (m, q) = ∂Λ/∂(h, g); then F = T(h m + g q − Λ) + S_data and dF/dm = T h + ∂S_data/∂m,
# whose zeros are the stationary points (minima where it turns from negative to positive).

ROW_DENSITIES = ("exact", "shortcut", "joint")
# "joint": bins of the participation Y per logit x (equal prior mass each); 8 and 32 bins give the same L = 32 copy
# minima to 2e-4 in c, the binning error (the spread of Y within a bin) falls with the bin width squared
JOINT_PARTICIPATION_BINS = 16
# row sets may mix them: "hybrid" uses the exact density for rows attending to at most HYBRID_EXACT_MAX positions and
# the shortcut beyond (causal mask at large L, where L − 1 exact densities are too costly)
ROW_SET_DENSITIES = ROW_DENSITIES + ("hybrid",)
HYBRID_EXACT_MAX = 64


@lru_cache(maxsize=None)
def softmax_data_kernel():
    """(S_data, ∂S_data/∂m, ∂S_data/∂q) at row sum t = 1, compiled from the model's data term."""
    expr = model.data_action(model.m, model.q, 1)
    args = [model.m, model.q, model.n, model.V, model.tau, model.ld]
    return compile_kernel([expr, sympy.diff(expr, model.m), sympy.diff(expr, model.q)], args)


@dataclass(frozen=True)
class RowTable:
    """One row of softmax attention on a grid of its previous-position logit x.

    log_weight: ln p(x) + ln(grid spacing) (trapezoid quadrature of ∫ dx p(x) ·); relative_error: the
    Sobol standard error of p(x) over p(x) (0 for the closed-form shortcut density).
    """

    x: np.ndarray
    log_weight: np.ndarray
    a: np.ndarray
    q: np.ndarray
    relative_error: np.ndarray
    participation: float
    # "joint" only: Σ_{m≠m'} w_m² w_m'² of the other weights (mean within each atom), for the finite-data correction
    pair_participation: np.ndarray | None = None


@lru_cache(maxsize=1024)
def row_table(L: int, sigma2: float, row_density: str = "exact", n_x: int = 600, n_points: int = 2**12,
              replicates: int = 4) -> RowTable:
    """Tabulate the row-logit density p(x) (exact: Sobol over the L − 1 other scores; shortcut: the
    Gaussian N(−ln(L−1) − σ²/2, σ²)) and the row's (a, q) on a grid of x.

    "joint": the joint density of x and the participation Y of the other weights (`_joint_row_table`); the arrays
    then run over the atoms (x_j, bin k of Y), n_x · JOINT_PARTICIPATION_BINS of them (x repeated), so every
    tilted average over the table is the same sum over atoms."""
    from attnphase.numeric.gauss import sobol_expectation

    L = check_int("L", L, 2, 2**16)  # positions the row attends to (2 and up under the causal mask)
    row_density = check_choice("row_density", row_density, ROW_DENSITIES)
    sigma = math.sqrt(sigma2)
    centre = -math.log(L - 1) - sigma2 / 2
    # a = 1/(1 + e^{−x}) is flat beyond x ≈ 12 and the prior weight below centre − 8σ is < e^{−32}
    x = np.linspace(centre - 8 * sigma, max(12.0, centre + 8 * sigma), n_x)
    if row_density == "joint":
        return _joint_row_table(L, sigma2, x, n_points, replicates)
    if row_density == "shortcut":
        log_p = -((x - centre) ** 2) / (2 * sigma2) - 0.5 * math.log(2 * math.pi * sigma2)
        rel = np.zeros_like(x)
        k = L - 1.0 if sigma2 >= math.log(L - 1.0) else math.exp(sigma2)
    else:
        mean, cov = np.zeros(L - 1), np.eye(L - 1) * sigma2
        dens = sobol_expectation(model.row_logit_density_integrand(x, sigma2), mean, cov, n_points=n_points,
                                 replicates=replicates)
        value = np.asarray(dens.value, float)
        # far in the right tail the Sobol estimate can underflow to 0: those points carry no weight
        log_p = np.log(np.where(value > 0, value, np.finfo(float).tiny))
        rel = np.where(value > 0, np.asarray(dens.error, float) / np.where(value > 0, value, 1.0), 1.0)
        k = float(sobol_expectation(model.row_participation_integrand(sigma2), mean, cov, n_points=n_points,
                                    replicates=replicates).value)
    a = expit(x)
    return RowTable(x, log_p + math.log(x[1] - x[0]), a, a * a + k * (1 - a) ** 2 / (L - 1), rel, k)


def _joint_row_table(L: int, sigma2: float, x: np.ndarray, n_points: int, replicates: int,
                     n_bins: int = JOINT_PARTICIPATION_BINS) -> RowTable:
    """Row table over atoms (x_j, Y-bin k): weight p(x_j, k)·Δx and q = a_j² + (1 − a_j)² Ȳ_jk with Ȳ_jk the mean
    participation within bin k given x_j (`models.copy_heads.row_joint_density_integrand`, Sobol over the L − 1 other
    scores, the same points for every x). Bin edges: prior quantiles of Y from 4096 pseudo-random rows; any edges
    give a consistent table, quantiles put equal prior mass in each bin."""
    from attnphase.numeric.gauss import sobol_expectation

    rng = np.random.default_rng(0)
    z = math.sqrt(sigma2) * rng.standard_normal((4096, L - 1))
    w = np.exp(z - np.logaddexp.reduce(z, axis=1)[:, None])
    edges = np.quantile((w**2).sum(axis=1), np.linspace(0.0, 1.0, n_bins + 1))
    edges[0], edges[-1] = 0.0, 1.0 + 1e-12  # Y ∈ [1/(L − 1), 1]
    mean, cov = np.zeros(L - 1), np.eye(L - 1) * sigma2
    mass, moment, pair_moment, err = (np.empty((len(x), n_bins)) for _ in range(4))
    chunk = 16  # x values per Sobol call: the integrand holds N × 3 × chunk × n_bins numbers
    for i in range(0, len(x), chunk):
        sl = slice(i, i + chunk)
        res = sobol_expectation(model.row_joint_density_integrand(x[sl], sigma2, edges), mean, cov, n_points=n_points,
                                replicates=replicates)
        mass[sl], moment[sl], pair_moment[sl] = np.asarray(res.value, float).reshape(3, -1, n_bins)
        err[sl] = np.asarray(res.error, float).reshape(3, -1, n_bins)[0]
    positive = mass > 0
    safe_mass = np.where(positive, mass, 1.0)
    Y = np.where(positive, moment / safe_mass, 0.0)
    pairs = np.where(positive, pair_moment / safe_mass, 0.0)
    a = np.repeat(expit(x)[:, None], n_bins, axis=1)
    log_w = np.log(np.where(positive, mass, np.finfo(float).tiny)) + math.log(x[1] - x[0])
    rel = np.where(positive, err / np.where(positive, mass, 1.0), 1.0)
    k = float(sobol_expectation(model.row_participation_integrand(sigma2), mean, cov, n_points=n_points,
                                replicates=replicates).value)
    return RowTable(np.repeat(x[:, None], n_bins, axis=1).ravel(), log_w.ravel(), a.ravel(),
                    (a * a + (1 - a) ** 2 * Y).ravel(), rel.ravel(), k, pairs.ravel())


@dataclass(frozen=True)
class RowSet:
    """The distinct target rows of one boundary convention, each with its multiplicity (periodic and
    drop-first: one row table, T times; causal mask: the rows l = 2..L, once each). Arrays are (R, n_x)."""

    x: np.ndarray
    log_weight: np.ndarray
    a: np.ndarray
    q: np.ndarray
    relative_error: np.ndarray
    multiplicity: np.ndarray
    positions: np.ndarray  # positions each row attends to
    participation: np.ndarray
    pair_participation: np.ndarray | None = None  # "joint" tables only (RowTable.pair_participation)

    @property
    def targets(self) -> float:
        return float(self.multiplicity.sum())

    @property
    def uniform_overlap(self) -> float:
        """m of the uniform pattern (every row at its prior mean 1/l): H/T."""
        return float((self.multiplicity / self.positions).sum() / self.targets)

    def copy_strength(self, m_):
        """c of the plane projection with every row sum 1: (T m − H)/(T − H) (= (Lm − 1)/(L − 1) for equal rows)."""
        H, T_ = self.uniform_overlap * self.targets, self.targets
        return (T_ * np.asarray(m_) - H) / (T_ - H)


def row_set(L: int, conv: model.Convention, row_density: str = "exact") -> RowSet:
    """The target rows of the convention with their densities (`row_table`).

    row_density "hybrid": exact for rows attending to l ≤ HYBRID_EXACT_MAX positions, the shortcut beyond (its rate
    error, v(s² + sσ² − σ²)/(2σ⁴) with v = (e^{σ²} − 1)/(l − 1), shrinks as 1/l; at l = 64 the periodic P* it gives
    is 5.5% high, at 128 2.7%)."""
    row_density = check_choice("row_density", row_density, ROW_SET_DENSITIES)
    rows = model.visible_positions(L, conv.boundary)
    lengths, counts = np.unique(rows, return_counts=True)

    def density(l_):
        if row_density == "hybrid":
            return "exact" if l_ <= HYBRID_EXACT_MAX else "shortcut"
        return row_density

    tables = [row_table(int(l_), conv.sigma2, density(int(l_))) for l_ in lengths]
    stack = lambda name: np.stack([getattr(tb, name) for tb in tables])  # noqa: E731
    pairs = stack("pair_participation") if all(tb.pair_participation is not None for tb in tables) else None
    return RowSet(stack("x"), stack("log_weight"), stack("a"), stack("q"), stack("relative_error"), counts.astype(float),
                  lengths.astype(float), np.array([tb.participation for tb in tables]), pairs)


def _tilted_moments(table: RowSet, h, g):
    """Row averages (1/T) Σ_l of Λ_l(h, g), E_l[a], E_l[q] and E_l[relative error] under p_l(x) e^{h a + g q_l},
    vectorised over (h, g): every row its own cumulant function, all rows under the same fields."""
    h, g = np.asarray(h, float)[..., None, None], np.asarray(g, float)[..., None, None]
    exponent = table.log_weight + h * table.a + g * table.q
    # log-sum-exp by hand: one exp pass serves the normaliser and the tilted weights (this is the inner loop
    # of every row mean field; scipy's logsumexp costs three passes over the (tilts, rows, grid) array)
    top = exponent.max(axis=-1, keepdims=True)
    np.subtract(exponent, top, out=exponent)
    np.exp(exponent, out=exponent)
    Z = exponent.sum(-1)
    lam = top[..., 0] + np.log(Z)
    weights = table.multiplicity / table.targets

    def average(per_row):
        return (per_row * weights).sum(-1)

    def tilted(values):  # E_l[values] per row
        return np.einsum("...rx,rx->...r", exponent, values) / Z

    return (average(lam), average(tilted(table.a)), average(tilted(table.q)), average(tilted(table.relative_error)))


# -- row mean field on the dual plane -------------------------------------------------------------------
# F(m, q) = T Λ*(m, q) + S_data(m, q). The map (h, g) ↦ (m, q) = ∇Λ̄(h, g) (Λ̄ the row-averaged cumulant function) is
# a bijection (Λ̄ strictly convex), so F is also a function on the dual plane,
#     F̃(h, g) = T(h m + g q − Λ̄) + S_data(m, q),  (m, q) = ∇Λ̄(h, g),
# with the same stationary points of the same type (∇F̃ = ∇²Λ̄ · ∇F, ∇²Λ̄ positive definite): minima are h = −S_m/T,
# g = −S_q/T, and a path between two minima maps to a path, so the mountain-pass saddle (the barrier) is the same in
# both planes. An earlier solver followed one path through this plane (for each tilt h one root g of the q-condition
# T g + S_q = 0); that condition has several roots on the copy branch, and the path could follow the wrong one:
# periodic L = 64 (exact density) at P = 2000 it reported a copy minimum c = 0.209 with F = −308.9 where F̃ reaches
# −317.4 at c = 0.261. Searching the plane does not depend on that choice, and Λ̄ on a grid of (h, g) does not depend
# on P, so one grid serves a whole scan over P.
@dataclass
class DualMeanField:
    """Minima of the row mean-field free energy found on the dual plane, for several P.

    points: per P, {"P", "n_minima", "c_global", "minima": [{c, m, q, free_energy, free_energy_error, h, g,
    at_grid_edge}]}; extent: (H, G) of the grid h ∈ [0, H], g ∈ [−G, 0]; n_grid: grid points per axis.
    """

    L: int
    V: int
    row_density: str
    extent: tuple
    n_grid: int
    points: list
    status: str
    message: str


def _dual_free_energy(table, h, g, n_, V, conv, T_):
    lam, m_, q_, _ = _tilted_moments(table, h, g)
    S = np.asarray(softmax_data_kernel()(m_, q_, n_, V, conv.tau(V), conv.log_det_weight))
    return T_ * (np.asarray(h) * m_ + np.asarray(g) * q_ - lam) + S[..., 0], m_, q_


def _dual_point(table, h, g, n_, V, conv, T_) -> dict:
    """{c, m, q, free_energy, free_energy_error, h, g} at one point of the dual plane (free_energy_error: T times the
    tilted mean of the row densities' relative Sobol error, the first-order error of T·Λ̄)."""
    lam, m_, q_, err = (float(v[0]) for v in _tilted_moments(table, np.array([h]), np.array([g])))
    S = float(np.asarray(softmax_data_kernel()(m_, q_, n_, V, conv.tau(V), conv.log_det_weight))[0])
    return {"c": float(table.copy_strength(m_)), "m": m_, "q": q_, "free_energy": T_ * (h * m_ + g * q_ - lam) + S,
            "free_energy_error": T_ * err, "h": float(h), "g": float(g)}


def _polish_stationary(table, start, n_, V, conv, T_, scale):
    """Root of the mean-field equations h = −S_m/T, g = −S_q/T near `start` (hybrid Powell); None when it does not
    converge. The fields fix the point exactly, unlike a minimiser's tolerance on the flat F̃."""
    from scipy.optimize import root

    ker = softmax_data_kernel()

    def residual(v):
        _, m_, q_, _ = _tilted_moments(table, np.array([v[0]]), np.array([v[1]]))
        S = np.asarray(ker(m_, q_, n_, V, conv.tau(V), conv.log_det_weight))[0]
        return [v[0] + S[1] / T_, v[1] + S[2] / T_]

    sol = root(residual, np.asarray(start, float), method="hybr", options={"xtol": 1e-13})
    if not sol.success or np.max(np.abs(residual(sol.x))) > 1e-9 * scale:
        return None
    return sol.x


def _mountain_pass(F, cell_a, cell_b):
    """Grid cell of the lowest pass between two cells of F (8-connected sublevel sets): the smallest level λ at which
    {F ≤ λ} joins them, found by bisection over the sorted values of F (scipy.ndimage.label per step)."""
    from scipy import ndimage

    order = np.sort(F.ravel())
    structure = np.ones((3, 3), bool)
    i_lo, i_hi = int(np.searchsorted(order, max(F[cell_a], F[cell_b]))), len(order) - 1
    while i_lo < i_hi:  # invariant: level order[i_hi] joins them
        mid = (i_lo + i_hi) // 2
        labels, _ = ndimage.label(F <= order[mid], structure)
        if labels[cell_a] and labels[cell_a] == labels[cell_b]:
            i_hi = mid
        else:
            i_lo = mid + 1
    return np.unravel_index(int(np.argmin(np.abs(F - order[i_lo]))), F.shape)


class _DualGrid:
    """Λ̄, m, q tabulated on the dual plane for one row set (P-independent); `minima(P)` searches F̃ at one P and
    `saddle(P, a, b)` finds the barrier between two of its minima."""

    def __init__(self, L, V, conv, row_density, n_grid, P_max, extent_factor=1.0):
        self.L, self.V, self.conv, self.n_grid = L, V, conv, n_grid
        self.T = conv.targets(L)
        self.table = row_set(L, conv, row_density)
        eps = 1 - 1 / V
        n_max = conv.n_of_P(P_max, L)
        self.H = extent_factor * (5 * eps * n_max / self.T + 5)
        self.G = extent_factor * (8 * eps * n_max / self.T + 5)
        self.hs, self.gs = np.linspace(0.0, self.H, n_grid), np.linspace(-self.G, 0.0, n_grid)
        self.lam, self.m, self.q = (np.empty((n_grid, n_grid)) for _ in range(3))
        chunk = max(1, 2**21 // (len(self.table.positions) * self.table.x.shape[-1] * n_grid) + 1)
        for i in range(0, n_grid, chunk):
            hh = np.repeat(self.hs[i:i + chunk, None], n_grid, axis=1)
            self.lam[i:i + chunk], self.m[i:i + chunk], self.q[i:i + chunk], _ = _tilted_moments(
                self.table, hh, np.broadcast_to(self.gs, hh.shape))
        self.Hg, self.Gg = np.meshgrid(self.hs, self.gs, indexing="ij")
        self.edge_hits = 0

    def free_energy_grid(self, P):
        n_ = self.conv.n_of_P(float(P), self.L)
        S = np.asarray(softmax_data_kernel()(self.m, self.q, n_, self.V, self.conv.tau(self.V), self.conv.log_det_weight))[..., 0]
        return self.T * (self.Hg * self.m + self.Gg * self.q - self.lam) + S

    def minima(self, P) -> dict:
        """Every grid point below its 8 neighbours, minimised by Nelder–Mead on F̃ and then solved exactly for the
        mean-field equations; minima closer than 2e-3 in c merged. Each minimum keeps its grid cell ("cell")."""
        from scipy.optimize import minimize

        conv, V, T_, table, n_grid = self.conv, self.V, self.T, self.table, self.n_grid
        n_ = conv.n_of_P(float(P), self.L)
        F = self.free_energy_grid(P)
        padded = np.pad(F, 1, constant_values=np.inf)
        lower = np.ones_like(F, bool)
        for di in (-1, 0, 1):
            for dj in (-1, 0, 1):
                if di or dj:
                    lower &= F < padded[1 + di:n_grid + 1 + di, 1 + dj:n_grid + 1 + dj]

        def f(v):
            return float(_dual_free_energy(table, np.array([v[0]]), np.array([v[1]]), n_, V, conv, T_)[0][0])

        found = []
        for i, j in np.argwhere(lower):
            res = minimize(f, [self.hs[i], self.gs[j]], method="Nelder-Mead",
                           options={"xatol": 1e-5 * self.H, "fatol": 1e-8, "maxiter": 600})
            x = res.x
            polished = _polish_stationary(table, x, n_, V, conv, T_, self.H)
            # keep the exact root only if it is the minimum the minimiser was converging to
            if polished is not None and np.hypot(*(polished - x)) < 1e-3 * self.H:
                x = polished
            point = _dual_point(table, x[0], x[1], n_, V, conv, T_)
            point["at_grid_edge"] = bool(x[0] > 0.98 * self.H or x[1] < -0.98 * self.G)
            point["cell"] = (int(i), int(j))
            self.edge_hits += point["at_grid_edge"]
            same = next((mn for mn in found if abs(point["c"] - mn["c"]) < 2e-3), None)
            if same is None:
                found.append(point)
            elif F[point["cell"]] < F[same["cell"]]:
                same["cell"] = point["cell"]
        found.sort(key=lambda mn: mn["c"])
        best = min(found, key=lambda mn: mn["free_energy"])
        return {"P": float(P), "n_minima": len(found), "c_global": best["c"], "minima": found}

    def saddle(self, P, first, second) -> dict:
        """The mountain-pass saddle between two minima (dicts from `minima`): the lowest pass on the grid, solved
        exactly for the mean-field equations from there. "resolved" False when that solve fails or lands on a
        point that is not a saddle of F̃ (its value then is the grid's pass, an upper bound up to the grid error)."""
        n_ = self.conv.n_of_P(float(P), self.L)
        F = self.free_energy_grid(P)
        i, j = _mountain_pass(F, first["cell"], second["cell"])
        args = (self.table, n_, self.V, self.conv, self.T)
        x = _polish_stationary(self.table, [self.hs[i], self.gs[j]], *args[1:], self.H)
        resolved = x is not None and min(abs(x[0] - mn["h"]) + abs(x[1] - mn["g"]) for mn in (first, second)) > 1e-4 * self.H
        if resolved:
            # a saddle of F̃: the Hessian (central differences, step 1e-4 of the grid extent) has one negative eigenvalue
            dh, dg = 1e-4 * self.H, 1e-4 * self.G
            f = lambda a, b: float(_dual_free_energy(self.table, np.array([a]), np.array([b]), *args[1:])[0][0])  # noqa: E731
            f0 = f(*x)
            hxx = (f(x[0] + dh, x[1]) - 2 * f0 + f(x[0] - dh, x[1])) / dh**2
            hyy = (f(x[0], x[1] + dg) - 2 * f0 + f(x[0], x[1] - dg)) / dg**2
            hxy = (f(x[0] + dh, x[1] + dg) - f(x[0] + dh, x[1] - dg) - f(x[0] - dh, x[1] + dg) + f(x[0] - dh, x[1] - dg)) / (4 * dh * dg)
            resolved = hxx * hyy - hxy**2 < 0
        point = _dual_point(self.table, *(x if resolved else (self.hs[i], self.gs[j])), *args[1:])
        point["resolved"] = bool(resolved)
        return point


def _barrier(first, second, top) -> dict:
    return {"from_uniform_side": top["free_energy"] - first["free_energy"],
            "from_copy_side": top["free_energy"] - second["free_energy"], "saddle_m": top["m"], "saddle_c": top["c"],
            "resolved": top["resolved"],
            "error": top["free_energy_error"] + max(first["free_energy_error"], second["free_energy_error"])}


@dataclass
class RowMeanFieldResult:
    """Stationary points of the row mean-field free energy F(m, q) = T Λ̄*(m, q) + S_data(m, q) at one P (softmax).

    minima: every local minimum {m, c, q, free_energy, free_energy_error, h, g, at_grid_edge, cell}, by increasing c
    (c = (T m − H)/(T − H), the copy strength of the plane projection); maxima: the mountain-pass saddle between
    each pair of neighbouring minima (the maximum of F along the best path, "resolved" when solved exactly);
    barriers: for each neighbouring pair the rise from the left (uniform side) and from the right (copy side)
    minimum to that saddle, in units of the Bayesian temperature; outer_barrier: the same between the first and the
    last minimum (None with one minimum). free_energy_error: T times the tilted mean of the row density's relative
    Sobol error (first-order error of T·Λ̄). n_grid, extent: the dual-plane grid searched.
    """

    L: int
    V: int
    P: float
    n: float
    row_density: str
    n_grid: int
    extent: tuple
    minima: list
    maxima: list
    barriers: list
    outer_barrier: dict | None
    status: str
    message: str


def softmax_row_mean_field(L: int, V: int, P: float, convention: model.Convention = model.DEFAULT,
                           row_density: str = "exact", n_grid: int = 100) -> RowMeanFieldResult:
    """Every minimum and the barriers of the row mean-field free energy at P, from a search over the dual plane
    (h, g) of the tilts (see the section comment above): an n_grid² grid of F̃ over h ∈ [0, 5εn/T + 5],
    g ∈ [−8εn/T − 5, 0], every local grid minimum minimised (Nelder–Mead) and solved exactly (h = −S_m/T,
    g = −S_q/T); the barrier between two minima is the mountain pass of F̃ on the grid, solved exactly as a
    stationary point with one negative curvature. A minimum on the grid's far edge: the plane is searched again
    with 2× and 4× the extent (status "grid_edge" if it is still there).

    Causal mask (`convention.boundary == "causal"`): row l attends to l positions, its logit density is that
    of softmax over l Gaussian scores, and F = sup_{h,g} [T(h m + g q) − Σ_l Λ_l(h, g)] + S_data(m, q): each row
    its own Cramér function, rows independent under the prior, the data term seeing them through m and q.
    row_density "hybrid": see `row_set` (for the causal mask at large L). "joint": each row's logit and the
    participation of its other weights from their joint density (the other densities keep the participation at its
    prior mean, which puts the copy minimum 0.01–0.02 too high in c at L = 32…128; see the section comment). Cost: one
    grid (≈ 0.2 s for one row at n_grid = 100, ≈ 2 s with "joint"; rows × that under the mask) plus ≈ 0.1 s per
    minimum and saddle, and for "joint" the table (≈ 5 s at L = 16, 20 s at L = 128, cached)."""
    _, L, V = _check_common("softmax", L, V, convention)
    P = model.check_P(P)
    n_grid = check_int("n_grid", n_grid, 10, 2000)
    if L < 3:
        raise ParameterError("L", L, "an integer >= 3 (a row needs at least two other positions)")
    row_density = check_choice("row_density", row_density, ROW_SET_DENSITIES)
    for extent_factor in (1.0, 2.0, 4.0):
        # the default extent can be short of the copy minimum's g at large L (periodic L = 256 near coexistence:
        # g ≈ −244 against −G = −224); a minimum polished onto the far edge means: search a larger plane
        grid = _DualGrid(L, V, convention, row_density, n_grid, P, extent_factor)
        minima = grid.minima(P)["minima"]
        if not grid.edge_hits:
            break
    maxima = [grid.saddle(P, a, b) for a, b in zip(minima[:-1], minima[1:])]
    barriers = [_barrier(a, b, top) for a, b, top in zip(minima[:-1], minima[1:], maxima)]
    if len(minima) > 2:
        top = grid.saddle(P, minima[0], minima[-1])
        outer = _barrier(minima[0], minima[-1], top)
    else:
        outer = barriers[0] if barriers else None
    unresolved = sum(not mx["resolved"] for mx in maxima)
    status = "grid_edge" if grid.edge_hits else ("saddle_unresolved" if unresolved else "converged")
    msg = (f"{len(minima)} minimum/minima of F ({row_density} row density, {len(grid.table.positions)} distinct row(s), "
           f"{n_grid}² dual-plane grid)" + (f"; {grid.edge_hits} on the grid's far edge" if grid.edge_hits else "")
           + (f"; {unresolved} saddle(s) only to grid resolution" if unresolved else ""))
    return RowMeanFieldResult(L, V, P, convention.n_of_P(P, L), row_density, n_grid, (grid.H, grid.G), minima, maxima, barriers, outer,
                              status, msg)


def softmax_mean_field_window(L: int, V: int, convention: model.Convention = model.DEFAULT,
                              row_density: str = "exact", factors=None, n_grid: int = 100) -> dict:
    """Where the row mean-field free energy has two minima (its spinodal window), against the homogeneous
    action's window, with the barrier where the two minima are equally deep.

    P is scanned on P*_hom × `factors` (default 49 points over 0.6…2.5, spacing 3%; P*_hom is replaced by the
    scale T ln²L/σ² + V² in tokens when the homogeneous action has no transition); when no P has two
    minima, the neighbourhood of the largest jump of the global c is rescanned 12× finer (a narrow window
    sits there). The window ends are refined by bisection to 2^-10 of a step; the coexistence point is the
    root of F_copy − F_uniform (brentq).

    Causal mask: the scan is centred on the homogeneous P* of the drop-first boundary (same T = L − 1 target
    rows, all of length L), since the homogeneous action has no causal form (its rows are all alike).
    """
    from scipy.optimize import brentq

    reference = convention.with_(boundary="drop-first") if convention.boundary == "causal" else convention
    hom = softmax_transition(L, V, reference, digits=10)
    # scan centre: the homogeneous P*, or its natural scale T ln²L/σ² + V² where the homogeneous action has no
    # first-order transition (small L, large V)
    centre = hom.P_star if math.isfinite(hom.P_star) else reference.P_of_n(_n_scale_softmax(L, V, reference), L)
    factors = np.geomspace(0.6, 2.5, 49) if factors is None else np.asarray(factors, float)

    def scan_point(f):
        r = softmax_row_mean_field(L, V, f * centre, convention, row_density, n_grid)
        return {"P": f * centre, "P_over_P_star_homogeneous": float(f), "n_minima": len(r.minima),
                "c_minima": [mn["c"] for mn in r.minima], "barriers": r.barriers,
                "c_global": min(r.minima, key=lambda mn: mn["free_energy"])["c"]}

    scan = [scan_point(f) for f in factors]
    if not any(sp["n_minima"] >= 2 for sp in scan) and len(scan) >= 3:
        # a window narrower than one step sits where the global c jumps most: rescan that cell's
        # neighbourhood 12× finer before calling the onset continuous
        i = int(np.argmax(np.diff([sp["c_global"] for sp in scan])))
        lo_f, hi_f = factors[max(i - 1, 0)], factors[min(i + 2, len(factors) - 1)]
        fine = [scan_point(f) for f in np.geomspace(lo_f, hi_f, 37)[1:-1]]
        scan = sorted(scan + fine, key=lambda sp: sp["P"])
        factors = np.array([sp["P_over_P_star_homogeneous"] for sp in scan])
    two = [s for s in scan if s["n_minima"] >= 2]
    out = {"L": L, "V": V, "row_density": row_density, "homogeneous": {"P_star": hom.P_star, "spinodals": hom.spinodals,
                                                                        "order": hom.order}, "scan": scan}
    if not two:
        jumps = np.diff([s["c_global"] for s in scan])
        i = int(np.argmax(jumps))
        out.update({"order": "continuous", "window": None, "P_coexistence": None, "barrier": None,
                    "steepest_P": math.sqrt(scan[i]["P"] * scan[i + 1]["P"]), "steepest_jump_per_step": float(jumps[i]),
                    "message": "one minimum of F(m) at every P scanned: a continuous (possibly steep) onset"})
        return out

    def minima(P_):
        return softmax_row_mean_field(L, V, P_, convention, row_density, n_grid).minima

    lo, hi, P_co = _window_and_coexistence(scan, minima)
    i_lo, i_hi = scan.index(two[0]), scan.index(two[-1])
    barrier = (softmax_row_mean_field(L, V, P_co, convention, row_density, n_grid).outer_barrier if math.isfinite(P_co)
               else None)
    spacing = scan[i_lo]["P"] / scan[i_lo - 1]["P"] - 1 if i_lo > 0 else factors[1] / factors[0] - 1
    resolution = spacing / 2**10 if 0 < i_lo and i_hi + 1 < len(scan) else spacing
    out.update({"order": "first", "window": (lo, hi), "window_resolution": resolution, "P_coexistence": P_co, "barrier": barrier,
                "message": f"two minima of F(m) for P in [{lo:.6g}, {hi:.6g}] (relative resolution {resolution:.1e}); "
                           "a window narrower than the scan spacing can be missed"})
    return out


def _window_and_coexistence(scan, minima) -> tuple[float, float, float]:
    """Ends of the window of P with two minima and the coexistence point inside it.

    scan: points {"P", "n_minima"} in increasing P with at least one two-minimum point; minima(P) -> the
    minima (each with "free_energy", in increasing c) at P. Each end is refined by geometric bisection on
    "two minima" between the last scan point inside and the first outside (to 2^-10 of one scan step);
    the coexistence point is the root of the depth difference F(copy) − F(uniform) (brentq, 1e-8
    relative), NaN when it does not change sign over the window.
    """
    from scipy.optimize import brentq

    two = [sp for sp in scan if sp["n_minima"] >= 2]

    def refine_end(inside, outside, iterations=10):
        for _ in range(iterations):
            mid = math.sqrt(inside * outside)
            inside, outside = (mid, outside) if len(minima(mid)) >= 2 else (inside, mid)
        return inside

    def depth_difference(P_):
        found = minima(P_)
        return found[-1]["free_energy"] - found[0]["free_energy"] if len(found) >= 2 else math.nan

    i_lo, i_hi = scan.index(two[0]), scan.index(two[-1])
    lo = refine_end(two[0]["P"], scan[i_lo - 1]["P"]) if i_lo > 0 else two[0]["P"]
    hi = refine_end(two[-1]["P"], scan[i_hi + 1]["P"]) if i_hi + 1 < len(scan) else two[-1]["P"]
    d_lo, d_hi = depth_difference(lo), depth_difference(hi)
    P_co = brentq(depth_difference, lo, hi, xtol=1e-8 * hi) if d_lo * d_hi < 0 else math.nan
    return lo, hi, P_co


def softmax_dual_mean_field(L: int, V: int, P_values, convention: model.Convention = model.DEFAULT,
                            row_density: str = "exact", n_grid: int = 80) -> DualMeanField:
    """All minima of the row mean-field free energy at each P, from the dual plane (see the comment above).

    Λ̄ and its gradient are tabulated once on an n_grid × n_grid grid of h ∈ [0, H], g ∈ [−G, 0] with
    H = 5εn_max/T + 5 and G = 8εn_max/T + 5 (a stationary point has h = −S_m/T ≈ εn m/(Tq) and g = −S_q/T of the
    same order); at each P every grid point lower than its 8 neighbours is polished by Nelder–Mead on F̃, and
    minima whose copy strengths differ by less than 2e-3 are merged. A minimum polished onto the far edges of the
    grid is flagged (status "grid_edge"). Cost: the grid, ≈ n_grid² × (rows) × 600 exponentials (about 30 s for
    127 rows at n_grid = 80), then well under a second per P.
    """
    _, L, V = _check_common("softmax", L, V, convention)
    n_grid = check_int("n_grid", n_grid, 10, 2000)
    Ps = [model.check_P(P) for P in np.atleast_1d(np.asarray(P_values, float))]
    if L < 3:
        raise ParameterError("L", L, "an integer >= 3 (a row needs at least two other positions)")
    grid = _DualGrid(L, V, convention, row_density, n_grid, max(Ps))
    points = [grid.minima(P) for P in Ps]
    status = "grid_edge" if grid.edge_hits else "converged"
    return DualMeanField(L, V, row_density, (grid.H, grid.G), n_grid, points, status,
                         f"dual-plane search over {len(Ps)} value(s) of P, {len(grid.table.positions)} distinct row(s), "
                         f"{n_grid}² grid" + (f"; {grid.edge_hits} minimum/minima on the grid's far edge" if grid.edge_hits else ""))


CAUSAL_SOFTMAX_MAX_L = 256


def causal_softmax_transition(L, V, conv, digits=30, row_density: str | None = None, factors=None,
                              n_grid: int = 80) -> TransitionResult:
    """Softmax under the causal mask: the order and P* from the row mean-field free energy (every row l its
    own Cramér function of softmax over l scores), minima found on the dual plane (`softmax_dual_mean_field`).

    P is scanned over `factors` × the drop-first homogeneous P* (default 25 points over 0.3–3, 10% apart; the
    homogeneous action has no causal form), then 12× finer around the steepest rise of the global c. Two minima
    at some P => "first" (window ends bisected on the count of minima, P* = equal depths by brentq, both cheap
    once the grid exists); one minimum at every P => "none" (a continuous onset, P_star NaN; the steepest point
    is reported in details). row_density None: "exact" for L ≤ 64, "hybrid" (exact rows up to l = 64, the
    shortcut beyond) up to L = 256. Cost: the exact row tables (≈ 1 s each, cached) and the grid (≈ 10 s at L =
    32, 60 s at 64 and 128, 3 min at 256); the scan adds seconds. Float64: the digits kept are those the
    scan resolution supports (`supported_digits_string`)."""
    from scipy.optimize import brentq

    if L > CAUSAL_SOFTMAX_MAX_L:
        raise ParameterError("L", L, f"at most {CAUSAL_SOFTMAX_MAX_L} for softmax with boundary 'causal' (a row mean field "
                                     "with L − 1 distinct rows)")
    row_density = ("exact" if L <= HYBRID_EXACT_MAX else "hybrid") if row_density is None else row_density
    factors = np.geomspace(0.3, 3.0, 25) if factors is None else np.asarray(factors, float)
    centre = softmax_transition(L, V, conv.with_(boundary="drop-first"), digits=10).P_star
    if not math.isfinite(centre):
        reference = conv.with_(boundary="drop-first")
        centre = reference.P_of_n(_n_scale_softmax(L, V, reference), L)
    coarse = factors * centre
    # one grid for the whole scan; it covers one coarse step beyond the largest P
    grid = _DualGrid(L, V, conv, row_density, n_grid, coarse[-1] * factors[-1] / factors[-2])
    scan = [grid.minima(P) for P in coarse]
    i = int(np.argmax(np.diff([sp["c_global"] for sp in scan])))
    scan = sorted(scan + [grid.minima(P) for P in np.geomspace(scan[i]["P"], scan[i + 1]["P"], 14)[1:-1]],
                  key=lambda sp: sp["P"])
    summary = [{"P": sp["P"], "n_minima": sp["n_minima"], "c_global": sp["c_global"], "c_minima": [mn["c"] for mn in sp["minima"]]}
               for sp in scan]
    grid_status = "grid_edge" if grid.edge_hits else "converged"
    two = [sp for sp in scan if sp["n_minima"] >= 2]
    if not two:
        jumps = np.diff([sp["c_global"] for sp in scan])
        k = int(np.argmax(jumps))
        return TransitionResult("softmax", L, V, "none", math.nan, "", math.nan, math.nan, status="not_found",
                                message=("causal mask, row mean field (dual-plane search, " + row_density + " row densities): one "
                                         "minimum at every P scanned: a continuous (possibly steep) onset"),
                                details={"steepest_P": math.sqrt(scan[k]["P"] * scan[k + 1]["P"]),
                                         "steepest_jump_per_step": float(jumps[k]), "scan": summary, "grid_status": grid_status})

    lo, hi, P_co = _window_and_coexistence(scan, lambda P_: grid.minima(P_)["minima"])
    err = 1e-8 * hi if math.isfinite(P_co) else math.nan
    pt = grid.minima(P_co) if math.isfinite(P_co) else two[0]
    return TransitionResult("softmax", L, V, "first", P_co, supported_digits_string(P_co, err, digits) if math.isfinite(P_co) else "",
                            err, conv.n_of_P(P_co, L) if math.isfinite(P_co) else math.nan, spinodals=(lo, hi),
                            jump=pt["minima"][-1]["c"] - pt["minima"][0]["c"], status="converged",
                            message=f"causal mask, row mean field (dual-plane search): two minima for P in [{lo:.6g}, {hi:.6g}]",
                            details={"scan": summary, "grid_status": "grid_edge" if grid.edge_hits else "converged"})


def simulate_hysteresis(L: int, V: int, P_values, *, data_sets: int = 2, steps: int = 4000, burn_in: int | None = None,
                        seed: int = 0, device: str = "auto", convention: model.Convention = model.DEFAULT,
                        read_out_start: str = "small") -> dict:
    """Softmax hysteresis test: at each P, `data_sets` independent training sets, each sampled by two MALA
    chains, one started uniform (scores 0) and one started copy (scores 2 ln L on the previous position).

    Per chain: the time-mean copy strength c with a batch-means error. Per P and start: the mean over
    data sets with the standard error over data sets (which includes the data-set-to-data-set spread the
    self-averaged theory does not have). The hysteresis statistic is the paired difference
    Δc = c(copy start) − c(uniform start) on the same data set, its mean and standard error over data sets
    (for one data set, the two chains' batch-means errors combined). In equilibrium Δc = 0; two
    starts stuck in different minima give Δc ≈ the jump of the homogeneous theory. `c_trace` (per chain,
    every 10 steps after burn-in) gives the histograms. read_out_start: see `validate.sgld.run_langevin` ("small", the
    default, lets a copy start fall below its equilibrium first at L = 128; "conditional" starts W at its posterior
    mean given the start).
    """
    from attnphase.validate import sgld
    from attnphase.validate.device import select_device
    from attnphase.validate.seeds import generator

    _, L, V = _check_common("softmax", L, V, convention)
    P_values = [model.check_P(P) for P in P_values]
    data_sets = check_int("data_sets", data_sets, 1, 1000)
    steps = check_int("steps", steps, 20, 10**7)
    cfg = network_config("softmax", L, V, convention)
    dev = select_device(device)
    gen = generator(seed, dev)
    T_ = convention.targets(L)
    n_seqs = [max(1, int(round(P / T_))) if convention.P_counts == "tokens" else max(1, int(round(P))) for P in P_values]
    tokens = [sgld.sample_tokens(k, cfg, gen, dev) for k in n_seqs for _ in range(data_sets)]
    train = sgld.statistics(tokens, V, boundary=cfg.boundary).repeat(2)
    test = sgld.statistics([sgld.sample_tokens(500, cfg, gen, dev)], V, boundary=cfg.boundary)
    starts = ["uniform", "copy"] * len(tokens)
    run = sgld.run_langevin(cfg, train, test, starts, steps=steps, burn_in=burn_in, seed=seed + 1, device=str(dev),
                            record_matrices=False, read_out_start=read_out_start)
    points = []
    for i, k in enumerate(n_seqs):
        P_used = k * T_ if convention.P_counts == "tokens" else k
        chains, deltas, delta_errs = [], [], []
        for d in range(data_sets):
            j = 2 * (i * data_sets + d)
            pair = []
            for start, idx in (("uniform", j), ("copy", j + 1)):
                bm = _batch_means(run.c_trace[idx][None])[0]
                sem = float(bm.std(ddof=1) / math.sqrt(len(bm)))
                chains.append({"data_set": d, "start": start, "c": float(run.c_trace[idx].mean()), "c_sem": sem,
                               "acceptance": float(run.acceptance[idx]), "c_trace": run.c_trace[idx]})
                pair.append((float(run.c_trace[idx].mean()), sem))
            deltas.append(pair[1][0] - pair[0][0])
            delta_errs.append(math.hypot(pair[0][1], pair[1][1]))
        per_start = {}
        for start in ("uniform", "copy"):
            cs = np.array([ch["c"] for ch in chains if ch["start"] == start])
            sems = np.array([ch["c_sem"] for ch in chains if ch["start"] == start])
            err = float(cs.std(ddof=1) / math.sqrt(len(cs))) if len(cs) > 1 else float(sems[0])
            per_start[start] = {"c": float(cs.mean()), "c_err": err}
        deltas = np.array(deltas)
        d_err = float(deltas.std(ddof=1) / math.sqrt(len(deltas))) if len(deltas) > 1 else delta_errs[0]
        points.append({"P": P_used, "sequences": k, "uniform_start": per_start["uniform"], "copy_start": per_start["copy"],
                       "delta_c": float(deltas.mean()), "delta_c_err": d_err, "chains": chains})
    return {"L": L, "V": V, "steps": steps, "data_sets": data_sets, "points": points, "status": run.status,
            "message": run.message}


@lru_cache(maxsize=None)
def _torch_data_term():
    """models.copy_heads.data_action_rows compiled for torch (autograd): S_data(m, q, t1, t2; n, V, τ, ℓ_W)."""
    args = [model.m, model.q, model.sum_t, model.sum_t2, model.n, model.V, model.tau, model.ld]
    return compile_kernel(model.data_action_rows(model.m, model.q, model.sum_t, model.sum_t2), args, backend="torch")


def simulate_row_model(L: int, V: int, P: float, *, chains: int = 8, steps: int = 3000, seed: int = 0,
                       device: str = "auto", convention: model.Convention = model.DEFAULT) -> dict:
    """Softmax: MALA of the row model, the attention scores under the self-averaged data term S_data(m, q) (no data
    set; `validate.sgld.run_row_model`), chains alternating uniform and copy starts. It is the model the row mean field
    approximates by its saddle point over (m, q) (and, with row_density "exact", by each row's mean participation),
    and it differs from the sampled network (`simulate`, `simulate_hysteresis`) only by the finite data set; comparing
    the three separates the approximations.

    Returns {"P", "n", "c", "c_err", "q", "q_err", "per_chain_c", "acceptance", "status", "message"}: time means over
    the chains after burn-in, errors from batch means (10 batches per chain)."""
    from attnphase.validate import sgld
    from attnphase.validate.device import select_device

    _, L, V = _check_common("softmax", L, V, convention)
    P = model.check_P(P)
    chains = check_int("chains", chains, 1, 4096)
    steps = check_int("steps", steps, 20, 10**7)
    if chains * L * L > MAX_SIMULATION_ENTRIES:
        raise ParameterError("chains", chains, f"at most {MAX_SIMULATION_ENTRIES // (L * L)} for L = {L}")
    cfg = network_config("softmax", L, V, convention)
    dev = select_device(device)
    n_ = convention.n_of_P(P, L)
    kernel = _torch_data_term()
    tau_, ld_ = convention.tau(V), convention.log_det_weight

    def data_term(m_, q_, t1, t2):
        return kernel(m_, q_, t1, t2, n_, V, tau_, ld_)

    starts = [("uniform", "copy")[i % 2] for i in range(chains)]
    run = sgld.run_row_model(cfg, data_term, starts, steps=steps, seed=seed, device=str(dev))
    out = {"P": P, "n": n_}
    for name in ("c", "q"):
        batches = _batch_means(getattr(run, name)).reshape(-1)
        out[name] = float(batches.mean())
        out[name + "_err"] = float(batches.std(ddof=1) / math.sqrt(len(batches)))
    out.update(per_chain_c=run.c.mean(-1).tolist(), acceptance=run.acceptance.tolist(), status=run.status,
               message=run.message)
    return out


@dataclass
class RowPosteriorMeans:
    """Means of the order parameters over each well of the row mean field's posterior (`softmax_row_posterior_means`).

    wells: per minimum of F (by increasing c) {c_mode, c_mean, c_sd, q_mode, q_mean, m_mean, error, edge_weight}:
    mode = the minimum of F, mean/sd over the well; error: quadrature error of c_mean (full against half the grid
    points); edge_weight: the largest weight on one side of the integration box (the box must hold the well).
    Means are NaN, and status "not_convex", for a minimum where the finite-difference Hessian of F̃ is not positive."""

    L: int
    V: int
    P: float
    row_density: str
    wells: list
    status: str
    message: str


def _row_covariance(table: RowSet, h, g):
    """(Λ̄, m, q, det ∇²Λ̄) at tilts (h, g): ∇²Λ̄ is the row-averaged covariance of (a, q) under the tilted density."""
    h, g = np.asarray(h, float)[..., None, None], np.asarray(g, float)[..., None, None]
    exponent = table.log_weight + h * table.a + g * table.q
    top = exponent.max(axis=-1, keepdims=True)
    w = np.exp(exponent - top)
    Z = w.sum(-1)
    weights = table.multiplicity / table.targets

    def mean(values):
        return np.einsum("...rx,rx->...r", w, values) / Z

    ma, mq = mean(table.a), mean(table.q)
    vaa, vqq, vaq = mean(table.a**2) - ma**2, mean(table.q**2) - mq**2, mean(table.a * table.q) - ma * mq
    avg = lambda v: (v * weights).sum(-1)  # noqa: E731
    return avg(top[..., 0] + np.log(Z)), avg(ma), avg(mq), avg(vaa) * avg(vqq) - avg(vaq) ** 2


def softmax_row_posterior_means(L: int, V: int, P: float, convention: model.Convention = model.DEFAULT,
                                row_density: str = "joint", span: float = 10.0, n_points: int = 81) -> RowPosteriorMeans:
    """Means of c, q over the posterior of the row averages (m, q) instead of their values at the minimum of F.

    The average of T independent rows has the saddle-point (Daniels) density
        p(m, q) ≈ (T/2π) det(∇²Λ̄)^{−1/2} exp(−T Λ̄*(m, q))     (relative error O(1/T)),
    so the posterior is ∝ det(∇²Λ̄)^{−1/2} exp(−F(m, q)); on the dual plane (dm dq = det ∇²Λ̄ dh dg) it is
    ∝ det(∇²Λ̄(h, g))^{1/2} exp(−F̃(h, g)). Integrated by the trapezoid rule on an n_points² box of ±span standard
    deviations along the principal axes of F̃'s Hessian at each minimum (finite differences), cut at the c of the
    neighbouring saddles so that each well is averaged alone (what a chain that stays in one well measures). The
    prefactor moves the mean at the same order O(1/T) as the skewness of F, so both are kept; the error of the
    Daniels density moves the mean at O(1/T²)."""
    _, L, V = _check_common("softmax", L, V, convention)
    span = check_real("span", span, 2.0, 20.0)
    n_points = check_int("n_points", n_points, 11, 1001)
    mf = softmax_row_mean_field(L, V, P, convention, row_density)
    table = row_set(L, convention, row_density)
    T_, n_ = convention.targets(L), convention.n_of_P(P, L)
    ker = softmax_data_kernel()

    def weight_terms(h, g):
        # in slices of the box: the tilted averages hold (points × rows × atoms) numbers
        if np.ndim(h) == 2 and h.shape[0] > 1:
            parts = [weight_terms(h[i:i + 1], g[i:i + 1]) for i in range(h.shape[0])]
            return tuple(np.concatenate(v) for v in zip(*parts))
        lam, m_, q_, det = _row_covariance(table, h, g)
        S = np.asarray(ker(m_, q_, n_, V, convention.tau(V), convention.log_det_weight))[..., 0]
        return T_ * (h * m_ + g * q_ - lam) + S, m_, q_, det

    cuts = [-math.inf] + [mx["c"] for mx in mf.maxima] + [math.inf]
    wells = []
    for i, mn in enumerate(mf.minima):
        h0, g0 = mn["h"], mn["g"]
        dh, dg = 1e-3 * max(1.0, abs(h0)), 1e-3 * max(1.0, abs(g0))
        f = lambda a, b: float(weight_terms(np.array([a]), np.array([b]))[0][0])  # noqa: E731
        f0 = f(h0, g0)
        hess = np.array([[(f(h0 + dh, g0) - 2 * f0 + f(h0 - dh, g0)) / dh**2, 0.0],
                         [0.0, (f(h0, g0 + dg) - 2 * f0 + f(h0, g0 - dg)) / dg**2]])
        hess[0, 1] = hess[1, 0] = (f(h0 + dh, g0 + dg) - f(h0 + dh, g0 - dg) - f(h0 - dh, g0 + dg)
                                   + f(h0 - dh, g0 - dg)) / (4 * dh * dg)
        curv, axes = np.linalg.eigh(hess)
        if curv[0] <= 0:  # the finite-difference Hessian does not see a minimum: no box to integrate on
            wells.append({"c_mode": mn["c"], "c_mean": math.nan, "c_sd": math.nan, "q_mode": mn["q"], "q_mean": math.nan,
                          "m_mean": math.nan, "error": math.nan, "edge_weight": math.nan})
            continue

        def average(n):
            u = np.linspace(-span, span, n)
            U1, U2 = np.meshgrid(u, u, indexing="ij")
            offset = np.stack([U1, U2], -1) / np.sqrt(curv) @ axes.T
            F, m_, q_, det = weight_terms(h0 + offset[..., 0], g0 + offset[..., 1])
            c_ = table.copy_strength(m_)
            logw = -(F - f0) + 0.5 * np.log(det)
            logw = np.where((c_ > cuts[i]) & (c_ < cuts[i + 1]), logw, -np.inf)
            w = np.exp(logw - logw.max())
            w /= w.sum()
            # weight on the box's outermost points: the mass beyond the box is of that order, and it can move the
            # mean by at most that mass times the range of c over the box
            edge = max(w[0].sum(), w[-1].sum(), w[:, 0].sum(), w[:, -1].sum()) * float(np.ptp(c_[np.isfinite(logw)]))
            c_mean = float((w * c_).sum())
            return c_mean, float(np.sqrt(max(0.0, (w * c_**2).sum() - c_mean**2))), float((w * q_).sum()), \
                float((w * m_).sum()), float(edge)

        c_mean, c_sd, q_mean, m_mean, edge = average(n_points)
        coarse = average(n_points // 2 + 1)[0]
        wells.append({"c_mode": mn["c"], "c_mean": c_mean, "c_sd": c_sd, "q_mode": mn["q"], "q_mean": q_mean,
                      "m_mean": m_mean, "error": abs(c_mean - coarse) + edge, "edge_weight": edge})
    not_convex = [w for w in wells if math.isnan(w["c_mean"])]
    bad = [w for w in wells if w["edge_weight"] > 1e-2 * w["c_sd"]]
    status = ("not_convex" if not_convex else "box_too_small" if bad else mf.status)
    return RowPosteriorMeans(L, V, float(P), row_density, wells, status,
                             f"Daniels posterior over each of {len(wells)} well(s), {n_points}² trapezoid box of ±{span} "
                             f"standard deviations; mean field: {mf.message}")


# -- softmax: one finite data set (quenched disorder) to second order ------------------------------------
# The row mean field uses the self-averaged data term. A data set of N_s sequences adds, to first order (model:
# `finite_data_field_coefficients`), δS = −Σ_l η_l Σ_{m≠l−1} G_lm ζ_{m,l−1} + (pairs of non-copy weights), with
# η_l = η_B − 2κ a_l (the copy weight a_l enters through the M-term pairs (l−1, m)) and the pair counts ζ (mean 0,
# variance N_s ε/V, uncorrelated). The rows are independent at fixed tilts, so the posterior of (m, q) for one data
# set, averaged over data sets, gains −½ E_ζ Var(δS | m, q) (its mean E_ζ⟨δS⟩ vanishes; the term linear in ζ only
# spreads c from data set to data set). Row l attends to l positions; its l − 1 non-copy weights are exchangeable:
#     ΔF(m, q) = −½ (N_s ε/V) Σ_l { E_l(η_l² (q_l − a_l²)) − (E_l[η_l (1 − a_l)])² / (l − 1)
#                                   + 2κ² [E_l((1 − a_l)⁴ W_l) − (E_l[(1 − a_l)² − (q_l − a_l²)])² / ((l − 1)(l − 2))] },
# E_l the tilted row average at the (h, g) of (m, q), q_l − a_l² = (1 − a_l)² Y_l the non-copy weights' squares and
# W_l = Σ_{m≠m'} w_m² w_m'² (the second line: the pairs of two non-copy weights, κ G_lm G_lm' ζ_mm'; 20–40% of ΔF at
# L = 32…128 because κ ≫ η_l). The network fits the pair-count noise with its non-copy weights; the gain falls with
# the copy weight a, so ΔF pulls c down. Dropped: orders ζ³ and beyond, and the O(V) terms of second order in (dM, dB)
# that do not grow with T.
@lru_cache(maxsize=None)
def _finite_data_kernel():
    eta_B, kappa = model.finite_data_field_coefficients(model.m, model.q)
    args = [model.m, model.q, model.n, model.V, model.tau, model.ld, model.beta_t]
    return compile_kernel([eta_B, kappa], args, compiler="none")


@dataclass
class FiniteDataCorrection:
    """Minima of F + ΔF (`softmax_finite_data_correction`), one per minimum of the row mean field F, by increasing c.

    wells: {c_mean_field, c_corrected, shift, delta_F (ΔF at the corrected minimum), h, g}; sequences: N_s."""

    L: int
    V: int
    P: float
    sequences: float
    row_density: str
    wells: list
    status: str
    message: str


def softmax_finite_data_correction(L: int, V: int, P: float, convention: model.Convention = model.DEFAULT,
                                   row_density: str = "joint") -> FiniteDataCorrection:
    """The row mean field with one finite data set's second-order (quenched) correction: every minimum of F(m, q)
    continued to the minimum of F + ΔF nearby (ΔF in the section comment above), on the dual plane (Nelder–Mead
    from the mean-field minimum's tilts). One-hot tokens only (the pair counts are those of one-hot inputs)."""
    from scipy.optimize import minimize

    _, L, V = _check_common("softmax", L, V, convention)
    P = model.check_P(P)
    if convention.centred:
        raise ParameterError("tokens", convention.tokens, "'one-hot' (the pair-count fluctuations are those of one-hot inputs)")
    row_density = check_choice("row_density", row_density, ("joint",))  # needs each row's non-copy pair weights
    mf = softmax_row_mean_field(L, V, P, convention, row_density)
    table = row_set(L, convention, row_density)
    others = table.positions[:, None] - 1
    off_pairs = np.maximum(others * (others - 1), 1.0)  # ordered pairs of non-copy weights (none for l = 2)
    T_, n_ = convention.targets(L), convention.n_of_P(P, L)
    beta_ = convention.beta_per_target(L)
    sequences = n_ / beta_ / T_
    eps = 1 - 1 / V
    weights = table.multiplicity / table.targets
    ker, coef = softmax_data_kernel(), _finite_data_kernel()
    tau_, ld_ = convention.tau(V), convention.log_det_weight

    def total(v):
        h, g = v
        exponent = table.log_weight + h * table.a + g * table.q
        top = exponent.max(axis=-1, keepdims=True)
        w = np.exp(exponent - top)
        Z = w.sum(axis=-1)
        w /= Z[:, None]
        lam = float((weights * (top[:, 0] + np.log(Z))).sum())
        m_ = float((weights * (w * table.a).sum(-1)).sum())
        q_ = float((weights * (w * table.q).sum(-1)).sum())
        S = float(np.asarray(ker(m_, q_, n_, V, tau_, ld_))[0])
        eta_B, kappa = (float(v_) for v_ in np.asarray(coef(m_, q_, n_, V, tau_, ld_, beta_), float))
        eta = eta_B - 2 * kappa * table.a
        rest, squares = (1 - table.a) ** 2, table.q - table.a**2
        copy_pairs = (w * eta**2 * squares).sum(-1) - (w * eta * (1 - table.a)).sum(-1) ** 2 / (table.positions - 1)
        other_pairs = ((w * rest**2 * table.pair_participation).sum(-1)
                       - (w * (rest - squares)).sum(-1) ** 2 / off_pairs[:, 0])
        per_row = copy_pairs + 2 * kappa**2 * other_pairs
        delta_F = -0.5 * sequences * eps / V * T_ * float((weights * per_row).sum())
        return T_ * (h * m_ + g * q_ - lam) + S, delta_F, m_

    wells = []
    for mn in mf.minima:
        res = minimize(lambda v: sum(total(v)[:2]), [mn["h"], mn["g"]], method="Nelder-Mead",
                       options={"xatol": 1e-7 * max(1.0, abs(mn["h"])), "fatol": 1e-10, "maxiter": 4000})
        _, delta_F, m_ = total(res.x)
        c_ = float(table.copy_strength(m_))
        wells.append({"c_mean_field": mn["c"], "c_corrected": c_, "shift": c_ - mn["c"], "delta_F": delta_F,
                      "h": float(res.x[0]), "g": float(res.x[1]), "converged": bool(res.success)})
    ok = all(w["converged"] for w in wells) and mf.status == "converged"
    return FiniteDataCorrection(L, V, float(P), sequences, row_density, wells, "converged" if ok else "failed",
                                f"second-order finite-data correction of {len(wells)} minimum/minima ({row_density} rows, "
                                f"{sequences:.4g} sequences); mean field: {mf.message}")
