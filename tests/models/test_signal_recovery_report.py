"""The signal-recovery report resumes an interrupted sweep from its checkpoint."""

from __future__ import annotations

import pytest

from attnphase.api import signal_recovery as api
from attnphase.reproduce import signal_recovery as report
from attnphase.resume import Checkpoint


def _fake_point(calls):
    """A stand-in for api.sweep_point whose values identify the configuration (no simulation)."""

    def point(d, L, R, theta, theta_scaling, sigma, beta, sign_model, trials, steps, seed, device):
        calls.append((d, L, theta, theta_scaling, sign_model))
        keys = ("theta_d", "steps", "t_final", "budget_limited", "alignment_mean", "ode_alignment_mean",
                "ode_limit_alignment_mean", "positive_fraction", "ode_limit_positive_fraction",
                "nuisance_mass_mean", "ode_nuisance_mass_mean", "ode_limit_nuisance_mass_mean",
                "minus_xi_stable", "nuisance_mass_at_xi")
        value = d + L / 1e5 + theta / 10 + (sign_model == "B") / 100
        return {k: value for k in keys}

    return point


def test_interrupted_sweep_resumes_without_recomputing(tmp_path, monkeypatch):
    """Kill the sweep after 5 points, rerun: the 5 finished points come from checkpoint.json, only the
    rest is computed, and the rows equal those of an uninterrupted sweep."""
    configs = report.sweep_configs(quick=True)
    calls = []
    compute = _fake_point(calls)

    def interrupted(*args):
        if len(calls) == 5:
            raise KeyboardInterrupt
        return compute(*args)

    monkeypatch.setattr(api, "sweep_point", interrupted)
    with pytest.raises(KeyboardInterrupt):
        report.run_sweep(Checkpoint(tmp_path / "checkpoint.json"), True, "cpu")
    assert len(Checkpoint(tmp_path / "checkpoint.json").entries) == 5

    monkeypatch.setattr(api, "sweep_point", compute)
    resumed = report.run_sweep(Checkpoint(tmp_path / "checkpoint.json"), True, "cpu")
    assert len(calls) == len(configs)  # 5 before the interruption, the rest after it; none twice
    assert len(set(calls)) == len(configs)

    fresh = report.run_sweep(Checkpoint(tmp_path / "fresh.json"), True, "cpu")
    assert resumed == fresh
