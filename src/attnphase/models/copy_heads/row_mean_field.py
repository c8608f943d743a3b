"""The softmax row mean field: the free energy F(m, q) = T Λ̄*(m, q) + S_data(m, q), searched on the dual plane.

The map (h, g) ↦ (m, q) = ∇Λ̄(h, g) (Λ̄ the row-averaged cumulant function of `row_tables`) is a bijection (Λ̄
strictly convex), so F is also a function on the dual plane,
    F̃(h, g) = T(h m + g q − Λ̄) + S_data(m, q),  (m, q) = ∇Λ̄(h, g),
with the same stationary points of the same type (∇F̃ = ∇²Λ̄ · ∇F, ∇²Λ̄ positive definite): minima are h = −S_m/T,
g = −S_q/T, and a path between two minima maps to a path, so the mountain-pass saddle (the barrier) is the same in
both planes. An earlier solver followed one path through this plane (for each tilt h one root g of the q-condition
T g + S_q = 0); that condition has several roots on the copy branch, and the path could follow the wrong one:
periodic L = 64 (exact density) at P = 2000 it reported a copy minimum c = 0.209 with F = −308.9 where F̃ reaches
−317.4 at c = 0.261. Searching the plane (`numeric.landscape`) does not depend on that choice, and Λ̄ on a grid of
(h, g) does not depend on P, so one grid serves a whole scan over P.

The homogeneous action is the limit of F when each row's tilted density concentrates (large fields, large L); at
L ~ 32 it does not, and the homogeneous barrier (22 units at L = 32) does not exist in F. Under the causal mask
each row l has its own Cramér function (softmax over l scores) and the homogeneous action has no causal form.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from attnphase.errors import ParameterError
from attnphase.models.copy_heads import kernels
from attnphase.models.copy_heads.convention import DEFAULT, Convention
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.parameters import DataSize, check_P_values
from attnphase.models.copy_heads.results import MeanFieldScanPoint, RowMeanFieldTransition
from attnphase.models.copy_heads.row_mean_field_results import (
    Barrier, DualMeanField, MeanFieldMinima, MeanFieldPoint, MeanFieldWindow, RowMeanFieldResult, WindowScanPoint,
)
from attnphase.models.copy_heads.row_tables import (
    CAUSAL_SOFTMAX_MAX_L, HYBRID_EXACT_MAX, ROW_SET_DENSITIES, check_row_set_size, row_set, tilted_row_moments,
)
from attnphase.models.copy_heads.softmax_transition import softmax_n_scale, softmax_transition
from attnphase.numeric.digits import FLOAT64_DIGITS, digit_string, supported_digits
from attnphase.numeric.landscape import central_hessian_2d, mountain_pass, polish_and_merge
from attnphase.numeric.threshold import window_and_coexistence
from attnphase.params import check_choice, check_int
from attnphase.results import Status

__all__ = ["CAUSAL_SOFTMAX_MAX_L", "DualGrid", "barrier", "softmax_instance", "row_mean_field",
           "softmax_row_mean_field", "softmax_mean_field_window", "softmax_dual_mean_field", "causal_softmax_transition"]


def softmax_instance(L: int, V: int, convention: Convention) -> CopyHeadsInstance:
    """The validated softmax instance of a row mean field (which needs rows with two other positions, and row
    tables of a size `row_tables.check_row_set_size` allows: checked here, before any work)."""
    inst = CopyHeadsInstance.validated(attention="softmax", L=L, V=V, convention=convention)
    if inst.L < 3:
        raise ParameterError("L", inst.L, "an integer >= 3 (a row needs at least two other positions)")
    check_row_set_size(inst.L, inst.convention.boundary)
    return inst


class DualGrid:
    """Λ̄, m, q tabulated on the dual plane for one row set (P-independent); `minima(P)` searches F̃ at one P and
    `saddle(P, a, b)` finds the barrier between two of its minima.

    Extent: h ∈ [0, H], g ∈ [−G, 0] with H = f(5εn_max/T + 5), G = f(8εn_max/T + 5) (a stationary point has
    h = −S_m/T ≈ εn m/(Tq) and g = −S_q/T of the same order), f = `extent_factor`."""

    def __init__(self, inst: CopyHeadsInstance, row_density: str, n_grid: int, P_max: float, extent_factor: float = 1.0):
        self.inst, self.n_grid, self.T = inst, n_grid, inst.T
        self.table = row_set(inst.L, inst.convention, row_density)
        self.data = kernels.bind(kernels.softmax_data_kernel(), inst.values())
        eps = 1 - 1 / inst.V
        n_max = inst.n_of_P(P_max)
        self.H = extent_factor * (5 * eps * n_max / self.T + 5)
        self.G = extent_factor * (8 * eps * n_max / self.T + 5)
        self.hs, self.gs = np.linspace(0.0, self.H, n_grid), np.linspace(-self.G, 0.0, n_grid)
        self.lam, self.m, self.q = (np.empty((n_grid, n_grid)) for _ in range(3))
        chunk = max(1, 2**21 // (len(self.table.positions) * self.table.x.shape[-1] * n_grid) + 1)
        for i in range(0, n_grid, chunk):
            hh = np.repeat(self.hs[i:i + chunk, None], n_grid, axis=1)
            self.lam[i:i + chunk], self.m[i:i + chunk], self.q[i:i + chunk], _ = tilted_row_moments(
                self.table, hh, np.broadcast_to(self.gs, hh.shape))
        self.Hg, self.Gg = np.meshgrid(self.hs, self.gs, indexing="ij")
        self.edge_hits = 0

    def free_energy(self, h, g, n_):
        """F̃(h, g) and the (m, q) it belongs to, at tilts (arrays)."""
        lam, m_, q_, _ = tilted_row_moments(self.table, h, g)
        return self.T * (np.asarray(h) * m_ + np.asarray(g) * q_ - lam) + np.asarray(self.data(m_, q_, n_))[..., 0], m_, q_

    def point(self, h, g, n_, **flags) -> MeanFieldPoint:
        """The point of the dual plane at (h, g); free_energy_error: T times the tilted mean of the row densities'
        relative Sobol error, the first-order error of T·Λ̄."""
        lam, m_, q_, err = (float(v[0]) for v in tilted_row_moments(self.table, np.array([h]), np.array([g])))
        S = float(np.asarray(self.data(m_, q_, n_))[0])
        return MeanFieldPoint(float(self.table.copy_strength(m_)), m_, q_, self.T * (h * m_ + g * q_ - lam) + S,
                              self.T * err, float(h), float(g), **flags)

    def polish(self, start, n_):
        """Root of the mean-field equations h = −S_m/T, g = −S_q/T near `start` (hybrid Powell); None when it does
        not converge. The fields fix the point exactly, unlike a minimiser's tolerance on the flat F̃."""
        from scipy.optimize import root

        def residual(v):
            _, m_, q_, _ = tilted_row_moments(self.table, np.array([v[0]]), np.array([v[1]]))
            S = np.asarray(self.data(m_, q_, n_))[0]
            return [v[0] + S[1] / self.T, v[1] + S[2] / self.T]

        sol = root(residual, np.asarray(start, float), method="hybr", options={"xtol": 1e-13})
        if not sol.success or np.max(np.abs(residual(sol.x))) > 1e-9 * self.H:
            return None
        return sol.x

    def free_energy_grid(self, P) -> np.ndarray:
        S = np.asarray(self.data(self.m, self.q, self.inst.n_of_P(float(P))))[..., 0]
        return self.T * (self.Hg * self.m + self.Gg * self.q - self.lam) + S

    def minima(self, P) -> MeanFieldMinima:
        """Every grid point below its 8 neighbours, minimised by Nelder–Mead on F̃ and then solved exactly for the
        mean-field equations; minima closer than 2e-3 in c merged. Each minimum keeps its grid cell."""
        from scipy.optimize import minimize

        n_ = self.inst.n_of_P(float(P))

        def f(v):
            return float(self.free_energy(np.array([v[0]]), np.array([v[1]]), n_)[0][0])

        def polish(cell):
            i, j = cell
            x = minimize(f, [self.hs[i], self.gs[j]], method="Nelder-Mead",
                         options={"xatol": 1e-5 * self.H, "fatol": 1e-8, "maxiter": 600}).x
            polished = self.polish(x, n_)
            # keep the exact root only if it is the minimum the minimiser was converging to
            if polished is not None and np.hypot(*(polished - x)) < 1e-3 * self.H:
                x = polished
            edge = bool(x[0] > 0.98 * self.H or x[1] < -0.98 * self.G)
            self.edge_hits += edge
            return self.point(x[0], x[1], n_, at_grid_edge=edge)

        merged = polish_and_merge(self.free_energy_grid(P), polish, lambda point: point.c, 2e-3)
        found = sorted((dataclasses.replace(point, cell=cell) for point, cell in merged), key=lambda mn: mn.c)
        best = min(found, key=lambda mn: mn.free_energy)
        return MeanFieldMinima(float(P), len(found), best.c, tuple(found))

    def saddle(self, P, first: MeanFieldPoint, second: MeanFieldPoint) -> MeanFieldPoint:
        """The mountain-pass saddle between two minima: the lowest pass on the grid, solved exactly for the
        mean-field equations from there. resolved False when that solve fails or lands on a point that is not a
        saddle of F̃ (its value then is the grid's pass, an upper bound up to the grid error)."""
        n_ = self.inst.n_of_P(float(P))
        i, j = mountain_pass(self.free_energy_grid(P), first.cell, second.cell)
        x = self.polish([self.hs[i], self.gs[j]], n_)
        resolved = x is not None and min(abs(x[0] - mn.h) + abs(x[1] - mn.g) for mn in (first, second)) > 1e-4 * self.H
        if resolved:
            # a saddle of F̃: the Hessian (central differences, step 1e-4 of the grid extent) has one negative eigenvalue
            hessian = central_hessian_2d(lambda a, b: float(self.free_energy(np.array([a]), np.array([b]), n_)[0][0]),
                                         x[0], x[1], 1e-4 * self.H, 1e-4 * self.G)
            resolved = hessian[0, 0] * hessian[1, 1] - hessian[0, 1] ** 2 < 0
        h, g = x if resolved else (self.hs[i], self.gs[j])
        return self.point(h, g, n_, resolved=bool(resolved))


