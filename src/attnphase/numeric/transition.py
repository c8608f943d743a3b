"""The order of a transition, read off the followed stationary branches of an action S(x; c).

The global minimum over c ∈ [lo, hi] is assembled from the minimum segments of the branches (runs
of Hessian index 0 between folds, branch points and the range ends; `numeric.continuation`): between
consecutive segment ends the set of coexisting minima is fixed, and the global one can change only
where two of them have equal action, located as a root of the difference of their actions
(`threshold.branch_crossing`, with each action evaluated at its stationary point polished in
mpmath). Where the global minimum changes:
* at an action crossing of two distinct minima: a first-order transition; its coexistence window is
  the overlap of the two segments, whose ends (folds or branch points) are the spinodals, and the jump
  of the order parameter is taken at the crossing;
* where one minimum segment ends at a branch point and the next one starts there with the same state:
  a second-order transition at that branch point, with no jump;
* anything else (the global minimum ends at a fold with no other minimum to take over) means a branch
  was not followed: status failed, asking for a start point on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import mpmath
import numpy as np

from attnphase.errors import ParameterError
from attnphase.numeric.continuation import Singularity, StationaryBranch, StationarySystem, continue_in_control
from attnphase.numeric.threshold import Threshold, branch_crossing
from attnphase.params import check_int
from attnphase.results import Result, Status

__all__ = ["SCAN_INTERVALS", "MinimumSegment", "Transition", "minimum_segments", "classify_transition"]

SCAN_INTERVALS = 32
"""Cells of the scan for crossings of two minima's actions, over each interval where both exist."""


@dataclass(frozen=True)
class MinimumSegment:
    """A run of minima of one branch: its points (control increasing), and what ends it on either side
    (a `Singularity`, or None at a range end or where the branch ended)."""

    control: np.ndarray
    state: np.ndarray
    lower: Singularity | None
    upper: Singularity | None
    # the last mpmath-polished minimum (c, x): a root polish evaluates at nearby c, where it is the better start
    polished: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def low(self) -> float:
        """Where the segment begins: its lower singularity's location, else its first point."""
        located = self.lower is not None and math.isfinite(self.lower.control.value)
        return float(self.lower.control.value) if located else float(self.control[0])

    @property
    def high(self) -> float:
        located = self.upper is not None and math.isfinite(self.upper.control.value)
        return float(self.upper.control.value) if located else float(self.control[-1])

    def state_at(self, system: StationarySystem, c: float):
        """The minimum of this segment at c (float64), continued from the segment's nearest point (one
        step, else eight), or None where that fails or is not a minimum."""
        near = int(np.argmin(np.abs(self.control - c)))
        for substeps in (1, 8):
            x = continue_in_control(system, self.state[near], float(self.control[near]), c, substeps)
            if x is not None and np.all(np.linalg.eigvalsh(system.hessian(x, c)) > 0):
                return x
        return None

    def action_at(self, system: StationarySystem, c: float) -> float:
        x = self.state_at(system, c)
        return math.nan if x is None else system.value(x, c)

    def action_at_mp(self, system: StationarySystem, c) -> mpmath.mpf:
        """S at this segment's minimum at c, the state polished by Newton's method at the current mp.dps
        (started from the last polished state when it lies within 1e-6 (relative) of c, else from float64)."""
        last = self.polished.get("at")
        if last is not None and abs(last[0] - c) <= 1e-6 * max(1, abs(c)):
            x = mpmath.matrix(list(last[1]))
        else:
            x64 = self.state_at(system, float(c))
            if x64 is None:
                return mpmath.nan
            x = mpmath.matrix([mpmath.mpf(v) for v in x64])
        tol = mpmath.mpf(10) ** (-mpmath.mp.dps + 3)
        for _ in range(60):
            g = mpmath.matrix(system.gradient_mp(list(x), c))
            if mpmath.norm(g, mpmath.inf) == 0:
                break
            step = mpmath.lu_solve(system.hessian_mp(list(x), c), -g)
            x += step
            if mpmath.norm(step, mpmath.inf) <= tol * max(1, mpmath.norm(x, mpmath.inf)):
                break
        self.polished["at"] = (c, list(x))
        return system.value_mp(list(x), c)


