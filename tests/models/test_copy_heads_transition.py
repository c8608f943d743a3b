"""The softmax order classifier (stationary branches followed in n, folds as roots) against a dense brute-force
scan of the homogeneous action, and the same code path as the Potts model.

Reference: S'(x; n) evaluated on a dense (x, n) grid in one vectorised call; at each n the minima are the sign
changes of S' from − to + along x, and the global minimum is the lowest grid value of S. The scan knows nothing
of branches or folds: its only limit is its resolution (a window narrower than its n step, or a minimum and a
maximum closer than its x step near a fold, is invisible to it). So the classifier must
* put every n where the scan sees two minima inside its window [lower fold, upper fold];
* see two minima wherever the scan resolves them: every scan n inside the window by more than MARGIN (relative)
  must show two minima; a window narrower than that is checked at its middle on a 100× finer x grid;
* report "none" exactly where the scan never sees two minima and the classifier finds no folds;
* put P* (the equal-action point) between the two scan values of n where the scan's global minimum changes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logit

from attnphase.api import copy_heads as api
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.models.copy_heads.softmax_transition import softmax_n_scale

X_STEP = 0.01
N_RATIO = 1e-3  # relative n step of the fine scan
MARGIN = 4e-3  # a scan point further inside the window than this (relative) must resolve both minima


def _x_grid(inst: CopyHeadsInstance, step: float = X_STEP, high: float = 8.0) -> np.ndarray:
    """x from 5σ below the prior mean of the logit to `high` (the copy minimum sits at x < 5 up to 10× the
    natural scale of n)."""
    s2 = inst.convention.sigma2
    return np.arange(-math.log(inst.L - 1) - s2 / 2 - 5 * math.sqrt(s2), high, step)


def brute_force_scan(inst: CopyHeadsInstance, ns: np.ndarray, xs: np.ndarray | None = None):
    """(number of minima, x of the global grid minimum) at each n: S' and S on the (n, x) grid, in chunks."""
    xs = _x_grid(inst) if xs is None else xs
    counts, global_x = [], []
    for chunk in np.array_split(ns, max(1, len(ns) * len(xs) // 2_000_000)):
        with np.errstate(all="ignore"):
            g = np.asarray(inst.reduced.gradient(xs[None, :], chunk[:, None]), float)[..., 0]
            S = np.asarray(inst.reduced.action(xs[None, :], chunk[:, None]), float)
        rising = g > 0
        counts.append(np.sum(~rising[:, :-1] & rising[:, 1:], axis=1))
        global_x.append(xs[np.argmin(S, axis=1)])
    return np.concatenate(counts), np.concatenate(global_x)


def check_against_scan(L: int, V: int, ns: np.ndarray, x_high: float = 8.0) -> dict:
    """Every check of the module docstring at (L, V) over the scan points ns; returns what was seen."""
    inst = CopyHeadsInstance.validated(attention="softmax", L=L, V=V)
    tr = api.threshold("softmax", L, V, digits=12)
    counts, global_x = brute_force_scan(inst, ns, _x_grid(inst, high=x_high))
    two = ns[counts >= 2]
    if tr.order == "none":
        assert len(two) == 0, f"L={L} V={V}: the scan sees two minima at n = {two[:3]} but the classifier none"
        assert tr.status == "not_found"
        return {"order": "none", "scan_window": None}
    assert tr.order == "first" and tr.status == "converged", tr.message
    lower, upper = tr.n_spinodals
    upper = math.inf if not math.isfinite(upper) else upper
    outside = two[(two < lower * (1 - 1e-9)) | (two > upper * (1 + 1e-9))]
    assert len(outside) == 0, f"L={L} V={V}: two minima at n = {outside[:3]} outside the window ({lower}, {upper})"
    inside = (ns > lower * (1 + MARGIN)) & (ns < upper * (1 - MARGIN))
    assert np.all(counts[inside] >= 2), f"L={L} V={V}: the scan misses a minimum at n = {ns[inside & (counts < 2)][:3]}"
    if not np.any(inside) and math.isfinite(upper):
        # narrower than the scan resolves: two minima at its middle on a 100× finer x grid
        middle = math.sqrt(lower * upper)
        fine, _ = brute_force_scan(inst, np.array([middle]), _x_grid(inst, X_STEP / 100))
        assert fine[0] >= 2, f"L={L} V={V}: no second minimum at the middle of the window ({lower}, {upper})"
    # P*: the scan's global minimum leaves the uniform side (small x) for the copy side between two scan points
    middle_x = 0.5 * (logit(tr.a_uniform) + logit(tr.a_copy))  # between the two minima at P*
    copy_side = global_x > middle_x
    switch = np.nonzero(copy_side[1:] & ~copy_side[:-1])[0]
    if len(switch):
        i = switch[0]
        assert ns[i] <= tr.n_star <= ns[i + 1], f"L={L} V={V}: P* = {tr.n_star} outside the scan's [{ns[i]}, {ns[i + 1]}]"
    return {"order": "first", "scan_window": (two.min(), two.max()) if len(two) else None,
            "window": (lower, upper), "n_star": tr.n_star}


def _fine_ns(inst_L: int, V: int, low: float, high: float) -> np.ndarray:
    scale = softmax_n_scale(CopyHeadsInstance.validated(attention="softmax", L=inst_L, V=V))
    return np.exp(np.arange(math.log(low * scale), math.log(high * scale), N_RATIO))


@pytest.mark.parametrize("L, V, n_range", [(18, 16, (250, 420)), (20, 16, (300, 520)), (5, 2, (50, 85))])
def test_windows_the_grid_count_missed_are_found_and_match_the_scan(L, V, n_range):
    """V = 16, L = 18 and 20 and V = 2, L = 5: the former grid count reported "none" there, while `solve` on a
    dense grid of P found two minima (P in [327.7, 331.9], [381.6, 422.4] and [64.6, 66.2]). The classifier
    agrees with a dense scan over ±25% around those windows (the slow test scans the whole range)."""
    seen = check_against_scan(L, V, np.exp(np.arange(*np.log(n_range), N_RATIO)), x_high=3.0)
    assert seen["order"] == "first" and seen["scan_window"] is not None


@pytest.mark.slow
@pytest.mark.parametrize("L, V", [(L, 16) for L in range(9, 25)] + [(L, 2) for L in range(3, 9)]
                         + [(L, 4) for L in range(3, 13)] + [(L, 8) for L in range(5, 17)])
def test_classifier_against_a_dense_scan_over_the_whole_range(L, V):
    """Over 0.1…10 × the natural scale at 0.1% steps and over the classifier's whole range (1e-4…1e4 ×) at 1%."""
    check_against_scan(L, V, _fine_ns(L, V, 0.1, 10.0))
    scale = softmax_n_scale(CopyHeadsInstance.validated(attention="softmax", L=L, V=V))
    coarse = np.geomspace(1e-4 * scale, 1e4 * scale, 1853)
    inst = CopyHeadsInstance.validated(attention="softmax", L=L, V=V)
    counts, _ = brute_force_scan(inst, coarse, _x_grid(inst, 0.02, 30.0))
    tr = api.threshold("softmax", L, V, digits=12)
    two = coarse[counts >= 2]
    if tr.order == "none":
        assert len(two) == 0
    else:
        lower, upper = tr.n_spinodals
        assert np.all(two >= lower * (1 - 1e-9)) and (not math.isfinite(upper) or np.all(two <= upper * (1 + 1e-9)))


def test_the_classifier_is_the_one_the_potts_model_uses(monkeypatch):
    """Both the copy-heads softmax threshold and the Potts threshold classify through
    `numeric.transition.classify_transition` on branches from `numeric.continuation.follow_branch`."""
    from attnphase.models.copy_heads import softmax_transition
    from attnphase.models.potts import solve as potts
    from attnphase.numeric import transition

    calls = []
    original = transition.classify_transition

    def spy(system, branches, *args, **kwargs):
        calls.append(type(system).__name__)
        return original(system, branches, *args, **kwargs)

    monkeypatch.setattr(softmax_transition, "classify_transition", spy)
    monkeypatch.setattr(potts, "classify_transition", spy)
    assert api.threshold("softmax", 8, 4, digits=8).order == "first"
    assert potts.threshold(3, digits=8).order == "first"
    assert calls == ["ActionSystem", "ActionSystem"]