def barrier(first: MeanFieldPoint, second: MeanFieldPoint, top: MeanFieldPoint) -> Barrier:
    return Barrier(top.free_energy - first.free_energy, top.free_energy - second.free_energy, top.m, top.c, top.resolved,
                   top.free_energy_error + max(first.free_energy_error, second.free_energy_error))


def row_mean_field(inst: CopyHeadsInstance, P: float, row_density: str = "exact", n_grid: int = 100) -> RowMeanFieldResult:
    """`softmax_row_mean_field` for a validated softmax instance (L ≥ 3) and P."""
    for extent_factor in (1.0, 2.0, 4.0):
        # the default extent can be short of the copy minimum's g at large L (periodic L = 256 near coexistence:
        # g ≈ −244 against −G = −224); a minimum polished onto the far edge means: search a larger plane
        grid = DualGrid(inst, row_density, n_grid, P, extent_factor)
        minima = grid.minima(P).minima
        if not grid.edge_hits:
            break
    maxima = tuple(grid.saddle(P, a, b) for a, b in zip(minima[:-1], minima[1:]))
    barriers = tuple(barrier(a, b, top) for a, b, top in zip(minima[:-1], minima[1:], maxima))
    if len(minima) > 2:
        outer = barrier(minima[0], minima[-1], grid.saddle(P, minima[0], minima[-1]))
    else:
        outer = barriers[0] if barriers else None
    unresolved = sum(not mx.resolved for mx in maxima)
    status = Status.LIMITED if grid.edge_hits or unresolved else Status.CONVERGED
    message = (f"{len(minima)} minimum/minima of F ({row_density} row density, {len(grid.table.positions)} distinct "
               f"row(s), {n_grid}² dual-plane grid)" + (f"; {grid.edge_hits} on the grid's far edge" if grid.edge_hits else "")
               + (f"; {unresolved} saddle(s) only to grid resolution" if unresolved else ""))
    return RowMeanFieldResult(inst.L, inst.V, P, inst.n_of_P(P), row_density, n_grid, (grid.H, grid.G), minima, maxima,
                              barriers, outer, status, message)


