"""Copy-heads `simulate`: what its status and error bars promise (docs/models/copy_heads.md, "Simulation against
theory"). Two points of the default settings (2 runs × 4000 steps): softmax L = V = 4, P = 200, where the chains mix
(integrated autocorrelation time of c about 2.5 draws), and linear L = 8, V = 4, P = 1000 with the remainder's
entropy and per-row sums, where about one chain in six sticks in a trap (c ≈ −0.43, data term about 80 nats above
the others) for tens of thousands of steps."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
import torch

from attnphase.api import copy_heads as api
from attnphase.models.copy_heads.convention import DEFAULT
from attnphase.results import Status
from attnphase.validate.training import adam_minimise

LINEAR = DEFAULT.with_(remainder="entropy", row_sums="per-row")


def test_healthy_chains_are_converged_with_the_rule_they_meet():
    """Softmax L = V = 4, P = 200, seed 0: split R-hat of c 1.018, ESS of its mean 164 (of 400 draws), and the bar
    covers a 16-chain × 24000-step recomputation on the same data (z = −1.6). The status says converged (it said
    poor_mixing on every default run: the former rule, ESS ≥ 100 per chain, cannot be met by 200 draws a chain)."""
    r = api.simulate("softmax", 4, 4, 200.0, seed=0, device="cpu")
    assert r.status == Status.CONVERGED, r.message
    copy = next(d for d in r.diagnostics if d.name == "c_copy")
    assert copy.rhat <= 1.05 and copy.ess_mean >= 100  # the rule the status names
    reference = 0.6401  # ± 0.0008, 16 chains × 24000 steps on the same training set
    c = r.comparison("c_copy")
    assert abs(c.mean - reference) <= 3 * math.hypot(c.sem, 0.0008)
    assert "mixed" in r.message and all(ch.kept for ch in r.chains)


def _same_sampler_input(a, b):
    """Whether two calls of `samplers.run_langevin` were given the same arguments (the data sets compared entry by
    entry), so that the second returns what the first did."""
    def same(x, y):
        if isinstance(x, torch.Tensor):
            return isinstance(y, torch.Tensor) and x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y)
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            return type(x) is type(y) and all(same(getattr(x, f.name), getattr(y, f.name))
                                              for f in dataclasses.fields(x))
        return x == y

    (args_a, kwargs_a), (args_b, kwargs_b) = a, b
    return (len(args_a) == len(args_b) and kwargs_a.keys() == kwargs_b.keys()
            and all(same(x, y) for x, y in zip(args_a, args_b))
            and all(same(kwargs_a[k], kwargs_b[k]) for k in kwargs_a))


@pytest.fixture(scope="module")
def seed_16_runs():
    """Linear L = 8, P = 1000, seed 16 (the remainder's entropy, per-row sums), simulated with the trapped chain left
    out and kept. `trapped` only chooses which chains enter the means, after the sampler: the two calls give the
    sampler the same data, starts and seed (checked here, argument by argument), so its chains are drawn once and the
    second call's statistics, status and message are computed from them as the first call's are."""
    from attnphase.models.copy_heads import samplers

    run_langevin, calls = samplers.run_langevin, []

    def drawn_once(*args, **kwargs):
        for given, run in calls:
            if _same_sampler_input(given, (args, kwargs)):
                return run
        calls.append(((args, kwargs), run_langevin(*args, **kwargs)))
        return calls[-1][1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(samplers, "run_langevin", drawn_once)
        runs = {"leave-out": api.simulate("linear", 8, 4, 1000.0, seed=16, device="cpu", convention=LINEAR),
                "keep": api.simulate("linear", 8, 4, 1000.0, seed=16, device="cpu", convention=LINEAR, trapped="keep")}
    assert len(calls) == 1  # the second simulation's sampler input was the first's
    return runs


def test_a_trapped_chain_is_named_and_left_out_of_the_means(seed_16_runs):
    """Linear L = 8, P = 1000, seed 16: the uniform-start chain sits in the trap (data term 78 nats above the other
    chain, 12 times the within-chain spread). It is left out (kept False), the status is poor_mixing and says so, and
    c is the other chain's: 0.38 ± 0.01 (with both chains it was −0.01 ± 0.28, which 'agreed' with anything)."""
    r = seed_16_runs["leave-out"]  # trapped left at its default
    assert r.status == Status.POOR_MIXING
    assert "chain 0 (uniform start) trapped" in r.message and "left out of the means" in r.message
    assert [ch.kept for ch in r.chains] == [False, True]
    assert r.chains[0].c_copy < -0.3 and r.chains[0].train_loss > 2 * r.chains[1].train_loss
    c = r.comparison("c_copy")
    assert c.mean == pytest.approx(r.chains[1].c_copy, abs=1e-12)
    assert c.sem < 0.02 and c.n == 200
    # one chain left: its ESS-based bar cannot be diagnosed, so no verdict on anything (seed 3, the audit's case: one
    # chain's t 0.385 ± 0.013 against a converged 0.4455 ± 0.0016, z = −4.7)
    lone = "one chain on the training set, chain 0 left out as trapped: the error of a single chain cannot be diagnosed"
    assert all(cmp.agrees is None and lone in r.no_verdict[cmp.name] for cmp in r.comparisons)
    named = ", ".join(f"{cmp.name} (z = {cmp.z:.3g})" for cmp in r.comparisons)
    assert r.theory_agrees is None and f"; no verdict on {named} ({lone}); no verdict on c_copy (not" in r.message, \
        r.message


def test_kept_trapped_chains_give_no_verdict(seed_16_runs):
    r = seed_16_runs["keep"]  # the same chains as the test above, trapped="keep"
    assert r.status == Status.POOR_MIXING and "no agreement is claimed" in r.message
    assert all(ch.kept for ch in r.chains)
    assert all(c.agrees is None for c in r.comparisons)
    assert all("trapped chains kept in the means" in r.no_verdict[c.name][0] for c in r.comparisons)
    assert r.comparison("c_copy").sem > 0.2  # the two chains' disagreement


def test_both_chains_trapped_is_seen_by_r_hat_only_and_gets_no_verdict():
    """Seed 10: both chains in the trap. Nothing is left out (no chain lies above another), but split R-hat of c (1.35)
    and its ESS (5) say poor_mixing. c lies tens of bars from the theory (0.356), which the converged posterior
    (0.37) does not: the draws are the trap's, so c is "not resolved", neither agreement nor rejection."""
    r = api.simulate("linear", 8, 4, 1000.0, seed=10, device="cpu", convention=LINEAR)
    assert r.status == Status.POOR_MIXING and "trapped" not in r.message
    copy = next(d for d in r.diagnostics if d.name == "c_copy")
    assert copy.rhat > 1.2 and copy.ess_mean < 20
    assert "c_copy: R-hat" in r.message
    c = r.comparison("c_copy")
    assert c.mean < -0.4 and c.z < -10 and c.agrees is None
    reason = f"not resolved: R-hat {copy.rhat:.3f} > 1.05, ESS {copy.ess_mean:.0f} < 100"
    assert r.no_verdict["c_copy"] == (reason,) and f"no verdict on c_copy (z = {c.z:.3g}) ({reason})" in r.message, \
        r.message
    assert r.theory_agrees is not True


def test_trap_rule_on_constructed_chains():
    """Two training sets of three chains: on the first, chain 2 lies 10 spreads above the lowest and is trapped; on the
    second, chains differing by one spread are not; the lowest chain is never trapped; one chain alone never is."""
    from attnphase.models.copy_heads.chain_statistics import trapped_chains

    rng = np.random.default_rng(0)
    terms = rng.normal(40.0, 6.0, (6, 500))
    terms[2] += 60.0
    terms[4] += 6.0
    trapped, notes = trapped_chains(terms, np.array([0, 0, 0, 1, 1, 1]), ["uniform", "copy"] * 3, 5.0)
    assert trapped.tolist() == [False, False, True, False, False, False]
    assert len(notes) == 1 and notes[0].startswith("chain 2 (uniform start) trapped")
    assert not trapped_chains(terms[2:3], np.array([0]), ["copy"], 5.0)[0].any()


@pytest.fixture(scope="module")
def adam_4000():
    return api.simulate("softmax", 4, 4, 200.0, algorithm="adam", seed=2, device="cpu")


@pytest.mark.slow
def test_adam_result_does_not_move_with_more_steps(adam_4000):
    """Softmax L = V = 4, P = 200, seed 2: Adam (lr 0.05) reaches the minimum within 1000 steps and then leaves it
    (after 8000 steps U is 4e-3 higher and c has moved by 7e-4 in one run, 300 000 of the former bars). Each run now
    returns its lowest-U iterate: 8000 steps give each run's 4000-step values within the tolerance that status
    converged certifies (a change of at most adam_tolerance = 1e-6 over the second half of the steps). One training
    set: no error bar of the finite-P minimum (NaN, tests/models/test_copy_heads_adam_errors.py)."""
    longer = api.simulate("softmax", 4, 4, 200.0, algorithm="adam", steps=8000, seed=2, device="cpu")
    assert adam_4000.status == longer.status == Status.CONVERGED
    for name in ("c_copy", "test_loss"):
        a, b = adam_4000.comparison(name), longer.comparison(name)
        assert abs(a.mean - b.mean) <= 1e-6, name
    for a, b in zip(adam_4000.chains, longer.chains):  # each run, not only their mean
        assert abs(a.c_copy - b.c_copy) <= 1e-6 and b.train_loss <= a.train_loss + 1e-12


def test_unsettled_adam_is_limited_and_its_change_covers_the_settled_value(adam_4000):
    """After 200 steps c still moves (by 3e-3 over steps 100..200): status limited, the message names that change, and
    it covers each run's distance from its value after 4000 steps (measured: 1.1e-5 in the mean; conservative here).
    The message gives the change to 2 digits, so it is read with its rounding (5% of it) added."""
    short = api.simulate("softmax", 4, 4, 200.0, algorithm="adam", steps=200, seed=2, device="cpu")
    assert short.status == Status.LIMITED
    found = re.search(r"c_copy changed by ([0-9.e+-]+)", short.message)
    assert found, short.message
    change = 1.05 * float(found.group(1))
    for s, settled in zip(short.chains, adam_4000.chains):
        assert abs(s.c_copy - settled.c_copy) <= change


def test_adam_keep_best_returns_the_lowest_iterate():
    """A quadratic whose Adam iterates overshoot at lr = 1: keep_best returns the iterate of lowest potential seen, the
    plain run its last one; record_at receives the state it would return after that step."""
    def potential(p):
        return ((p["x"] - 1.0) ** 2).sum(-1)

    seen = []
    plain = adam_minimise(potential, {"x": torch.zeros(3, 2, dtype=torch.float64)}, steps=7, lr=1.0)
    best = adam_minimise(potential, {"x": torch.zeros(3, 2, dtype=torch.float64)}, steps=7, lr=1.0, keep_best=True,
                         record=lambda step, state: seen.append((step, state["x"].clone())), record_at=(3,))
    x = torch.zeros(3, 2, dtype=torch.float64, requires_grad=True)
    optimiser, values = torch.optim.Adam([x], lr=1.0), []
    for _ in range(7):
        optimiser.zero_grad()
        U = ((x - 1.0) ** 2).sum(-1)
        values.append(U.detach().clone())
        U.sum().backward()
        optimiser.step()
    values.append(((x.detach() - 1.0) ** 2).sum(-1))
    lowest = torch.stack(values).min(0).values
    assert torch.allclose(potential(best).detach(), lowest, rtol=0, atol=1e-15)
    assert torch.allclose(plain["x"].detach(), x.detach())
    assert torch.all(potential(plain).detach() > lowest)
    assert seen and seen[0][0] == 3 and torch.all(potential({"x": seen[0][1]}) >= lowest)


def test_two_training_sets_give_no_verdict_and_an_error_at_least_their_own():
    """With two training sets the error is their spread (one degree of freedom, a ±236σ band at 99.73%), which can
    fall below each set's own sampling error: at linear L = 8, P = 1000 every comparison read "agrees" at z = 141.
    Now the error is at least the sets' own errors combined, and two sets give no verdict."""
    r = api.simulate("linear", 8, 4, 1000.0, trials=4, data_sets=2, steps=1000, seed=5, device="cpu", rng="cpu")
    own = {d.name: d.mcse for d in r.diagnostics}
    for c in r.comparisons:
        assert c.agrees is None, c
        if c.name in own:
            assert c.sem >= own[c.name] * (1 - 1e-12), (c.name, c.sem, own[c.name])
        assert r.compared_with(c.name, c.theory + 1e6 * (c.sem + 1)).agrees is None


def test_too_few_draws_per_chain_are_not_diagnosed_and_not_called_mixed():
    """Softmax L = 8, P = 400, 60 steps: 3 draws a chain (burn-in 30, thin 5). Split R-hat and the ESS need 4, and the
    quantity varies (the chains' means differ), so: poor_mixing, no "mixed", no verdict, and the error is the draws'
    standard deviation (recomputed here from the chains' c) instead of 0 with "converged"."""
    r = api.simulate("softmax", 8, 4, 400.0, steps=60, seed=0, device="cpu")
    assert r.status == Status.POOR_MIXING, r.message
    assert "; mixed:" not in r.message and "not diagnosed" in r.message
    copy = next(d for d in r.diagnostics if d.name == "c_copy")
    assert copy.draws_per_chain == 3 and copy.status == Status.POOR_MIXING and math.isnan(copy.rhat)
    c = r.comparison("c_copy")
    assert c.agrees is None and math.isfinite(c.mean) and math.isfinite(c.sem)
    assert r.chains[0].c_copy != r.chains[1].c_copy  # not constant
    # the same standard deviation from the draws (c_copy_std of each chain is its own std over its 3 draws, ddof 0)
    draws = 3
    within = sum(ch.c_copy_std ** 2 * draws for ch in r.chains)
    mean = sum(ch.c_copy for ch in r.chains) / 2
    between = sum(draws * (ch.c_copy - mean) ** 2 for ch in r.chains)
    assert c.sem == pytest.approx(math.sqrt((within + between) / (2 * draws - 1)), rel=1e-9)


def test_a_status_poor_only_from_low_acceptance_does_not_say_mixed():
    """Softmax L = 8, P = 400, 80 steps, seed 0: one chain accepts 12% (≤ 20%). With the R-hat and ESS rules relaxed
    so that only the acceptance fails, the message names the acceptance and does not say "mixed" (it did)."""
    r = api.simulate("softmax", 8, 4, 400.0, steps=80, seed=0, device="cpu", rhat_max=100.0, ess_min=1.0)
    assert min(ch.acceptance for ch in r.chains) <= 0.2
    assert r.status == Status.POOR_MIXING
    assert "; mixed:" not in r.message and "accepts 20% of its proposals or fewer" in r.message


def test_draw_statistics_with_too_few_draws_or_a_still_chain_on_constructed_chains():
    """Two chains of three draws that differ: the error is their standard deviation (ddof 1), poor_mixing. Twenty
    draws where one chain never changes (a chain that did not move) are not diagnosed either: poor_mixing, NaN R-hat,
    the same error; a quantity no chain changed is not "constant: converged" with error 0 any more."""
    from attnphase.models.copy_heads.chain_statistics import draw_statistics

    draws = np.array([[0.66, 0.65, 0.67], [0.64, 0.645, 0.641]])
    mean, sd, sem, n, dof, diagnostics, _ = draw_statistics(draws, np.zeros(2, int), "c_copy", "mala")
    assert mean == pytest.approx(draws.mean()) and sem == pytest.approx(draws.std(ddof=1)) and n == 6
    assert diagnostics.status == Status.POOR_MIXING and "not diagnosed" in diagnostics.message
    still = np.vstack([np.random.default_rng(1).normal(0.6, 0.01, 20), np.full(20, 0.3)])
    _, _, sem, _, _, diagnostics, _ = draw_statistics(still, np.zeros(2, int), "c_copy", "mala")
    assert sem == pytest.approx(still.std(ddof=1)) and math.isnan(diagnostics.rhat)
    assert diagnostics.status == Status.POOR_MIXING and "a chain never changed it" in diagnostics.message
    constant = draw_statistics(np.zeros((2, 20)), np.zeros(2, int), "rho", "mala")
    assert constant[2] == 0.0 and constant[5].status == Status.POOR_MIXING


# linear: slow (7 s: its solves next to the range's end take seconds each); the refusal is the same code for both
@pytest.mark.parametrize("attention, option, name, P", [
    pytest.param("linear", "--tau", "tau0", 1000.0, marks=pytest.mark.slow),
    ("softmax", "--score-variance", "sigma2", 400.0)])
def test_a_prior_variance_the_theory_cannot_use_is_refused_with_its_range(attention, option, name, P):
    """`--tau 1e300` (linear) and `--score-variance 1e300` (softmax) at L = 8 ended in a bare RuntimeError, exit 1. Now
    exit 2 and the option is named with the range where the theory is computed at these L, V, P; the range's end is
    real: solve converges at it and fails a decade above it."""
    import re

    from click.testing import CliRunner

    from attnphase.cli import main

    out = CliRunner().invoke(main, ["simulate", "copy-heads", "--attention", attention, "--L", "8", "--V", "4", "--P",
                                    str(P), option, "1e300", "--steps", "20", "--device", "cpu"])
    assert out.exit_code == 2, out.output
    found = re.search(rf"invalid value for {option}: 1e\+300 \(allowed: a value in \(0, ([0-9.e+]+)\]", out.output)
    assert found is not None, out.output
    limit = float(found.group(1))
    at = api.solve(attention, 8, 4, P, DEFAULT.with_(**{name: limit}))
    above = api.solve(attention, 8, 4, P, DEFAULT.with_(**{name: limit * 10}))
    assert at.status == Status.CONVERGED and above.status == Status.FAILED


def test_a_rejected_theory_is_said_at_top_level_while_the_status_stays_the_runs(monkeypatch):
    """Softmax L = 8, V = 4, P = 400, 4 chains × 3000 steps, seed 3 (the audit's run): the chains mix (status converged,
    as every model's `simulate` reports its run), but c_copy rejects the homogeneous action (docs: 0.603 at 400 is
    rejected) at z ≈ −10: `theory_agrees` is False and the message names the rejected quantity with its numbers,
    z recomputed here from the mean, its error and the theory. Also the CLI's JSON carries it (the command given the
    same options gets this run, not a second one of the same seconds)."""
    import dataclasses
    import json

    from click.testing import CliRunner

    import attnphase.api.copy_heads as copy_heads_api
    from attnphase.cli import main

    r = api.simulate("softmax", 8, 4, 400.0, trials=4, steps=3000, seed=3, device="cpu")
    assert r.status == Status.CONVERGED and r.success, r.message
    copy = r.comparison("c_copy")
    z = (copy.mean - copy.theory) / copy.sem
    assert z < -3 and copy.agrees is False
    assert r.theory_agrees is False
    assert [c.name for c in r.comparisons] == ["c_copy", "test_loss"]  # c_uniform ≡ 1 = theory: not compared
    loss = r.comparison("test_loss")
    assert loss.agrees and r.chains[0].c_uniform == pytest.approx(1.0, abs=1e-12)
    verdict = (f"with the band ±3, the theory is rejected by c_copy: {copy.mean:.6g} ± {copy.sem:.2g} against "
               f"{copy.theory:.6g} (z = {z:.3g}); it agrees with test_loss (z = {loss.z:.3g})")
    assert r.message.endswith(f"; {verdict}"), r.message
    # the same run against a theory at the measured means agrees everywhere; one without a verdict gives None
    at_means = tuple(r.compared_with(c.name, c.mean) for c in r.comparisons)
    assert dataclasses.replace(r, comparisons=at_means).theory_agrees is True
    undecided = (dataclasses.replace(at_means[0], agrees=None),) + at_means[1:]
    assert dataclasses.replace(r, comparisons=undecided).theory_agrees is None

    asked = []
    monkeypatch.setattr(copy_heads_api, "simulate", lambda *args, **kwargs: asked.append((args, kwargs)) or r)
    out = CliRunner().invoke(main, ["simulate", "copy-heads", "--attention", "softmax", "--L", "8", "--V", "4",
                                    "--P", "400", "--trials", "4", "--steps", "3000", "--seed", "3", "--device", "cpu",
                                    "--json"])
    assert out.exit_code == 0, out.output
    ((args, kwargs),) = asked
    assert args == ("softmax", 8, 4, 400.0) and (kwargs["trials"], kwargs["steps"], kwargs["seed"]) == (4, 3000, 3)
    payload = json.loads(out.stdout)
    assert payload["theory_agrees"] is False and payload["status"] == "converged"
    assert "the theory is rejected by c_copy" in payload["message"]


def test_the_top_seed_runs_and_a_seed_above_it_is_refused_with_the_value_typed():
    """`--seed 9223372036854775807` (2^63 − 1, the top of the range --help gives) was refused as 9223372036854775808:
    the runs were seeded with seed + 1. They now take the seed after it wrapped into the range (0 here) and the run
    ends normally; one above the top is refused quoting the number typed."""
    import json

    from click.testing import CliRunner

    from attnphase.cli import main

    from attnphase.validate.seeds import seed_after

    top = 2**63 - 1
    assert seed_after(top) == 0 and seed_after(top - 1) == top  # seed + 1 below the top
    base = ["simulate", "copy-heads", "--attention", "softmax", "--L", "4", "--V", "3", "--P", "60", "--steps", "40",
            "--device", "cpu", "--json", "--seed"]
    out = CliRunner().invoke(main, [*base, str(top)])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["parameters"]["seed"] == top
    above = CliRunner().invoke(main, [*base, str(top + 1)])
    assert above.exit_code == 2 and f"'--seed': '{top + 1}' (allowed" in above.output, above.output
    # the other simulators that seed their runs after the data
    assert len(api.simulate_sweep("softmax", 4, 3, [60.0], steps=40, seed=top, device="cpu").c_copy) == 2
    assert len(api.simulate_hysteresis(4, 3, [60.0], data_sets=1, steps=40, seed=top, device="cpu").points) == 1


def test_unresolved_quantities_get_no_verdict_while_a_resolved_one_keeps_its_verdict():
    """Linear L = 8, P = 1000, Convention A, seed 0 (the audit's default run): c, t and rho fail their diagnostics
    (R-hat 1.15, 1.31, 1.08; ESS 11, 6, 31) and each read "rejected" at z = 14, 6.9, 25 on those bars; the Gibbs loss
    mixed (R-hat 1.004, ESS 234) and rejects Convention A at z = 72 (the page: the loss about 4.5 times too small).
    Now only the loss gives a verdict, the others none with their reasons, and theory_agrees is False from the loss."""
    r = api.simulate("linear", 8, 4, 1000.0, seed=0, device="cpu")
    diagnostics = {d.name: d for d in r.diagnostics}
    for name in ("c_copy", "c_uniform", "rho"):
        d = diagnostics[name]
        assert d.status == Status.POOR_MIXING and r.comparison(name).agrees is None
        assert r.no_verdict[name] == (f"not resolved: {d.message.removeprefix(name + ': ')}",)
        assert f"no verdict on {name} (z = {r.comparison(name).z:.3g}) (not resolved: R-hat {d.rhat:.3f} > 1.05" \
            in r.message
    loss = r.comparison("test_loss")
    assert diagnostics["test_loss"].status == Status.CONVERGED and "test_loss" not in r.no_verdict
    assert loss.agrees is False and loss.z > 10 and r.theory_agrees is False


def test_a_failed_diagnostic_withholds_the_verdict_either_way_on_constructed_statistics():
    """(mean, sd, sem, n, dof, diagnostics, change) built by hand: with converged diagnostics z = 5 rejects and z = 1
    agrees; with R-hat 1.2 neither is claimed (z is still reported), and the message names the reason. Two training
    sets (dof 1) give no verdict either."""
    import dataclasses

    from attnphase.models.copy_heads.chain_statistics import comparison_with_theory, verdict_withheld
    from attnphase.models.copy_heads.simulation_results import ChainDiagnostics
    from attnphase.validate.compare import verdict_message

    good = ChainDiagnostics("c_copy", 1.01, 300.0, 300.0, 0.01, 2, 200, Status.CONVERGED, "", 300.0)
    poor = dataclasses.replace(good, rhat=1.2, status=Status.POOR_MIXING, message="c_copy: R-hat 1.200 > 1.05")
    for diagnostics, far, near in ((good, False, True), (poor, None, None)):
        for mean, expected in ((0.55, far), (0.51, near)):
            statistics = (mean, 0.1, 0.01, 400, None, diagnostics, None)
            withheld = verdict_withheld(statistics)
            comparison = comparison_with_theory("c_copy", 0.5, 0.0, statistics, withheld)
            assert comparison.agrees is expected and comparison.z == pytest.approx((mean - 0.5) / 0.01)
    assert verdict_withheld((0.5, 0.1, 0.01, 400, None, poor, None)) == ["not resolved: R-hat 1.200 > 1.05"]
    assert verdict_withheld((0.5, 0.1, 0.01, 400, 1, good, None)) == ["two training sets: their one-degree band is "
                                                                        "±236σ wide"]
    agreeing = comparison_with_theory("test_loss", 0.5, 0.0, (0.51, 0.1, 0.01, 400, None, good, None))
    unresolved = comparison_with_theory("c_copy", 0.5, 0.0, (0.51, 0.1, 0.01, 400, None, poor, None), ["r"])
    assert verdict_message((agreeing, unresolved), {"c_copy": ("not resolved: R-hat 1.200 > 1.05",)}) == (
        "with the band ±3, the theory agrees with test_loss (z = 1); no verdict on c_copy (z = 1) (not resolved: "
        "R-hat 1.200 > 1.05)")


def test_the_theory_error_widens_the_band_on_constructed_statistics():
    """A theory error comparable to the sem: mean − theory = 4 sem and theory_error = 3 sem give z = 4/√10 = 1.26 (σ
    of the difference √(sem² + theory_error²) = √10 sem): agreement; the same statistics against an exact theory
    (theory_error 0) give z = 4: rejected at 3σ. z to a few roundings of its operations."""
    from attnphase.models.copy_heads.chain_statistics import comparison_with_theory
    from attnphase.models.copy_heads.simulation_results import ChainDiagnostics

    good = ChainDiagnostics("c_copy", 1.01, 300.0, 300.0, 0.01, 2, 200, Status.CONVERGED, "", 300.0)
    sem, theory = 0.01, 0.5
    statistics = (theory + 4 * sem, 0.1, sem, 400, None, good, None)
    with_error = comparison_with_theory("c_copy", theory, 3 * sem, statistics)
    without = comparison_with_theory("c_copy", theory, 0.0, statistics)
    assert with_error.agrees is True and with_error.z == pytest.approx(4 / math.sqrt(10), rel=1e-14)
    assert without.agrees is False and without.z == pytest.approx(4.0, rel=1e-14)


def test_a_single_chain_gets_no_verdict():
    """`trials=1` (softmax L = V = 4, P = 200): one chain on its training set, whose split R-hat and ESS cannot see the
    spread between chains from other starts; no verdict on any quantity, in words, and theory_agrees None."""
    r = api.simulate("softmax", 4, 4, 200.0, trials=1, steps=1000, seed=0, device="cpu")
    lone = "one chain on the training set: the error of a single chain cannot be diagnosed"
    assert r.comparisons and all(c.agrees is None and lone in r.no_verdict[c.name] for c in r.comparisons)
    assert r.theory_agrees is None and lone in r.message


def test_chains_that_never_moved_give_no_verdict():
    """Linear L = 4, V = 3, P = 40 with a score prior variance of 1e300: no proposal is accepted in 100 steps
    (acceptance 0), so every draw is a chain's start. Such a run read "agrees" wherever the theory equalled the
    starts' value with error 0 (the audit, at L = 8: rho 0 of both starts against Convention A's 0). Now every quantity
    is "not resolved" (a chain never changed it) and theory_agrees is None."""
    r = api.simulate("linear", 4, 3, 40.0, steps=100, seed=0, device="cpu", convention=DEFAULT.with_(sigma2=1e300))
    assert [ch.acceptance for ch in r.chains] == [0.0, 0.0]
    for c in r.comparisons:
        assert c.agrees is None and "a chain never changed it" in r.no_verdict[c.name][0], c
    named = ", ".join(f"{c.name} (z = {c.z:.3g})" for c in r.comparisons)
    assert r.theory_agrees is None and r.message.endswith(f"; no verdict on {named} ({r.no_verdict['rho'][0]})")


def test_agreement_within_a_widened_band_says_the_band():
    """Four training sets: the 99.73% band of Student's t with 3 degrees of freedom is ±9.2187σ (scipy), and an
    agreement within it is said with that band and why it is that wide (the message said only "agrees"). Softmax
    L = 4, V = 3, P = 60, 8 chains × 200 steps, seed 0 (about 3 s): both quantities agree in that band, at z = −2.6
    and 1.9. One training set keeps the plain ±3 (`test_a_rejected_theory_is_said_at_top_level_...`)."""
    from scipy.stats import t as student

    r = api.simulate("softmax", 4, 3, 60.0, trials=8, data_sets=4, steps=200, seed=0, device="cpu")
    copy, loss = r.comparisons
    assert copy.n_sigma == loss.n_sigma == pytest.approx(student.ppf(1 - 0.0027 / 2, 3), rel=1e-12)
    assert loss.n_sigma == pytest.approx(9.2187, abs=1e-4) and copy.agrees and loss.agrees
    assert r.message.endswith(f"; with the band ±9.22, the 99.73% Student-t band of 4 training sets, the theory agrees "
                              f"with c_copy (z = {copy.z:.3g}), test_loss (z = {loss.z:.3g})"), r.message


def test_linear_mala_names_the_theory_it_is_compared_with_and_the_one_the_network_realises():
    """Linear MALA compared with Convention A (the defaults) said nothing of which theory it held the chains against,
    where softmax did (audit v15): the page excludes Convention A for the sampled network. The message names the
    theory and the convention the network realises; under that convention with --fluctuations it adds nothing."""
    from attnphase.models.copy_heads.simulation import linear_theory_note

    default = api.simulate("linear", 4, 3, 40.0, steps=20, trials=2, seed=0, device="cpu")
    assert ("theory: the reduced action's minimum under --remainder map, --row-sums shared (the sampled network "
            "realises --remainder entropy --row-sums per-row with --fluctuations;") in default.message
    realised = DEFAULT.with_(remainder="entropy", row_sums="per-row")
    assert linear_theory_note(realised, True) == ""
    assert linear_theory_note(realised, False).startswith("; theory: the reduced action's minimum under --remainder "
                                                          "entropy, --row-sums per-row")
    assert "posterior means over exp(-S) under --remainder map" in linear_theory_note(DEFAULT, True)
