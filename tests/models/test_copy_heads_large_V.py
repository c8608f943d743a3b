"""`threshold --json` at a vocabulary of 2^20: numpy's RuntimeWarnings (overflow in the continuation's equilibration,
along branches where the float64 action overflows) reached stderr (audit ch10); the JSON itself was right."""

from __future__ import annotations

import json
import warnings

import mpmath
from click.testing import CliRunner

from attnphase.cli import main

L, V = 16, 2**20


def _det_hessian_at_origin(n):
    """det H(0, 0) of the spec's Convention-A action (§2b, σ² = s₁ = τ = 1, T = L): H_tt = λ_t + (V−1)n/L + n
    − εn²/(VL²) − n²/V², H_tc = −εn²(L−1)/(VL²), H_cc = λ_c + (V−1)n(L−1)/L − εn²(L−1)²/(VL²)."""
    fit = (1 - mpmath.mpf(1) / V) * n * n / (V * L**2)
    h_tt = mpmath.mpf(L) ** 2 / (L**2 + 1) + (V - 1) * n / L + n - fit - n * n / mpmath.mpf(V) ** 2
    h_cc = mpmath.mpf(L) ** 2 * (L - 1) + (V - 1) * n * (L - 1) / L - (L - 1) ** 2 * fit
    return h_tt * h_cc - ((L - 1) * fit) ** 2


def test_threshold_json_at_V_2_20_prints_no_runtime_warning_and_the_right_P_star():
    """No RuntimeWarning is raised (recorded with every warning shown, so one already seen elsewhere in this process
    counts too) nor printed; P* is the first root of det H(0, 0) (≈ V²: 1099511627776.0037; positive on a geometric
    grid from n = 1e-3 up to it), bisected here to 50 digits, within the reported error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = CliRunner().invoke(main, ["threshold", "copy-heads", "--attention", "linear", "--L", str(L), "--V",
                                        str(V), "--json"])
    assert out.exit_code == 0, out.output
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    assert "RuntimeWarning" not in out.stderr
    result = json.loads(out.stdout)
    with mpmath.workdps(60):
        reported, width = mpmath.mpf(result["P_star"]), mpmath.mpf(10) ** -9
        lo, hi = reported * (1 - width), reported * (1 + width)
        assert all(_det_hessian_at_origin(lo * (mpmath.mpf(10) ** -3 / lo) ** (mpmath.mpf(k) / 400)) > 0
                   for k in range(401))
        assert _det_hessian_at_origin(hi) < 0
        while hi - lo > mpmath.mpf(10) ** -50 * hi:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if _det_hessian_at_origin(mid) > 0 else (lo, mid)
        assert abs(mpmath.mpf(result["P_star"]) - lo) <= result["error"]