def softmax_row_mean_field(L: int, V: int, P: float, convention: Convention = DEFAULT, row_density: str = "exact",
                           n_grid: int = 100) -> RowMeanFieldResult:
    """Every minimum and the barriers of the row mean-field free energy at P, from a search over the dual plane
    (h, g) of the tilts (module docstring): an n_grid² grid of F̃ over h ∈ [0, 5εn/T + 5], g ∈ [−8εn/T − 5, 0],
    every local grid minimum minimised (Nelder–Mead) and solved exactly (h = −S_m/T, g = −S_q/T); the barrier
    between two minima is the mountain pass of F̃ on the grid, solved exactly as a stationary point with one
    negative curvature. A minimum on the grid's far edge: the plane is searched again with 2× and 4× the extent
    (status limited if it is still there, or when a saddle is resolved only to the grid).

    Causal mask (`convention.boundary == "causal"`): row l attends to l positions, its logit density is that
    of softmax over l Gaussian scores, and F = sup_{h,g} [T(h m + g q) − Σ_l Λ_l(h, g)] + S_data(m, q): each row
    its own Cramér function, rows independent under the prior, the data term seeing them through m and q.
    row_density "hybrid": see `row_tables.row_set` (for the causal mask at large L). "joint": each row's logit and
    the participation of its other weights from their joint density (the other densities keep the participation at
    its prior mean, which puts the copy minimum 0.01–0.02 too high in c at L = 32…128; see `row_tables`). Cost: one
    grid (≈ 0.2 s for one row at n_grid = 100, ≈ 2 s with "joint"; rows × that under the mask) plus ≈ 0.1 s per
    minimum and saddle, and for "joint" the table (≈ 5 s at L = 16, 20 s at L = 128, cached)."""
    inst = softmax_instance(L, V, convention)
    P = DataSize.validated(P=P).P
    n_grid = check_int("n_grid", n_grid, 10, 2000)
    row_density = check_choice("row_density", row_density, ROW_SET_DENSITIES)
    return row_mean_field(inst, P, row_density, n_grid)