@dataclass(frozen=True)
class Transition(Result):
    """Where the global minimum changes branch, and how.

    order: "first", "second" or "none"; control: the transition (coexistence point or branch point) as a
    `Threshold` (None when there is none); spinodals: the ends of the coexistence window (first order:
    lower, upper) or the branch point (second order), each a `Threshold`, with spinodal_kinds ("fold" or
    "branch_point"; "range" for a window end beyond the range, whose Threshold then has status
    not_found); jump: |change of the order parameter| at the transition; order_parameter: its values
    just below and above; later: further changes of the global minimum at larger control. First order only:
    states, the two coexisting minima at the crossing (float64 Newton solutions, good to the rounding floor of the
    gradient, which can leave 1e-13 relative); order_parameter_slopes, d(order parameter)/dc along each of their
    segments there (what the crossing's error moves the order parameters by).
    """

    order: str
    control: Threshold | None
    spinodals: tuple[Threshold, ...]
    spinodal_kinds: tuple[str, ...]
    jump: float
    order_parameter: tuple[float, float]
    status: Status
    message: str
    later: tuple["Transition", ...] = ()
    states: tuple = ()
    order_parameter_slopes: tuple = ()


def minimum_segments(branch: StationaryBranch) -> list[MinimumSegment]:
    """The runs of minima of `branch`, split at its folds and branch points, each ordered by control."""
    cuts = {s.between[0]: s for s in branch.singularities}
    segments, run, opened_by = [], [], None

    def close(closed_by):
        if len(run) >= 2:
            idx = np.array(run)
            lower, upper = opened_by, closed_by
            if branch.control[idx[-1]] < branch.control[idx[0]]:
                idx, lower, upper = idx[::-1], upper, lower
            segments.append(MinimumSegment(branch.control[idx], branch.state[idx], lower, upper))

    for i in range(len(branch.control)):
        if branch.index[i] == 0:
            run.append(i)
        else:
            close(cuts.get(i - 1))
            run, opened_by = [], None
        if i in cuts:
            close(cuts[i])
            run, opened_by = [], cuts[i]
    close(None)
    return segments


def _not_found(message: str) -> Threshold:
    return Threshold(math.nan, None, "", math.nan, Status.NOT_FOUND, message, None)


def _end_threshold(end: Singularity | None, where: str) -> tuple[Threshold, str]:
    if end is None:
        return _not_found(f"the coexistence window extends beyond the {where} end of the range"), "range"
    return end.control, end.kind


def _distinct(segments: list[MinimumSegment], canonical: Callable) -> list[MinimumSegment]:
    """The segments less those that are a symmetry image of one kept before: same ends, and the canonical
    forms of their states agree along it (to 1e-8)."""
    kept: list[MinimumSegment] = []
    for seg in segments:
        image = np.array([canonical(x) for x in seg.state])
        duplicate = False
        for other in kept:
            if abs(other.low - seg.low) > 1e-8 * (1 + abs(seg.low)) or abs(other.high - seg.high) > 1e-8 * (1 + abs(seg.high)):
                continue
            mine = np.array([canonical(x) for x in other.state])
            common = (other.control > seg.control[0]) & (other.control < seg.control[-1])
            if not common.any():
                continue
            probe = np.column_stack([np.interp(other.control[common], seg.control, image[:, j]) for j in range(image.shape[1])])
            spacing = np.max(np.abs(np.diff(image, axis=0))) if len(image) > 1 else 0.0
            # the polylines are sampled at different points: they agree to the interpolation error, a step's worth
            if np.allclose(probe, mine[common], rtol=0.0, atol=spacing + 1e-8):
                duplicate = True
                break
        if not duplicate:
            kept.append(seg)
    return kept


