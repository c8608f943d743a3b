"""`simulate_sweep` on independent training sets per P (data_sets), its trap rule for MALA chains, linear attention's
sign fold per chain (in `simulate` too), and the copy-heads report's pooled comparison of those chains with the
theories (`reproduce.copy_heads_mala.pooled_comparison`): the numbers recomputed here with numpy from the sweep's rows,
and the Student-t band checked by simulation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from attnphase.api import copy_heads as api
from attnphase.models.copy_heads import samplers
from attnphase.models.copy_heads.samplers import ChainSamples
from attnphase.models.copy_heads.simulation_results import SweepResult
from attnphase.numeric.digits import error_rounded_up
from attnphase.reproduce import copy_heads_mala as mala
from attnphase.results import Status
from attnphase.validate.compare import student_band


def _fake_langevin(record, data_terms):
    """A stand-in for `samplers.run_langevin` that records what the sweep hands it and returns chains with the given
    mean data terms (within-chain spread 1: draws alternate ±1 about the mean) and uniform attention matrices."""
    def run(cfg, train, test, starts, *, steps, seed, device, **_):
        record.update(train=train, starts=list(starts), steps=steps)
        K, S, L = len(starts), 8, cfg.L
        G = np.full((K, S, L, L), 1.0 / L)
        G[:, :, np.arange(L), np.arange(L) - 1] += 0.01 * np.arange(K)[:, None, None]  # c grows with the run
        means = np.asarray(data_terms(K), float)
        data_term = means[:, None] + np.where(np.arange(S) % 2 == 0, 1.0, -1.0)[None, :] * math.sqrt((S - 1) / S)
        return ChainSamples(G, np.ones((K, S)), np.ones((K, S)), np.full(K, 0.6), list(starts), steps,
                            Status.CONVERGED, "fake MALA", data_term=data_term)
    return run


def test_each_P_gets_independent_training_sets_and_each_run_its_set_index(monkeypatch):
    """3 training sets per P, 2 chains on each: the chains on one set see the same data, the sets of a P differ from
    each other (drawn one after another from the seeded generator) and from the other P's; data_set and chain index
    the runs in the order P, set, chain; starts alternate over all runs."""
    record = {}
    monkeypatch.setattr(samplers, "run_langevin", _fake_langevin(record, lambda K: np.zeros(K)))
    result = api.simulate_sweep("softmax", 4, 3, [60.0, 120.0], trials_per_P=2, data_sets=3, steps=40, seed=5,
                                device="cpu")
    C = record["train"].C.cpu().numpy()
    assert C.shape[0] == 12
    for run in range(0, 12, 2):
        assert np.array_equal(C[run], C[run + 1])  # two chains on one set
    sets = [C[run] for run in range(0, 12, 2)]
    for i in range(len(sets)):
        for j in range(i + 1, len(sets)):
            assert not np.array_equal(sets[i], sets[j]), (i, j)
    assert result.data_set.tolist() == [0, 0, 1, 1, 2, 2] * 2
    assert result.chain.tolist() == [0, 1, 2, 3, 4, 5] * 2
    assert result.P.tolist() == [60.0] * 6 + [120.0] * 6
    assert list(result.start) == ["uniform", "copy"] * 6
    assert [row["data_set"] for row in result.rows()] == result.data_set.tolist()
    assert result.kept.all() and "0 of 12 chains trapped" in result.message


def test_one_training_set_per_P_draws_the_data_as_before(monkeypatch):
    """data_sets = 1 (the default): one set per P, the P's sets drawn in the order of P_values, as before data_sets
    existed; the first P's set is the first set drawn with data_sets = 3 (one generator, the training sets first)."""
    record = {}
    monkeypatch.setattr(samplers, "run_langevin", _fake_langevin(record, lambda K: np.zeros(K)))
    one = api.simulate_sweep("softmax", 4, 3, [60.0, 120.0], trials_per_P=1, steps=40, seed=5, device="cpu")
    C_one = record["train"].C.cpu().numpy()
    api.simulate_sweep("softmax", 4, 3, [60.0, 120.0], trials_per_P=1, data_sets=3, steps=40, seed=5, device="cpu")
    C_three = record["train"].C.cpu().numpy()
    assert one.data_set.tolist() == [0, 0] and C_one.shape[0] == 2
    assert np.array_equal(C_one[0], C_three[0]) and not np.array_equal(C_one[1], C_three[1])


