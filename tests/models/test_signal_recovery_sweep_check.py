"""A sweep of the signal-recovery model refuses, before any point runs, what `simulate` refuses before it runs."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.models.signal_recovery.parameters import max_simulated_token_norm, noise_token_norm
from attnphase.models.signal_recovery.simulate import check_sweep_point
from attnphase.store import ResultStore


def test_a_sweep_refuses_a_theta_whose_float32_gradients_overflow_before_any_point_runs(tmp_path):
    """θ = 1e13 at d = 16, σ = β = 1 is refused by `simulate` before it runs (its float32 gradients overflow beyond
    θ_d = (3.4e38/64)^(1/3) − σ(√d + 10) = 1.75e12); the sweep had run the point and failed it at run time with "rerun
    to retry them", which could not succeed (audit sr6 F-e). Now its pre-check refuses it: exit 2, --grid theta named
    with the same range, nothing stored (the point at θ = 0.5 does not run either)."""
    largest = max_simulated_token_norm(1.0) - noise_token_norm(16, 1.0)
    assert 1.74e12 < largest < 1.76e12
    check_sweep_point(16, 64, 8, 1.7e12, trials=2, max_steps=20)  # below the bound: accepted
    with pytest.raises(ParameterError) as refused:
        check_sweep_point(16, 64, 8, 1e13, trials=2, max_steps=20)
    assert refused.value.name == "theta" and "float32" in refused.value.allowed
    assert f"at most {largest:.3g}" in refused.value.allowed
    for too_large in ("1e13", "1e300"):
        store = tmp_path / f"s{too_large}.sqlite"
        out = CliRunner().invoke(main, ["sweep", "signal-recovery", "--workers", "1", "--store", str(store),
                                        "--set", "d=16", "--set", "L=64", "--set", "R=8", "--set", "trials=2",
                                        "--set", "max_steps=20", "--grid", f"theta=0.5,{too_large}"])
        assert out.exit_code == 2, out.output
        assert "theta" in out.output and "float32" in out.output and "rerun" not in out.output
        assert "Traceback" not in out.output
        if store.exists():
            with ResultStore(store) as results:
                assert list(results.rows("signal-recovery")) == []


def test_a_sweep_refuses_a_sigma_or_score_scale_whose_float32_gradients_overflow():
    """The same bound on σ (no θ_d fits when σ(√d + 10) alone is beyond it) and on the score scale."""
    with pytest.raises(ParameterError) as refused:
        check_sweep_point(16, 64, 8, 1.0, sigma=1e13, trials=2, max_steps=20)
    assert refused.value.name == "sigma" and "float32" in refused.value.allowed
    with pytest.raises(ParameterError) as refused:
        check_sweep_point(16, 64, 8, 1.0, score_scale=1e40, trials=2, max_steps=20)
    assert refused.value.name == "score_scale" and "float32" in refused.value.allowed
