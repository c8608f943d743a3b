"""Continuation of a branch of fixed points x*(c) of x = F(x, c) in a control parameter c.

Natural-parameter continuation with a secant predictor: from the last two accepted points the branch
is extrapolated linearly (in the solver's unconstrained coordinates, so the prediction stays in the
domain) and the fixed-point solver corrects the prediction. A failed correction halves the step; after
`max_halvings` halvings in a row the branch is declared lost (it ended at a fold, or left the domain),
with the last control at which it was still found. Each accepted point carries the solver's result,
so the stability of the branch (spectral radius of dF) is recorded along it.

A converged corrector can still land on another branch when two branches come close; `max_jump` (an
absolute bound on max |x - x_predicted|) rejects such steps and halves instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnphase.errors import ParameterError
from attnphase.numeric.fixedpoint import FixedPointResult, Identity, solve_fixed_point
from attnphase.params import check_int, check_positive, check_real_list

__all__ = ["Branch", "continue_branch"]


@dataclass(frozen=True)
class Branch:
    """A branch followed through the requested controls.

    controls: the requested controls reached (in order); values: x* there (shape (k,) for scalar x,
    else (k, ...)); results: the FixedPointResult of each; status "complete" | "lost"; lost_at: the
    control that could not be reached (None when complete); last_good_control: the last control
    (requested or intermediate) where the branch was found; message: what happened; substeps: number
    of accepted intermediate controls inserted by step halving.
    """

    controls: np.ndarray
    values: np.ndarray
    results: tuple[FixedPointResult, ...] = field(repr=False)
    status: str
    lost_at: float | None
    message: str
    last_good_control: float | None = None
    substeps: int = 0

    @property
    def stable(self) -> np.ndarray:
        """Stability (spectral radius of dF < 1) at each requested control."""
        return np.array([r.stable for r in self.results], dtype=bool)

    @property
    def spectral_radius(self) -> np.ndarray:
        return np.array([r.spectral_radius for r in self.results], dtype=float)

    @property
    def stability_changes(self) -> list[tuple[float, float]]:
        """Pairs of consecutive controls between which the stability flips."""
        s = self.stable
        return [(float(self.controls[i]), float(self.controls[i + 1])) for i in range(len(s) - 1) if s[i] != s[i + 1]]


def continue_branch(
    F,
    x0,
    controls,
    *,
    max_halvings: int = 10,
    max_jump: float | None = None,
    **solver_kwargs,
) -> Branch:
    """Follow the fixed point of x = F(x, c) through `controls` (a monotone list), starting from the
    guess x0 at controls[0]. `solver_kwargs` go to `solve_fixed_point` (method, transforms, tol, ...).
    """
    cs = check_real_list("controls", controls)
    diffs = np.diff(cs)
    if len(cs) > 1 and not (np.all(diffs > 0) or np.all(diffs < 0)):
        raise ParameterError("controls", controls, "a strictly monotone list")
    max_halvings = check_int("max_halvings", max_halvings, 0, 60)
    if max_jump is not None:
        max_jump = check_positive("max_jump", max_jump)
    x0_arr = np.asarray(x0, dtype=float)
    shape = x0_arr.shape
    n = x0_arr.size
    transforms = solver_kwargs.get("transforms")
    if transforms is None:
        transforms = [Identity()] * n
    elif not isinstance(transforms, (list, tuple)):
        transforms = [transforms] * n

    def to_u(x):
        return np.array([t.to_unconstrained(v) for t, v in zip(transforms, np.ravel(x))])

    def to_x(u):
        return np.array([t.from_unconstrained(v) for t, v in zip(transforms, u)])

    def solve(c, guess):
        return solve_fixed_point(lambda x: F(x, c), _shaped(guess, shape), **solver_kwargs)

    accepted_c: list[float] = []  # every accepted control, intermediate ones included
    accepted_u: list[np.ndarray] = []
    out_c, out_x, out_r = [], [], []
    substeps = 0

    first = solve(cs[0], x0_arr.ravel())
    if not first.success:
        return Branch(np.array([]), np.array([]), (), "lost", cs[0],
                      f"no fixed point at the first control {cs[0]:g}: {first.message}", None, 0)
    accepted_c.append(cs[0])
    accepted_u.append(to_u(first.value))
    out_c.append(cs[0]), out_x.append(first.value), out_r.append(first)

    for target in cs[1:]:
        step = target - accepted_c[-1]
        halvings = 0
        while True:
            c_try = accepted_c[-1] + step
            overshoots = (step > 0 and c_try > target) or (step < 0 and c_try < target)
            if overshoots or abs(target - c_try) < 1e-12 * abs(step):  # land exactly on the target
                c_try = target
            if len(accepted_c) >= 2:
                slope = (accepted_u[-1] - accepted_u[-2]) / (accepted_c[-1] - accepted_c[-2])
                u_pred = accepted_u[-1] + slope * (c_try - accepted_c[-1])
            else:
                u_pred = accepted_u[-1]
            x_pred = to_x(u_pred)
            if not np.all(np.isfinite(x_pred)) or not all(t.contains(v) for t, v in zip(transforms, x_pred)):
                x_pred = to_x(accepted_u[-1])
            result = solve(c_try, x_pred)
            jumped = (
                result.success and max_jump is not None
                and float(np.max(np.abs(np.ravel(result.value) - x_pred))) > max_jump
            )
            if result.success and not jumped:
                accepted_c.append(c_try)
                accepted_u.append(to_u(result.value))
                if c_try == target:
                    out_c.append(target), out_x.append(result.value), out_r.append(result)
                    break
                substeps += 1
                halvings = 0
                step = 2.0 * step  # the halved step worked: try a longer one again
                continue
            halvings += 1
            if halvings > max_halvings:
                why = "the corrector jumped by more than max_jump" if jumped else result.message
                return Branch(
                    np.array(out_c), np.array(out_x), tuple(out_r), "lost", float(target),
                    f"branch lost between c = {accepted_c[-1]:.12g} and {c_try:.12g} after "
                    f"{max_halvings} step halvings: {why}",
                    accepted_c[-1], substeps,
                )
            step = 0.5 * step
    return Branch(
        np.array(out_c), np.array(out_x), tuple(out_r), "complete", None,
        f"followed through {len(out_c)} controls ({substeps} intermediate steps)", accepted_c[-1], substeps,
    )


def _shaped(x, shape):
    x = np.asarray(x, dtype=float)
    return float(x.ravel()[0]) if shape == () else x.reshape(shape)
