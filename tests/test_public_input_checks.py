"""Bad and edge input to public helpers (audit b13, D1-D4): each refusal is a ParameterError naming the parameter and
its allowed range, a NaN is never reported as converged, and a huge prior variance of the linear copy-heads action
gives one JSON object rather than a crash."""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

from attnphase import numeric, validate
from attnphase.cli import main
from attnphase.errors import ParameterError
from attnphase.results import Status


def refused(call, name: str, allowed: str) -> ParameterError:
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.name == name
    assert info.value.allowed == allowed
    assert f"invalid value for {name}:" in str(info.value) and f"(allowed: {allowed})" in str(info.value)
    return info.value


POSITIVE = "a finite real number in (0, inf)"
NONNEGATIVE = "a finite real number in [0, inf)"
FINITE = "a finite real number in (-inf, inf)"


# --- D1: copy-heads linear attention at a prior variance whose precision underflows -----------------------------

def run_cli(*args):
    """The command in this process (click's runner: exit status, stdout and stderr apart)."""
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("option", ["--s1", "--score-variance"])
def test_linear_copy_heads_huge_prior_variance_is_solved(option):
    # λ = 1/s1 (or 1/σ²) underflows to 0 at 1e308: the prior is flat there, and the minima are those of 1e300
    done = run_cli("solve", "copy-heads", "--attention", "linear", "--L", "16", "--V", "4", "--P", "300",
                   option, "1e308", "--json")
    assert done.exit_code == 0, done.stderr
    assert "Error" not in done.stderr
    out = json.loads(done.stdout)  # exactly one JSON object
    assert isinstance(out, dict) and out["status"] == "converged"
    reference = json.loads(run_cli("solve", "copy-heads", "--attention", "linear", "--L", "16", "--V", "4", "--P",
                                   "300", option, "1e300", "--json").stdout)
    assert out["minima"] == reference["minima"] and out["global_index"] == reference["global_index"]


@pytest.mark.parametrize("option", ["--s1", "--score-variance"])
def test_linear_copy_heads_threshold_at_a_huge_prior_variance_is_that_just_below_the_underflow(option):
    # P* does not depend on the flat direction's prior; the branches' scale (τλ)^(-1/4) took 0 to a negative power
    # (ZeroDivisionError) where λ underflows, and is now that of the smallest normal float, as just above 1e305
    def threshold(value):
        done = run_cli("threshold", "copy-heads", "--attention", "linear", "--L", "16", "--V", "4", option, value,
                       "--json")
        assert done.exit_code == 0 and "Error" not in done.stderr, done.stderr
        return json.loads(done.stdout)

    huge, below = threshold("1e308"), threshold("1e305")
    assert huge["P_star"] == below["P_star"] and huge["order"] == below["order"] == "second"
    assert huge["status"] == below["status"] and huge["crossover_order"] == below["crossover_order"]


@pytest.mark.parametrize("extra, name", [(("--score-variance", "1e-308"), "lam_c"),
                                         (("--no-bias", "--score-variance", "5e-324"), "lam_t")])
def test_linear_copy_heads_tiny_score_variance_fails_naming_it(extra, name):
    # σ² so small that a prior precision overflows float64: status failed naming the option, as --beta and --tau
    done = run_cli("solve", "copy-heads", "--attention", "linear", "--L", "16", "--V", "4", "--P", "300", *extra,
                   "--json")
    assert done.exit_code == 1 and "Error" not in done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "failed" and out["minima"] == []
    assert out["message"].startswith(f"the prior precision {name} overflows float64 at σ² = ")
    assert "sigma2 (--score-variance) = " in out["message"] and "alone puts them there" in out["message"]


def test_linear_grid_starts_with_an_underflowed_precision():
    from attnphase.models.copy_heads.convention import DEFAULT
    from attnphase.models.copy_heads.homogeneous import linear_grid_starts
    from attnphase.models.copy_heads.instance import CopyHeadsInstance

    inst = CopyHeadsInstance.validated(attention="linear", L=16, V=4, convention=DEFAULT.with_(s1=1e308))
    assert float(inst.values()["lam_c"]) == 0.0 or float(inst.values()["lam_t"]) == 0.0
    assert linear_grid_starts(inst, inst.n_of_P(300.0)) == []  # no grid: its box lies beyond float64


