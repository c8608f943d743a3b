"""Copy-heads `simulate` with Adam: the error bar of a joint MAP. Adam's runs on one training set reach that set's
minimum (the kept ones the same one, to about 1e-11 in c at linear L = V = 4, P = 200), so their spread is no error
of its distance from the self-averaged theory, the finite-P scatter between training sets. One set: no error bar (NaN,
null in JSON) and no verdict, as for MALA's lone chain; several sets: the standard error of the sets' means."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from attnphase.api import copy_heads as api
from attnphase.cli import main
from attnphase.results import Status
from attnphase.validate.compare import student_band

ONE_SET_REASON = "one training set: Adam's runs on it reach one minimum"


@pytest.mark.parametrize("trials", [1, 2])
def test_one_training_set_gives_no_error_bar_and_no_verdict(trials):
    """The audit's call (trials 1) said "the theory is rejected by c_copy: 0.49383 ± 0 against 0.494682"; two runs on
    the one set reach the same minimum (c within 1e-11 of each other) and it read z = −1.3e8. Now each quantity has
    sem NaN, agrees None and the one-set reason, and the message rejects nothing."""
    r = api.simulate("linear", 4, 4, 200, algorithm="adam", trials=trials, steps=2000, device="cpu")
    assert r.status == Status.CONVERGED
    assert {c.name for c in r.comparisons} == {"c_copy", "c_uniform", "test_loss", "rho"}
    for c in r.comparisons:
        assert math.isnan(c.sem) and c.agrees is None and c.z is None, c
        assert any(reason.startswith(ONE_SET_REASON) for reason in r.no_verdict[c.name])
    assert r.theory_agrees is None
    assert "rejected" not in r.message
    assert "no verdict on c_copy, c_uniform, test_loss, rho (one training set" in r.message
    if trials == 2:  # the runs do reach one minimum: the spread that was the error bar is round-off
        values = [ch.c_copy for ch in r.chains if ch.kept]
        assert len(values) == 2 and abs(values[0] - values[1]) < 1e-9


def test_one_training_set_error_is_null_in_json():
    """The CLI's --json prints the missing error bar as null (not 0, not NaN) and the verdict as null."""
    out = CliRunner().invoke(main, ["simulate", "copy-heads", "--attention", "linear", "--L", "4", "--V", "4", "--P",
                                    "200", "--algorithm", "adam", "--trials", "1", "--steps", "2000", "--device",
                                    "cpu", "--json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    record = json.loads(out.stdout)
    comparisons = record["comparisons"]
    assert len(comparisons) == 4
    for c in comparisons:
        assert c["sem"] is None and c["agrees"] is None and c["mean"] is not None, c


def test_several_training_sets_give_the_spread_of_their_minima():
    """Three training sets, one run each: the error bar is the standard error of the three minima's c (the change over
    the second half, at most 1e-6 for a converged run, added in quadrature), and the verdict is that of Student's t
    with 2 degrees of freedom."""
    r = api.simulate("linear", 4, 4, 200, algorithm="adam", trials=3, data_sets=3, steps=2000, device="cpu")
    assert r.status == Status.CONVERGED and all(ch.kept for ch in r.chains)
    for name, field in (("c_copy", "c_copy"), ("c_uniform", "c_uniform")):
        c = r.comparison(name)
        values = np.array([getattr(ch, field) for ch in r.chains])
        spread = float(values.std(ddof=1) / math.sqrt(3))
        assert spread > 1e-4  # the finite-P scatter between sets, far above the runs' 1e-11 on one set
        assert spread <= c.sem <= math.hypot(spread, 1e-6), (name, c.sem, spread)
        assert c.n_sigma == pytest.approx(student_band(2)) and c.agrees is not None
        assert c.mean == pytest.approx(values.mean(), abs=1e-15)


def test_sweep_keeps_the_adam_runs_of_the_rule_per_training_set(monkeypatch):
    """`simulate_sweep` takes Adam's kept flags from `samplers.run_adam`; they are the rule applied per training set:
    a run is kept when its objective U lies within max(1, 1e-3·|U_best|) of the lowest U of the runs on its set (here
    recomputed from the objectives run_adam returned, set by set, over two P and two sets each). At 3 steps from
    prior draws the runs lie far apart, so the rule drops some runs and keeps at least one on every set."""
    from attnphase.models.copy_heads import samplers

    returned = []
    original = samplers.run_adam

    def recording(*args, **kwargs):
        returned.append(original(*args, **kwargs))
        return returned[-1]

    monkeypatch.setattr(samplers, "run_adam", recording)
    r = api.simulate_sweep("linear", 4, 4, [100.0, 200.0], algorithm="adam", trials_per_P=3, data_sets=2, steps=10,
                           seed=4, device="cpu")
    (run,) = returned
    U = np.asarray(run.objective).reshape(-1)
    expected = np.zeros(len(U), bool)
    for P in (100.0, 200.0):
        for d in range(2):
            on_set = np.nonzero((r.P == P) & (r.data_set == d))[0]
            assert len(on_set) == 3
            best = U[on_set].min()
            expected[on_set] = U[on_set] <= best + max(1.0, 1e-3 * abs(best))
            assert expected[on_set].any()
    assert np.array_equal(np.asarray(r.kept), expected)
    assert not expected.all()  # the rule is exercised: some run is dropped


def test_sign_fold_reports_each_run_or_sample_with_t_non_negative():
    """`fluctuations.sign_folded`, the one fold of linear attention's (t, c) -> (−t, −c) symmetry: along an axis a run
    is flipped as a whole when its mean t is negative (its negative draws stay negative: one image per run); without
    one each entry is flipped by its own t."""
    from attnphase.models.copy_heads.fluctuations import sign_folded

    t = np.array([[-1.0, 0.5], [1.0, -0.5], [0.0, 0.0]])
    c = np.array([[0.3, -0.2], [0.4, 0.1], [0.7, -0.7]])
    runs_t, runs_c = sign_folded(t, c, axis=-1)
    assert np.array_equal(runs_t, [[1.0, -0.5], [1.0, -0.5], [0.0, 0.0]])
    assert np.array_equal(runs_c, [[-0.3, 0.2], [0.4, 0.1], [0.7, -0.7]])
    each_t, each_c = sign_folded(t, c)
    assert np.array_equal(each_t, np.abs(t))
    assert np.array_equal(each_c, [[-0.3, -0.2], [0.4, -0.1], [0.7, -0.7]])


@pytest.mark.parametrize("data_sets", [1, 3])
def test_an_unsettled_change_is_said_to_be_in_the_error_bars_only_where_there_are_error_bars(data_sets):
    """Audit t18 M62: 200 steps leave Adam unsettled; the message adds its change to the error bars ("(in the error
    bars)") where several training sets give error bars, and not on one set, which has none."""
    r = api.simulate("softmax", 4, 4, 200, algorithm="adam", trials=data_sets, data_sets=data_sets, steps=200, seed=2,
                     device="cpu")
    assert "not settled" in r.message
    assert ("(in the error bars)" in r.message) is (data_sets > 1), r.message


def test_simulate_and_simulate_sweep_take_their_defaults_from_the_settings():
    """The run settings' defaults are declared once, in SimulationSettings (audit t18 M71: a default changed in
    `simulate_sweep`'s signature alone went unnoticed)."""
    import inspect

    from attnphase.models.copy_heads.parameters import SimulationSettings

    declared = set(SimulationSettings.declarations())
    simulate = [name for name in inspect.signature(api.simulate).parameters if name in declared]
    # the sweep's own steps (2000) and trap cut (SWEEP_TRAP_SDS) differ by design, and are its own
    for function, shared in ((api.simulate, simulate),
                             (api.simulate_sweep, ("algorithm", "seed", "device", "n_test_sequences"))):
        parameters = inspect.signature(function).parameters
        assert len(shared) >= 4, (function.__name__, shared)
        for name in shared:
            default = parameters[name].default
            default = getattr(default, "value", default)  # a setting with a deprecated spelling wraps its default
            assert default == SimulationSettings.default(name), (function.__name__, name)
