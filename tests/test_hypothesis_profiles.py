"""The hypothesis profiles of tests/conftest.py: reproducible CI, fresh examples on request."""

from hypothesis import settings


def test_ci_is_derandomised_with_more_examples_and_fresh_is_random_with_even_more():
    ci, fresh = settings.get_profile("ci"), settings.get_profile("fresh")
    assert ci.derandomize and ci.max_examples >= 100  # the same examples on every run
    assert not fresh.derandomize and fresh.max_examples > ci.max_examples