# --- D2: bisect_geometric --------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [math.nan, -1.0, 0.0, math.inf])
@pytest.mark.parametrize("which", ["inside", "outside"])
def test_bisect_geometric_refuses_bounds_that_are_not_positive(which, bad):
    bounds = {"inside": 0.5, "outside": 2.0, which: bad}
    refused(lambda: numeric.bisect_geometric(lambda a: a < 1, bounds["inside"], bounds["outside"]), which, POSITIVE)


def test_bisect_geometric_refuses_bad_iterations_and_rtol():
    refused(lambda: numeric.bisect_geometric(lambda a: a < 1, 0.5, 2.0, iterations=-1), "iterations",
            "an integer in [0, inf)")
    refused(lambda: numeric.bisect_geometric(lambda a: a < 1, 0.5, 2.0, rtol=math.nan), "rtol", POSITIVE)


def test_bisect_geometric_on_valid_bounds_is_unchanged():
    found = numeric.bisect_geometric(lambda a: a < 1, 0.5, 2.0)
    assert found.status == Status.CONVERGED and math.isfinite(found.value)
    assert found.bracket[0] < 1 <= found.bracket[1] and found.value == pytest.approx(1.0, rel=1e-12)


# --- D3: the other numeric and validate helpers ----------------------------------------------------------------

def test_larger_quadratic_root_refuses_its_domain():
    refused(lambda: numeric.larger_quadratic_root(0.0, 1.0, -1.0), "a2", POSITIVE)
    refused(lambda: numeric.larger_quadratic_root(np.array([1.0, -2.0]), 1.0, -1.0), "a2", POSITIVE)
    refused(lambda: numeric.larger_quadratic_root(1.0, math.nan, -1.0), "a1", FINITE)
    err = refused(lambda: numeric.larger_quadratic_root(1.0, 0.0, 1.0), "a0", "at most a1²/(4·a2) = 0 (real roots)")
    assert err.value == 1.0
    assert float(numeric.larger_quadratic_root(1.0, -3.0, 2.0)) == 2.0
    assert np.allclose(numeric.larger_quadratic_root(np.array([1.0, 2.0]), np.array([-3.0, 0.0]), -2.0),
                       [(3 + math.sqrt(17)) / 2, 1.0])


def test_central_hessian_2d_refuses_a_zero_step():
    def f(x, y):
        return x * x + 3 * x * y + 2 * y * y

    refused(lambda: numeric.central_hessian_2d(f, 0.0, 0.0, 0.0, 0.1), "dx", POSITIVE)
    refused(lambda: numeric.central_hessian_2d(f, 0.0, 0.0, 0.1, -0.1), "dy", POSITIVE)
    refused(lambda: numeric.central_hessian_2d(f, math.nan, 0.0, 0.1, 0.1), "x", FINITE)
    assert np.allclose(numeric.central_hessian_2d(f, 0.0, 0.0, 0.1, 0.1), [[2.0, 3.0], [3.0, 4.0]])


@pytest.mark.parametrize("values", [[], [1.0]])
def test_heavy_tailed_mean_refuses_too_few_values(values):
    refused(lambda: numeric.heavy_tailed_mean(values), "values", "at least 2 values (the standard error needs two)")


@pytest.mark.parametrize("bad", [math.inf, math.nan, -1.0])
def test_heavy_tailed_mean_refuses_values_that_are_not_finite_and_nonnegative(bad):
    refused(lambda: numeric.heavy_tailed_mean([1.0, bad, 2.0]), "values", NONNEGATIVE)


def test_heavy_tailed_mean_on_valid_values():
    mean, error = numeric.heavy_tailed_mean([1.0, 2.0, 3.0])
    assert mean == 2.0 and error == pytest.approx(1 / math.sqrt(3))


def test_tensor_rule_refuses_bad_sizes():
    refused(lambda: numeric.tensor_rule(0, 5), "dim", "an integer in [1, 32]")
    refused(lambda: numeric.tensor_rule(2, 0), "n", "an integer in [1, inf)")
    refused(lambda: numeric.tensor_rule(30, 30), "n", "at most 1 in 30 dimensions (2^26 nodes)")
    refused(lambda: numeric.tensor_rule(4, 100), "n", "at most 90 in 4 dimensions (2^26 nodes)")
    nodes, weights = numeric.tensor_rule(2, 5)
    assert nodes.shape == (25, 2) and weights.sum() == pytest.approx(1.0)