def test_a_trapped_mala_chain_is_left_out_and_counted(monkeypatch):
    """The trap rule of `simulate` over the chains of each P, cut at SWEEP_TRAP_SDS = 3: mean data terms (within-chain
    spread 1) of 0, 0.3, 10, 0.1 at the first P and 0, 2.9, 0.2, 0.1 at the second. Only the chain 10 spreads above
    the lowest is trapped (kept False); 2.9 spreads is inside the cut, so is every chain of the second P though it
    sits on a set of its own (one chain per set)."""
    record = {}
    terms = [0.0, 0.3, 10.0, 0.1, 0.0, 2.9, 0.2, 0.1]
    monkeypatch.setattr(samplers, "run_langevin", _fake_langevin(record, lambda K: terms))
    result = api.simulate_sweep("softmax", 4, 3, [60.0, 120.0], trials_per_P=1, data_sets=4, steps=40, seed=5,
                                device="cpu")
    assert result.kept.tolist() == [True, True, False, True, True, True, True, True]
    assert "1 of 8 chains trapped" in result.message and "more than 3 pooled within-chain spreads" in result.message
    looser = api.simulate_sweep("softmax", 4, 3, [60.0, 120.0], trials_per_P=1, data_sets=4, steps=40, seed=5,
                                device="cpu", trap_sds=11.0)
    assert looser.kept.all()


def test_the_sweeps_trap_cut_leaves_out_the_trapped_chains_of_P_320():
    """Audit w17: at linear L = 8, V = 4, P = 320 (16 sets, 6000 steps, seed 201, P = 320 and 640) two chains sat in the trap (c ≈ −0.31)
    4.0–5.9 within-chain spreads above the lowest chain, and `simulate`'s cut of 5 kept them: the pooled c fell from
    0.309 to 0.231 and its error grew 40×. At 3 spreads every chain with c < 0 is left out and none with c > 0."""
    result = api.simulate_sweep("linear", 8, 4, [320.0, 640.0], trials_per_P=1, steps=6000, seed=201, device="cpu",
                                data_sets=16)
    negative = result.c_copy < 0
    assert (negative & (result.P == 320.0)).sum() == 2
    assert not result.kept[negative].any() and result.kept[~negative].all()


def test_a_real_sweep_on_two_sets_runs_and_indexes_its_chains():
    """The sweep end to end (softmax L = 4, V = 3, 40 steps): two sets per P, two chains on each."""
    result = api.simulate_sweep("softmax", 4, 3, [60.0], trials_per_P=2, data_sets=2, steps=40, seed=3, device="cpu")
    assert result.data_set.tolist() == [0, 0, 1, 1] and len(result.c_copy) == 4
    assert np.all(np.isfinite(result.c_copy)) and result.kept.dtype == bool


def test_the_band_holds_99_73_percent_of_the_t_of_a_right_theory():
    """student_band(n − 1) against simulation: the t = (mean − true)/(sd/√n) of 400000 normal samples of n = 16 lies
    beyond it in 0.27% of them (binomial error 0.008%); 3, the normal band, is crossed in 0.89% (scipy: t₁₅)."""
    rng = np.random.default_rng(1)
    n, samples = 16, 400_000
    x = rng.standard_normal((samples, n))
    t = x.mean(1) / (x.std(1, ddof=1) / math.sqrt(n))
    band = student_band(n - 1)
    beyond = float(np.mean(np.abs(t) > band))
    error = math.sqrt(0.0027 * 0.9973 / samples)
    assert abs(beyond - 0.0027) <= 5 * error, (band, beyond)
    assert abs(float(np.mean(np.abs(t) > 3.0)) - 0.0089) <= 5 * math.sqrt(0.0089 / samples)


# -- the report's pooled comparison, recomputed with numpy from SweepResult rows ------------------------------------