def softmax_mean_field_window(L: int, V: int, convention: Convention = DEFAULT, row_density: str = "exact", factors=None,
                              n_grid: int = 100) -> MeanFieldWindow:
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
    inst = softmax_instance(L, V, convention)
    n_grid = check_int("n_grid", n_grid, 10, 2000)
    row_density = check_choice("row_density", row_density, ROW_SET_DENSITIES)
    reference = inst.with_convention(convention.with_(boundary="drop-first")) if inst.causal else inst
    hom = softmax_transition(reference, digits=10)
    # scan centre: the homogeneous P*, or its natural scale where the homogeneous action has no first-order transition
    centre = hom.P_star if math.isfinite(hom.P_star) else reference.P_of_n(softmax_n_scale(reference))
    if factors is None:
        factors = np.geomspace(0.6, 2.5, 49)
    else:  # P = factor × centre is a data size (> 0); the steepest rise and the spacing need 3 distinct points
        factors = np.array(sorted(set(check_P_values("factors", factors))))
        if len(factors) < 3:
            raise ParameterError("factors", factors.tolist(), "at least 3 distinct numbers > 0")

    def solved(P_):
        return row_mean_field(inst, P_, row_density, n_grid)

    def scan_point(f):
        r = solved(f * centre)
        return WindowScanPoint(f * centre, float(f), len(r.minima), tuple(mn.c for mn in r.minima), r.barriers,
                               min(r.minima, key=lambda mn: mn.free_energy).c)

    scan = [scan_point(f) for f in factors]
    if not any(sp.n_minima >= 2 for sp in scan) and len(scan) >= 3:
        # a window narrower than one step sits where the global c jumps most: rescan that cell's
        # neighbourhood 12× finer before calling the onset continuous
        i = int(np.argmax(np.diff([sp.c_global for sp in scan])))
        lo_f, hi_f = factors[max(i - 1, 0)], factors[min(i + 2, len(factors) - 1)]
        scan = sorted(scan + [scan_point(f) for f in np.geomspace(lo_f, hi_f, 37)[1:-1]], key=lambda sp: sp.P)
        factors = np.array([sp.P_over_P_star_homogeneous for sp in scan])
    common = dict(L=inst.L, V=inst.V, row_density=row_density, homogeneous_P_star=hom.P_star,
                  homogeneous_spinodals=hom.spinodals, homogeneous_order=hom.order, scan=tuple(scan))
    two = [i for i, sp in enumerate(scan) if sp.n_minima >= 2]
    if not two:
        jumps = np.diff([sp.c_global for sp in scan])
        i = int(np.argmax(jumps))
        return MeanFieldWindow(**common, order="continuous", window=None, window_resolution=None, P_coexistence=None,
                               barrier=None, steepest_P=math.sqrt(scan[i].P * scan[i + 1].P),
                               steepest_jump_per_step=float(jumps[i]), status=Status.CONVERGED,
                               message="one minimum of F(m) at every P scanned: a continuous (possibly steep) onset")
    coexistence = _coexistence(scan, lambda P_: solved(P_).minima)
    lo, hi = coexistence.bracket
    P_co = coexistence.value
    i_lo, i_hi = two[0], two[-1]
    spacing = scan[i_lo].P / scan[i_lo - 1].P - 1 if i_lo > 0 else factors[1] / factors[0] - 1
    resolution = spacing / 2**10 if 0 < i_lo and i_hi + 1 < len(scan) else spacing
    return MeanFieldWindow(**common, order="first", window=(lo, hi), window_resolution=resolution,
                           P_coexistence=P_co if math.isfinite(P_co) else None,
                           barrier=solved(P_co).outer_barrier if math.isfinite(P_co) else None, steepest_P=None,
                           steepest_jump_per_step=None, status=coexistence.status,
                           message=f"two minima of F(m) for P in [{lo:.6g}, {hi:.6g}] (relative resolution "
                                   f"{resolution:.1e}); a window narrower than the scan spacing can be missed")