def test_validate_batch_means_refuses_no_batches_and_no_samples():
    x = np.arange(20.0)
    refused(lambda: validate.batch_means(x, 0), "n_batches", "an integer in [1, inf)")
    refused(lambda: validate.batch_means(np.array([]), 10), "x",
            "an array with at least one sample along its last axis")
    assert validate.batch_means(x, 4).tolist() == [2.0, 7.0, 12.0, 17.0]
    assert validate.batch_means(x[:5], 10).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]  # documented: fewer when S is smaller


def test_rounded_error_refuses_a_negative_error():
    refused(lambda: numeric.rounded_error(1.0, -1.0), "error", NONNEGATIVE)
    refused(lambda: numeric.rounded_error(1.0, "x"), "error", NONNEGATIVE)
    assert numeric.rounded_error(1.0, 0.5) == 0.5
    assert math.isinf(numeric.rounded_error(mpmath.mpf(1), math.inf))


def test_digits_text_refuses_zero_digits():
    refused(lambda: numeric.digits_text(1.5, 0), "n_digits", "an integer in [1, inf)")
    assert numeric.digits_text(1.5, 2) == "1.5"


def test_threshold_from_error_refuses_a_nan_root_and_a_negative_error():
    refused(lambda: numeric.threshold_from_error(math.nan, 0.1, 5, (0, 1), "x"), "root", FINITE)
    refused(lambda: numeric.threshold_from_error(mpmath.mpf("nan"), 0.1, 5, (0, 1), "x"), "root", FINITE)
    refused(lambda: numeric.threshold_from_error(0.5, -0.1, 5, (0, 1), "x"), "error", NONNEGATIVE)
    for unbounded in (math.inf, math.nan):  # a location without an error: no digit, never converged
        assert numeric.threshold_from_error(0.5, unbounded, 5, (0, 1), "x").status == Status.LIMITED
    refused(lambda: numeric.threshold_from_error(0.5, 0.1, 0, (0, 1), "x"), "digits", "an integer in [1, 1000]")
    found = numeric.threshold_from_error(0.5, math.inf, 5, (0, 1), "x")
    assert found.status == Status.LIMITED and found.value == 0.5
    assert numeric.threshold_from_error(0.5, 1e-12, 5, (0, 1), "x").status == Status.CONVERGED


def test_trial_seeds_names_n_trials():
    refused(lambda: validate.trial_seeds(0, 0), "n_trials", "an integer in [1, inf)")


def test_classify_minimum_refuses_mismatched_shapes():
    refused(lambda: validate.classify_minimum(np.ones(3), np.ones(2), 0.5, 0.5), "theta",
            "the shape of m, (3,) (one value per run)")
    assert list(validate.classify_minimum(np.array([0.4, 0.0]), np.array([0.0, 0.4]), 0.5, 0.5)) == [
        "positional", "semantic"]


# --- D4: chains that never moved ---------------------------------------------------------------------------------

STUCK = "draws that vary (chains that never moved, zero variance, have no diagnostics)"


@pytest.mark.parametrize("diagnostic", [numeric.effective_sample_size, numeric.split_rhat, numeric.mcse_mean,
                                        numeric.integrated_autocorrelation_time])
def test_diagnostics_refuse_constant_draws(diagnostic):
    refused(lambda: diagnostic(np.ones((2, 100))), "draws", STUCK)


@pytest.mark.parametrize("draws, where", [(np.ones((4, 1000)), "all at one value"),
                                          (np.repeat(np.arange(4.0)[:, None], 1000, axis=1), "each at its own value")])
def test_summarize_chains_on_chains_that_never_moved(draws, where):
    summary = numeric.summarize_chains(draws)
    fields = [summary.mean, summary.sd, summary.mcse_mean, summary.batch_means_sem, summary.ess_bulk,
              summary.ess_tail, summary.ess_mean, summary.rhat]
    assert not any(math.isnan(v) for v in fields)
    assert summary.status == Status.POOR_MIXING and not summary.success
    assert "nan" not in summary.message
    assert summary.message == ("the chains did not move: every chain's 1000 draws are constant "
                               f"({where}; zero within-chain variance), so they carry no diagnostics")
    assert summary.rhat == math.inf and summary.ess_bulk == 0.0 and summary.mcse_mean == math.inf
    json.dumps(summary.as_dict(), allow_nan=False)