def _sweep(c, kept, sets_per_P, P_values):
    K = len(c)
    per_P = K // len(P_values)
    return SweepResult("mala", np.repeat(P_values, per_P), np.tile(np.arange(per_P), len(P_values)),
                       tuple(["uniform", "copy"] * (K // 2)), np.asarray(kept), np.zeros(K), np.asarray(c),
                       np.full(K, 0.01), np.ones(K), np.linspace(0.5, 0.7, K), np.zeros((K, 2, 2)),
                       data_set=np.tile(np.repeat(np.arange(sets_per_P), per_P // sets_per_P), len(P_values)))


def test_the_pooled_table_is_the_mean_of_set_means_with_the_error_over_sets():
    """Two P, 5 sets of 2 chains each (one trapped chain at P = 40, its set then has one; one set at P = 80 with both
    chains trapped: 4 sets left). By numpy: each set's mean over its kept chains, the mean of those, sd/√sets,
    gap and its error with the theory's, t, and the band from scipy's t quantile at 99.73% two-sided."""
    from scipy.stats import t as student

    rng = np.random.default_rng(4)
    c = np.round(0.3 + 0.02 * rng.standard_normal(20), 4)
    kept = np.ones(20, bool)
    kept[3] = False
    kept[[16, 17]] = False
    rows = [dict(r, attention="linear", algorithm="mala") for r in _sweep(c, kept, 5, [40.0, 80.0]).rows()]
    theory = [{"P": 40.0, "c": 0.31, "c_error": 0.002, "t": 0.4, "loss_gibbs": 1.0, "status": "converged"},
              {"P": 80.0, "c": 0.29, "c_error": 0.0, "t": 0.5, "loss_gibbs": 0.9, "status": "converged"}]
    table = mala.pooled_comparison(rows, theory, "linear")
    for P, block, th, th_err in ((40.0, slice(0, 10), 0.31, 0.002), (80.0, slice(10, 20), 0.29, 0.0)):
        cb, kb = c[block], kept[block]
        pairs = [(cb[2 * d:2 * d + 2], kb[2 * d:2 * d + 2]) for d in range(5)]
        set_means = np.array([values[keep].mean() for values, keep in pairs if keep.any()])
        mean, err = set_means.mean(), set_means.std(ddof=1) / math.sqrt(len(set_means))
        gap, gap_err = mean - th, math.sqrt(err ** 2 + th_err ** 2)
        band = student.ppf(1 - 0.0027 / 2, len(set_means) - 1)
        (row,) = [r for r in table if r["P"] == P]
        assert row["sets"] == len(set_means) and row["trapped"] == int((~kb).sum())
        assert row["c"] == pytest.approx(mean, abs=1e-15) and row["c_error"] == pytest.approx(err, rel=1e-12)
        assert row["gap"] == pytest.approx(gap, abs=1e-15) and row["gap_error"] == pytest.approx(gap_err, rel=1e-12)
        assert row["band"] == pytest.approx(band, rel=1e-12) and row["agrees"] == (abs(gap / gap_err) <= band)
    assert [r["sets"] for r in table] == [5, 4] and [r["trapped"] for r in table] == [1, 2]
    cells = mala.linear_table(rows, theory)
    assert cells[0]["training sets (trapped chains left out)"] == "5 (1)"
    assert cells[0]["gap (pooled − theory)"].startswith(f"{table[0]['gap']:+.4f} ± ")


def test_the_softmax_table_gives_both_theories_and_the_verdicts_of_the_band():
    """A softmax theory row whose c lies 10 errors above the pooled c (outside its band) beside a homogeneous c
    within it: the table and the sentence say which, with the gaps as measured (sign included)."""
    c = np.array([0.30, 0.31, 0.29, 0.30, 0.32, 0.28, 0.30, 0.31])
    rows = [dict(r, attention="softmax", algorithm="mala") for r in _sweep(c, np.ones(8, bool), 8, [40.0]).rows()]
    err = c.std(ddof=1) / math.sqrt(8)
    theory = [{"P": 40.0, "c": c.mean() + 10 * err, "c_error": 0.0, "loss_gibbs": 0.5, "loss_gibbs_error": 1e-4,
               "c_homogeneous": c.mean() + err, "status": "converged"}]
    (row,) = mala.softmax_table(rows, theory)
    assert row["verdict"] == "below the theory, outside the band" and row["t"] == "-10"
    assert row["its verdict"] == "within the band"
    assert row["gap to the homogeneous saddle point"] == f"{-err:+.4f} ± 0.0045"
    text = mala.simulation_paragraph(rows, [], {}, theory)
    assert "outside the band at P = 40 (t = -10)" in text and "negative at 1 of 1 P" in text


def test_a_P_with_too_few_training_sets_gets_no_verdict_and_the_others_theirs():
    """Audit t17: at a P where one training set (D1) or two (D2) kept a chain, the table and the sentence raised on
    the NaN error, or counted the P as within the band. Now: the gap without an error, t and band n/a, "no verdict"
    for that P, the band's verdict for the others."""
    c = np.array([0.30, 0.31, 0.29, 0.30, 0.32, 0.28, 0.30, 0.31] * 3)
    kept = np.ones(24, bool)
    kept[9:16] = False  # P = 80: one set of 8 keeps its chain
    kept[18:24] = False  # P = 160: two sets
    rows = [dict(r, attention="linear", algorithm="mala") for r in _sweep(c, kept, 8, [40.0, 80.0, 160.0]).rows()]
    theory = [{"P": P, "c": 0.30, "c_error": 0.0, "t": 0.4, "loss_gibbs": 1.0, "status": "converged"}
              for P in (40.0, 80.0, 160.0)]
    one, two = mala.linear_table(rows, theory)[1:]
    assert one["gap (pooled − theory)"] == "+0.0000 (no error)" and (one["t"], one["band"]) == ("n/a", "n/a")
    assert one["verdict"] == two["verdict"] == "no verdict (fewer than 3 training sets)"
    assert one["MALA c (pooled)"] == "0.300 (no error)" and two["band"] == "n/a"
    text = mala.simulation_paragraph(rows, theory, {})
    assert "within the band at P = 40; no verdict at P = 80 (1 training set), 160 (2 training sets)" in text
    assert "every P" not in text


def test_the_pooled_test_loss_and_its_ratio_to_convention_As_gibbs_loss():
    """The pooled test loss is the mean of the sets' means, as c's (sets of two chains with losses 2, 2 and 4, 4: 3),
    and the paragraph gives the ratio of the sampled test loss to Convention A's Gibbs loss (3/1.5 = 2×); the
    coverage sentence's matrices are the kept chains' (`reproduce.copy_heads` passes G_mean[kept])."""
    c = np.array([0.30, 0.31, 0.29, 0.30])
    sweep = _sweep(c, np.ones(4, bool), 2, [40.0])
    sweep = SweepResult(sweep.algorithm, sweep.P, sweep.chain, sweep.start, sweep.kept, sweep.c_uniform, sweep.c_copy,
                        sweep.c_copy_sem, sweep.train_loss, np.array([2.0, 2.0, 4.0, 4.0]), sweep.G_mean,
                        data_set=sweep.data_set)
    rows = [dict(r, attention="linear", algorithm="mala") for r in sweep.rows()]
    assert mala.pooled_chains(rows, "linear")[0]["test_loss"] == 3.0
    assert "the sampled test loss is 2× (P = 40) its Gibbs loss" in mala.simulation_paragraph(rows, [], {40.0: 1.5})


def test_a_sweeps_arrays_are_read_only_and_its_size_check_counts_the_training_sets(monkeypatch):
    """SweepResult defines its own __post_init__ (the default data_set): its arrays are read-only all the same. The
    size check counts every training set: one set of P = 60 fits a cap that four do not, and the sweep refuses the
    four before it draws them, naming P."""
    from attnphase.errors import ParameterError
    from attnphase.models.copy_heads import simulation

    sweep = _sweep(np.array([0.3, 0.31]), np.ones(2, bool), 1, [40.0])
    with pytest.raises(ValueError, match="read-only"):
        sweep.c_copy[0] = 1.0
    assert not sweep.data_set.flags.writeable
    default = SweepResult("mala", sweep.P, sweep.chain, sweep.start, sweep.kept, sweep.c_uniform, sweep.c_copy,
                          sweep.c_copy_sem, sweep.train_loss, sweep.test_loss, sweep.G_mean)
    assert default.data_set.tolist() == [0, 0] and not default.data_set.flags.writeable
    # P = 600 at L = 4: 150 sequences, 150·L·V = 1800 one-hot entries a set, under a cap of 4000 once, not 4 times
    monkeypatch.setattr(samplers, "run_langevin", _fake_langevin({}, lambda K: np.zeros(K)))
    monkeypatch.setattr(simulation, "MAX_SIMULATION_ENTRIES", 4000)
    settings = dict(trials_per_P=1, steps=40, seed=5, device="cpu", n_test_sequences=10)
    assert len(api.simulate_sweep("softmax", 4, 3, [600.0], data_sets=1, **settings).c_copy) == 1
    with pytest.raises(ParameterError, match="invalid value for P: 600"):
        api.simulate_sweep("softmax", 4, 3, [600.0], data_sets=4, **settings)


# -- the page's numbers about the quick report's MALA chains ----------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "models" / "copy_heads.md"


def _pooled(sweep):
    """Per P with numpy: (sets with a kept chain, trapped chains, mean of the set means, sd/√sets, pooled test loss)."""
    out = {}
    for P in np.unique(sweep.P):
        at = sweep.P == P
        keep = at & sweep.kept
        sets = np.unique(sweep.data_set[keep])
        means = np.array([sweep.c_copy[keep & (sweep.data_set == d)].mean() for d in sets])
        losses = np.array([sweep.test_loss[keep & (sweep.data_set == d)].mean() for d in sets])
        out[float(P)] = (len(sets), int((at & ~sweep.kept).sum()), means.mean(),
                         means.std(ddof=1) / math.sqrt(len(sets)), losses.mean())
    return out


def _says(*texts):
    page = " ".join(DOCS.read_text().split())
    for text in texts:
        assert text in page, text


@pytest.mark.slow
def test_the_quick_reports_pooled_mala_numbers_are_the_pages():
    """The quick report's MALA sweeps (`copy_heads_mala.mala_settings`, seed 7, L = 8, V = 4, the report's six P, CPU),
    pooled with numpy, against the theories the report uses, give the page's numbers: linear within the Student-t band
    at P = 80…1280 and below it at P = 40; softmax below the joint row mean field at every P, outside the band at P = 40
    and 320 only; the homogeneous saddle point outside the band at every P; the trapped chains left out; Convention A's
    Gibbs loss below the sampled test loss by the page's factors (about 20 s)."""
    from scipy.stats import t as student

    P_sim = [40, 80, 160, 320, 640, 1280]
    per_row = api.DEFAULT.with_(remainder="entropy", row_sums="per-row")

    def band(sets):
        return student.ppf(1 - 0.0027 / 2, sets - 1)

    def gap(value, error):
        return f"{value:+.4f} ± {error_rounded_up(error, 4)}".replace("-", "−")

    sweeps = {}
    for attention in ("linear", "softmax"):
        D, per_set, steps = mala.mala_settings(True, attention)
        sweeps[attention] = _pooled(api.simulate_sweep(attention, 8, 4, P_sim, trials_per_P=per_set, steps=steps,
                                                       seed=7, device="cpu", data_sets=D))
    linear = sweeps["linear"]
    verdicts, gaps = {}, {}
    for P, (sets, _, c, err, _) in linear.items():
        th = api.linear_posterior_means(8, 4, P, per_row, walkers=128, steps=3000, seed=11)
        g, ge = c - th.means.c, math.hypot(err, th.errors.c)
        verdicts[P] = abs(g / ge) <= band(sets)
        if P == 40.0:
            _says(f"below it at P = 40, by {gap(g, ge)} (c = {c:.4f} against {th.means.c:.4f})")
        if P == 1280.0:
            _says(f"(P = 1280: c = {c:.4f} ± {error_rounded_up(err, 4)} against {th.means.c:.5f} ± "
                  f"{error_rounded_up(th.errors.c, 5)})")
        gaps[P] = g
        if P == 320.0:  # within the band, and a gap all the same
            _says(f"resolves it at P = 40 only (at P = 320 it is {gap(g, ge)}, t = {g / ge:.2g})".replace("-", "−"))
    assert [P for P, ok in verdicts.items() if not ok] == [40.0]
    assert all(g < 0 for g in gaps.values()) and len(gaps) == 6
    kept_sets = [sets for sets, *_ in linear.values()]
    _says(f"the gap is negative at all six P, and the band (Student's t for the {min(kept_sets)} to {max(kept_sets)} "
          f"sets kept, {band(max(kept_sets)):.3g} to {band(min(kept_sets)):.3g} of the errors printed)")
    trapped = {P: row[1] for P, row in linear.items() if row[1]}
    assert min(trapped) == 320.0 and max(trapped) == 1280.0
    _says(f"left out: {sum(trapped.values())} of 96, at P = 320…1280)")
    ratios = {P: linear[P][4] / api.solve("linear", 8, 4, P, api.DEFAULT).global_minimum.loss_gibbs
              for P in (40.0, 160.0, 1280.0)}
    _says(f"{ratios[40.0]:.2g}× at P = 40, {ratios[160.0]:.2g}× at 160, {ratios[1280.0]:.2g}× at 1280")

    softmax = sweeps["softmax"]
    joint, homogeneous = {}, {}
    for P, (sets, trapped_here, c, err, _) in softmax.items():
        means = api.softmax_row_posterior_means(8, 4, P)
        well = min(means.wells, key=lambda w: w.free_energy)
        g, ge = c - well.c_mean, math.hypot(err, well.error)
        joint[P] = (g, ge, abs(g / ge) <= band(sets))
        h = c - api.solve("softmax", 8, 4, P, api.DEFAULT).global_minimum.c_copy
        homogeneous[P] = (h, err, abs(h / err) <= band(sets))
        assert sets == 16 and trapped_here == 0
    assert all(g < 0 for g, _, _ in joint.values())
    assert [P for P, (_, _, ok) in joint.items() if not ok] == [40.0, 320.0]
    assert not any(ok for _, _, ok in homogeneous.values())
    _says(f"{gap(*joint[40.0][:2])} at P = 40 and {gap(*joint[320.0][:2])} at P = 320 (outside the band), "
          f"{gap(*joint[1280.0][:2])} at P = 1280 (within: not resolved by 16 sets)",
          f"from {gap(*homogeneous[40.0][:2])} at P = 40 to {gap(*homogeneous[1280.0][:2])} at 1280")


def _langevin_with_draws(t_draws, c_draws):
    """A stand-in for `samplers.run_langevin` whose chain k draws, at sample s, the periodic attention matrix with row
    sum t_draws[k][s] and copy strength c_draws[k][s]: G = (t/L)·11ᵀ + c·(S − 11ᵀ/L), S the previous-token matrix."""
    t_draws, c_draws = np.asarray(t_draws, float), np.asarray(c_draws, float)

    def run(cfg, train, test, starts, *, steps, **_):
        L = cfg.L
        ones, shift = np.full((L, L), 1.0 / L), np.roll(np.eye(L), -1, axis=1)
        G = t_draws[..., None, None] * ones + c_draws[..., None, None] * (shift - ones)
        K, S = t_draws.shape
        return ChainSamples(G, np.ones((K, S)), np.ones((K, S)), np.full(K, 0.6), list(starts), steps,
                            Status.CONVERGED, "fake MALA", data_term=np.zeros((K, S)),
                            loss_moments=(np.zeros((K, L, L, cfg.V, cfg.V)),) * 2)
    return run


def test_simulate_and_the_sweep_fold_linear_signs_per_chain_not_per_draw(monkeypatch):
    """Audit t18 M64/M68: a linear chain stays in one image of (t, c) -> (−t, −c), so `simulate` and `simulate_sweep`
    flip a chain as a whole by the sign of its mean t; a draw with t < 0 inside a chain of mean t > 0 keeps its c.
    Chain 0 draws t = 0.5, −0.1, 0.4, 0.2 (mean > 0) with c = 1 each: its c mean is 1 (0.5 if each draw were folded
    by its own t); chain 1 is its mirror image, flipped whole: t mean 0.25, c mean 1."""
    from attnphase.models.copy_heads.exact import order_parameters_of

    t = np.array([[0.5, -0.1, 0.4, 0.2], [-0.5, 0.1, -0.4, -0.2]])
    c = np.array([[1.0, 1.0, 1.0, 1.0], [-1.0, -1.0, -1.0, -1.0]])
    fake = _langevin_with_draws(t, c)
    G = fake(type("Config", (), {"L": 4, "V": 3})(), None, None, ["uniform", "copy"], steps=4).G
    measured = order_parameters_of(G)
    assert np.allclose(measured["t"], t) and np.allclose(measured["c"], c)  # the fake draws what it says
    monkeypatch.setattr(samplers, "run_langevin", fake)
    result = api.simulate("linear", 4, 3, 60.0, algorithm="mala", trials=2, steps=40, seed=1, device="cpu")
    assert [run.c_copy for run in result.chains] == pytest.approx([1.0, 1.0], abs=1e-12)
    assert [run.c_uniform for run in result.chains] == pytest.approx([0.25, 0.25], abs=1e-12)
    sweep = api.simulate_sweep("linear", 4, 3, [60.0], trials_per_P=2, steps=40, seed=1, device="cpu")
    assert sweep.c_copy.tolist() == pytest.approx([1.0, 1.0], abs=1e-12)
    assert sweep.c_uniform.tolist() == pytest.approx([0.25, 0.25], abs=1e-12)
