"""The hypothesis profiles of tests/conftest.py: reproducible CI, fresh examples on request, and no test
that overrides them."""

import re
from pathlib import Path

from hypothesis import settings

TESTS = Path(__file__).resolve().parent


def test_ci_is_derandomised_with_more_examples_and_fresh_is_random_with_even_more():
    ci, fresh = settings.get_profile("ci"), settings.get_profile("fresh")
    assert ci.derandomize and ci.max_examples >= 100  # the same examples on every run
    assert not fresh.derandomize and fresh.max_examples > ci.max_examples


def test_no_test_overrides_the_profiles_randomness_or_fixes_its_own_count():
    """A test may draw fewer examples than the profile (when each is expensive), but only as a fraction
    of the profile's count, so that `fresh` draws more of them too; none sets its own randomness."""
    offending = []
    for path in TESTS.rglob("*.py"):
        if path.name == "conftest.py":
            continue
        text = path.read_text()
        offending += [f"{path.relative_to(TESTS)}: {m.group(0)}" for m in re.finditer(r"derandomize\s*=", text)]
        offending += [f"{path.relative_to(TESTS)}: {m.group(0)}" for m in re.finditer(r"max_examples\s*=\s*\d+\s*[,)]", text)]
    assert not offending, offending