def _coexistence(scan, minima):
    """The window of two minima and the equal-depth point (`numeric.threshold.window_and_coexistence`) for scan
    points with `.P`, `.n_minima` and minima(P) -> the minima at P by increasing c."""
    def depth_difference(P_):
        found = minima(P_)
        return found[-1].free_energy - found[0].free_energy if len(found) >= 2 else math.nan

    return window_and_coexistence([(sp.P, sp.n_minima) for sp in scan], lambda P_: len(minima(P_)), depth_difference)


def softmax_dual_mean_field(L: int, V: int, P_values, convention: Convention = DEFAULT, row_density: str = "exact",
                            n_grid: int = 80) -> DualMeanField:
    """All minima of the row mean-field free energy at each P, from one dual-plane grid (module docstring).

    Λ̄ and its gradient are tabulated once on an n_grid × n_grid grid of h ∈ [0, H], g ∈ [−G, 0] sized for the
    largest P; at each P every grid point lower than its 8 neighbours is polished by Nelder–Mead on F̃, and
    minima whose copy strengths differ by less than 2e-3 are merged. A minimum polished onto the far edges of the
    grid is flagged (status limited). Cost: the grid, ≈ n_grid² × (rows) × 600 exponentials (about 30 s for
    127 rows at n_grid = 80), then well under a second per P.
    """
    inst = softmax_instance(L, V, convention)
    n_grid = check_int("n_grid", n_grid, 10, 2000)
    row_density = check_choice("row_density", row_density, ROW_SET_DENSITIES)
    Ps = check_P_values("P_values", P_values)
    grid = DualGrid(inst, row_density, n_grid, max(Ps))
    points = tuple(grid.minima(P) for P in Ps)
    status = Status.LIMITED if grid.edge_hits else Status.CONVERGED
    return DualMeanField(inst.L, inst.V, row_density, (grid.H, grid.G), n_grid, points, status,
                         f"dual-plane search over {len(Ps)} value(s) of P, {len(grid.table.positions)} distinct row(s), "
                         f"{n_grid}² grid" + (f"; {grid.edge_hits} minimum/minima on the grid's far edge" if grid.edge_hits else ""))


