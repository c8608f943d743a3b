import math

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.validate.compare import compare, verdict_of


def test_statistics_match_numpy_definitions():
    samples = np.array([1.0, 2.0, 4.0, 7.0])
    record = compare("x", 3.0, samples, theory_error=0.5)
    assert record.mean == pytest.approx(3.5, abs=1e-15)
    assert record.std == pytest.approx(np.std(samples, ddof=1), rel=1e-14)
    assert record.sem == pytest.approx(record.std / 2.0, rel=1e-14)
    assert record.z == pytest.approx(0.5 / math.hypot(record.sem, 0.5), rel=1e-14)
    assert record.agrees is True


def test_agreement_rate_matches_gaussian_coverage():
    # Draw many simulated "experiments" whose mean is the theory value. With n_sigma = 2 the record
    # must agree in about 95% of them (t-distribution with 19 dof: 94.0%), binomial error ~0.75%.
    rng = np.random.default_rng(7)
    agreements = [compare("x", 1.0, rng.normal(1.0, 0.3, 20), n_sigma=2.0).agrees for _ in range(1000)]
    rate = np.mean(agreements)
    assert abs(rate - 0.940) < 4 * math.sqrt(0.94 * 0.06 / 1000)


def test_shifted_simulation_disagrees():
    rng = np.random.default_rng(3)
    samples = rng.normal(0.0, 1.0, 400) + 1.0  # shifted by 20 standard errors
    record = compare("x", 0.0, samples)
    assert record.agrees is False and record.z > 10


def test_single_sample_is_undecided():
    record = compare("x", 0.0, [0.1])
    assert record.agrees is None and record.z is None


@pytest.mark.parametrize("bad", [[], [float("nan")], [1.0, float("inf")]])
def test_bad_samples_are_rejected(bad):
    with pytest.raises(ParameterError, match="samples"):
        compare("x", 0.0, bad)


def test_the_verdict_of_several_comparisons_is_never_agreement_while_one_has_none():
    """One rejection decides; agreement needs every quantity to agree; a quantity without a verdict (one sample, or
    withheld by a model) leaves it open; no comparison gives none."""
    agrees = compare("a", 0.0, [-1.0, 1.0, 0.5, -0.5])
    rejects = compare("b", 10.0, [-1.0, 1.0, 0.5, -0.5])
    undecided = compare("c", 0.0, [0.3])  # one sample: no spread, no verdict
    assert (agrees.agrees, rejects.agrees, undecided.agrees) == (True, False, None)
    assert verdict_of([agrees, agrees]) is True
    assert verdict_of([agrees, rejects, undecided]) is False
    assert verdict_of([agrees, undecided]) is None
    assert verdict_of([]) is None