def test_split_rhat_of_chains_stuck_apart_is_not_nan():
    rhat = numeric.split_rhat(np.repeat(np.arange(4.0)[:, None], 100, axis=1))
    assert rhat > 1e6  # inf, or ~1e16 where the normal scores of tied ranks differ by their rounding


def test_summarize_chains_on_moving_chains_is_unchanged():
    draws = np.random.default_rng(0).normal(size=(4, 1000))
    summary = numeric.summarize_chains(draws)
    assert summary.status == Status.CONVERGED and math.isfinite(summary.rhat) and summary.rhat < 1.01


# --- the copy-heads API refuses what only linear attention has, with softmax attention -----------------------------

SOFTMAX_ONLY_DEFAULTS = "left at its default ({!r}) with softmax attention: it applies to linear attention only"


@pytest.mark.parametrize("field, value", [("s1", 5.0), ("bias", False), ("linear_scale", "1"),
                                          ("row_sums", "per-row")])
@pytest.mark.parametrize("entry", ["solve", "threshold", "scaling", "simulate", "sweep_point"])
def test_copy_heads_api_refuses_linear_choices_with_softmax(entry, field, value):
    """Each was accepted and echoed in the result's convention while changing nothing (the CLI refused them)."""
    from attnphase.api import copy_heads as api

    convention = api.DEFAULT.with_(**{field: value})
    calls = {
        "solve": lambda: api.solve("softmax", 16, 4, 300.0, convention=convention),
        "threshold": lambda: api.threshold("softmax", 16, 4, digits=5, convention=convention),
        "scaling": lambda: api.scaling("softmax", 4, 16, 64, convention=convention),
        "simulate": lambda: api.simulate("softmax", 8, 4, 100.0, steps=10, device="cpu", convention=convention),
        "sweep_point": lambda: api.sweep_point("softmax", 16, 4, 300.0, **{field: value}),
    }
    default = api.Convention.declarations()[field].default
    refused(calls[entry], field, SOFTMAX_ONLY_DEFAULTS.format(default))


def test_copy_heads_threshold_refuses_a_linear_reduction_with_softmax():
    from attnphase.api import copy_heads as api

    refused(lambda: api.threshold("softmax", 16, 4, digits=5, reduction="first-attempt"), "reduction",
            SOFTMAX_ONLY_DEFAULTS.format("convention-a"))


# --- $NUMBA_NUM_THREADS: numba starts that many threads at its first parallel loop ------------------------------

@pytest.mark.parametrize("value", ["0", "-3", "abc", "", "1e308", "5000", "100000"])
def test_a_numba_thread_count_it_cannot_start_is_refused_naming_the_variable(value, monkeypatch):
    # audit b15: 100000 crashed the process (segmentation fault), 5000 hung a two-core machine past 120 s, 0 stopped
    # numba with its own ValueError; now every command refuses it before it starts, exit 2, one line
    monkeypatch.setenv("NUMBA_NUM_THREADS", value)
    done = run_cli("solve", "potts", "--q", "3", "--beta", "1", "--json")
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.strip() == (f"Error: invalid value for $NUMBA_NUM_THREADS: {value!r} (allowed: an integer in "
                                   "[1, 4096] (unset: every core))")


def test_a_numba_thread_count_in_range_runs(monkeypatch):
    monkeypatch.setenv("NUMBA_NUM_THREADS", "4096")
    done = run_cli("solve", "potts", "--q", "3", "--beta", "1", "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["status"] == "converged"


def test_a_chain_that_never_moves_gives_no_coverage_and_no_warning():
    # s1 = 1e308: the linear prior is flat along t and every step of the short chain is rejected, so each sample is
    # the starting matrix 0; the second-moment fraction was 0/0 with numpy's RuntimeWarning on stderr (audit b15)
    import warnings

    from attnphase.api import copy_heads as ch

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        run = ch.simulate("linear", 4, 4, 100.0, convention=ch.DEFAULT.with_(s1=1e308), steps=10, trials=1,
                          device="cpu")
    coverage = run.coverage
    assert all(math.isnan(v) for v in (coverage.variance_fraction, coverage.pca_top2_fraction,
                                       coverage.second_moment_fraction))