def classify_transition(system: StationarySystem, branches: Sequence[StationaryBranch], control_range: tuple[float, float], *,
                        digits: int = 15, order_parameter: Callable[[np.ndarray], float] | None = None,
                        canonical: Callable[[np.ndarray], np.ndarray] | None = None,
                        control_label: str = "c") -> Transition:
    """The order of the transition(s) of the global minimum of S over `control_range`, from `branches`.

    order_parameter(x) -> float (default: x[0]) gives the jump. Coexistence points are located to
    `digits` significant digits (mpmath-polished actions); spinodals carry the precision of their
    singularity (`numeric.continuation`). canonical(x): the representative of x under a symmetry of S (e.g.
    x ↦ ±x folded onto one sign); minimum segments that are images of one another are classified once.
    control_label: how the messages name the control (e.g. "ln n" where the control is a log).
    """
    digits = check_int("digits", digits, 1, 1000)
    lo, hi = control_range
    if not hi > lo:
        raise ParameterError("control_range", control_range, "(low, high) with high > low")
    measure = order_parameter or (lambda x: float(x[0]))
    segments = [seg for b in branches for seg in minimum_segments(b) if seg.high > seg.low]
    if canonical is not None:
        segments = _distinct(segments, canonical)
    if not segments:
        return Transition("none", None, (), (), math.nan, (math.nan, math.nan), Status.FAILED,
                          "no minimum on the followed branches")
    # Segment ends cut [lo, hi] into intervals with a fixed set of minima; crossings cut them further.
    # (segment ends within rounding of a range end, e.g. a branch's first point c/scale·scale, are that end)
    slack = 1e-10 * (hi - lo)
    events = sorted({lo, hi} | {v for seg in segments for v in (seg.low, seg.high) if lo + slack < v < hi - slack})
    pieces: list[tuple[float, float, int, Threshold | None]] = []  # (from, to, segment, crossing that opened it)
    for a, b in zip(events[:-1], events[1:]):
        inside = [k for k, seg in enumerate(segments) if seg.low <= a + slack and seg.high >= b - slack]
        if not inside:
            return Transition("none", None, (), (), math.nan, (math.nan, math.nan), Status.FAILED,
                              f"no followed minimum covers {control_label} in [{a:.12g}, {b:.12g}]: give a start "
                              "point there")
        pieces.extend(_global_pieces(system, segments, inside, a, b, digits, pieces[-1][2] if pieces else None))
    found = []
    for (a0, b0, k0, _), (a1, b1, k1, crossing) in zip(pieces[:-1], pieces[1:]):
        if k0 == k1:
            continue
        found.append(_transition(system, segments[k0], segments[k1], b0, crossing, measure, control_label))
    if not found:
        return Transition("none", None, (), (), 0.0, (math.nan, math.nan), Status.NOT_FOUND,
                          f"the global minimum stays on one branch for {control_label} in [{lo:.12g}, {hi:.12g}]")
    first = found[0]
    return Transition(first.order, first.control, first.spinodals, first.spinodal_kinds, first.jump,
                      first.order_parameter, first.status, first.message, tuple(found[1:]), first.states,
                      first.order_parameter_slopes)


def _global_pieces(system, segments, inside, a, b, digits, previous):
    """[(from, to, segment index, crossing)] of the global minimum on [a, b] among the segments `inside`.

    Minima whose actions agree to rounding (symmetric copies) are a tie, kept on the `previous` segment
    when it is one of them."""
    margin = 1e-9 * (b - a)
    cuts: list[tuple[float, Threshold]] = []
    probe = np.linspace(a + margin, b - margin, 9)
    probed = {k: np.array([segments[k].action_at(system, c) for c in probe]) for k in inside}
    for i, p in enumerate(inside):
        for q in inside[i + 1:]:
            sp, sq = segments[p], segments[q]
            diff = probed[p] - probed[q]
            finite = np.isfinite(probed[p])
            scale = 1.0 + (float(np.max(np.abs(probed[p][finite]))) if finite.any() else 0.0)
            if np.all(np.abs(diff[np.isfinite(diff)]) <= 1e-11 * scale):
                continue  # equal actions throughout: symmetric copies (e.g. ±m), not a transition
            # every sign change of the action difference on a 32-interval scan, each located in its own cell
            grid = np.linspace(a + margin, b - margin, SCAN_INTERVALS + 1)
            scan = np.array([sp.action_at(system, c) - sq.action_at(system, c) for c in grid])
            polish = ({"f1_mp": lambda c: sp.action_at_mp(system, c), "f2_mp": lambda c: sq.action_at_mp(system, c)}
                      if system.mp else {})
            for i in range(SCAN_INTERVALS):
                if not (np.isfinite(scan[i]) and np.isfinite(scan[i + 1])) or (scan[i] > 0) == (scan[i + 1] > 0):
                    continue
                # the cell with its neighbours: a root on a grid point is then polished from both sides
                lo_i, hi_i = max(i - 1, 0), min(i + 2, SCAN_INTERVALS)
                crossing = branch_crossing(lambda c: sp.action_at(system, c), lambda c: sq.action_at(system, c),
                                           grid[lo_i], grid[hi_i], digits=digits, n_scan=hi_i - lo_i, **polish)
                found = crossing.status != Status.NOT_FOUND and math.isfinite(crossing.value)
                if found and not any(abs(crossing.value - c) <= margin for c, _ in cuts):
                    cuts.append((crossing.value, crossing))
    bounds = [a] + sorted(c for c, _ in cuts) + [b]
    by_value = dict(cuts)
    pieces = []
    for u, v in zip(bounds[:-1], bounds[1:]):
        if v <= u:
            continue
        mid = 0.5 * (u + v)
        actions = np.array([segments[k].action_at(system, mid) for k in inside])
        if not np.any(np.isfinite(actions)):
            best = inside[0]
        else:
            lowest = np.nanmin(actions)
            ties = [k for k, s in zip(inside, actions) if s <= lowest + 1e-11 * (1.0 + abs(lowest))]
            best = previous if previous in ties else ties[0]
        pieces.append((u, v, best, by_value.get(u)))
        previous = best
    return pieces