def causal_softmax_transition(inst: CopyHeadsInstance, digits: int = 30, row_density: str | None = None, factors=None,
                              n_grid: int = 80) -> RowMeanFieldTransition:
    """Softmax under the causal mask: the order and P* from the row mean-field free energy (every row l its
    own Cramér function of softmax over l scores), minima found on one dual-plane grid.

    P is scanned over `factors` × the drop-first homogeneous P* (default 25 points over 0.3–3, 10% apart; the
    homogeneous action has no causal form), then 12× finer around the steepest rise of the global c. Two minima
    at some P => "first" (window ends bisected on the count of minima, P* = equal depths by brentq, both cheap
    once the grid exists); one minimum at every P => "none" (a continuous onset, P_star NaN; the steepest point
    is reported). row_density None: "exact" for L ≤ 64, "hybrid" (exact rows up to l = 64, the shortcut beyond)
    up to L = 256. Cost: the exact row tables (≈ 1 s each, cached) and the grid (≈ 10 s at L = 32, 60 s at 64 and
    128, 3 min at 256); the scan adds seconds. Float64: the digits kept are those the scan resolution supports
    (`numeric.digits.supported_digits`)."""
    L, V = inst.L, inst.V
    check_row_set_size(L, inst.convention.boundary)
    row_density = ("exact" if L <= HYBRID_EXACT_MAX else "hybrid") if row_density is None else row_density
    factors = np.geomspace(0.3, 3.0, 25) if factors is None else np.asarray(factors, float)
    reference = inst.with_convention(inst.convention.with_(boundary="drop-first"))
    centre = softmax_transition(reference, digits=10).P_star
    if not math.isfinite(centre):
        centre = reference.P_of_n(softmax_n_scale(reference))
    coarse = factors * centre
    # one grid for the whole scan; it covers one coarse step beyond the largest P
    grid = DualGrid(inst, row_density, n_grid, coarse[-1] * factors[-1] / factors[-2])
    scan = [grid.minima(P) for P in coarse]
    i = int(np.argmax(np.diff([sp.c_global for sp in scan])))
    scan = sorted(scan + [grid.minima(P) for P in np.geomspace(scan[i].P, scan[i + 1].P, 14)[1:-1]], key=lambda sp: sp.P)
    summary = tuple(MeanFieldScanPoint(sp.P, sp.n_minima, sp.c_global, tuple(mn.c for mn in sp.minima)) for sp in scan)
    grid_status = Status.LIMITED if grid.edge_hits else Status.CONVERGED
    two = [sp for sp in scan if sp.n_minima >= 2]
    if not two:
        jumps = np.diff([sp.c_global for sp in scan])
        k = int(np.argmax(jumps))
        return RowMeanFieldTransition(
            "softmax", L, V, "none", math.nan, "", math.nan, math.nan, Status.NOT_FOUND,
            f"causal mask, row mean field (dual-plane search, {row_density} row densities): one minimum at every P "
            "scanned: a continuous (possibly steep) onset", scan=summary, grid_status=grid_status,
            steepest_P=math.sqrt(scan[k].P * scan[k + 1].P), steepest_jump_per_step=float(jumps[k]))
    coexistence = _coexistence(scan, lambda P_: grid.minima(P_).minima)
    lo, hi = coexistence.bracket
    P_co = coexistence.value
    found = math.isfinite(P_co)
    point = grid.minima(P_co) if found else two[0]
    kept = min(digits, FLOAT64_DIGITS)
    text = digit_string(P_co, supported_digits(P_co, coexistence.error, kept), kept) if found else ""
    return RowMeanFieldTransition(
        "softmax", L, V, "first", P_co, text,
        coexistence.error, inst.n_of_P(P_co) if found else math.nan, Status.CONVERGED if found else Status.LIMITED,
        f"causal mask, row mean field (dual-plane search): two minima for P in [{lo:.6g}, {hi:.6g}]"
        + ("" if found else "; " + coexistence.message),
        spinodals=(lo, hi), jump=point.minima[-1].c - point.minima[0].c, scan=summary, grid_status=grid_status)