def _transition(system, below: MinimumSegment, above: MinimumSegment, c: float, crossing, measure,
                control_label: str) -> Transition:
    if crossing is not None:  # two minima of equal action: first order
        x_below, x_above = below.state_at(system, crossing.value), above.state_at(system, crossing.value)
        values = (measure(x_below), measure(x_above))
        lower_end = below.lower if below.low >= above.low else above.lower
        upper_end = below.upper if below.high <= above.high else above.upper
        (t_low, kind_low), (t_high, kind_high) = _end_threshold(lower_end, "lower"), _end_threshold(upper_end, "upper")
        slopes = tuple(_order_parameter_slope(system, segment, crossing.value, measure) for segment in (below, above))
        return Transition("first", crossing, (t_low, t_high), (kind_low, kind_high), abs(values[1] - values[0]), values,
                          crossing.status, f"first order: the global minimum jumps at {control_label} = "
                          f"{crossing.value:.15g} ({crossing.message}); minima coexist between the spinodals",
                          states=(x_below, x_above), order_parameter_slopes=slopes)
    end, start = below.upper, above.lower
    if end is not None and start is not None:  # the states where the two segments end and begin
        x_below, x_above = end.state, start.state
    else:
        x_below, x_above = below.state_at(system, c), above.state_at(system, c)
    continuous = (x_below is not None and x_above is not None
                  and np.max(np.abs(x_below - x_above)) <= 1e-6 * max(1.0, float(np.max(np.abs(x_below)))))
    points = [s for s in (end, start) if s is not None and s.kind == "branch_point" and math.isfinite(s.control.error)]
    if not points or not continuous:
        return Transition("none", None, (), (), math.nan, (math.nan, math.nan), Status.FAILED,
                          f"the global minimum leaves its branch at {control_label} = {c:.12g} without a crossing or "
                          "a branch point shared with the next: a branch is missing (give a start point on it)")
    point = min(points, key=lambda s: s.control.error)
    x = point.state
    return Transition("second", point.control, (point.control,), ("branch_point",), 0.0, (measure(x), measure(x)),
                      point.control.status, f"second order: the global minimum passes continuously through the "
                      f"branch point at {control_label} = {point.control.value:.15g} ({point.control.message})")


def _order_parameter_slope(system, segment: MinimumSegment, c: float, measure) -> float:
    """d(order parameter)/dc along `segment` at c: a central difference over ±1e-6·max(1, |c|) (the states are float64
    Newton solutions, so the difference is good to ~1e-10 relative); NaN where the segment ends within the step."""
    h = 1e-6 * max(1.0, abs(c))
    ends = [segment.state_at(system, c + sign * h) for sign in (1.0, -1.0)]
    if any(x is None for x in ends):
        return math.nan
    return (measure(ends[0]) - measure(ends[1])) / (2 * h)
