"""Hypothesis profiles for the whole suite.

* "ci" (the default under pytest): derandomised, so every run (a developer's, CI's) draws the same
  examples and a failure reproduces; 100 examples where a test does not set its own count
  (hypothesis's own default, so that no test draws fewer examples than before the profiles).
* "fresh": new random examples on every run and 4x as many (400), to look for what the fixed examples
  miss: `pytest --hypothesis-profile=fresh` (a failing example is printed with what reproduces it and kept in
  .hypothesis/ so that the next run tries it first).
* "dev": a quick local iteration, 10 examples, derandomised.

Under pytest-xdist (`make test`: one worker per core) each worker computes on one thread: numba's and torch's
thread pools would otherwise put two threads per worker on each core, and a parallel region then waits for a
descheduled thread. Tests of a parallel path set their own thread count.

Each test has its own cache root ($ATTNPHASE_CACHE_DIR): what a command keeps there by default (the threshold
command's checkpoints, which the same command run again reads back instead of computing) never carries from one
test into another, or from the user's own runs into a test. Only the compiled kernels are shared, through a link to
the cache they would otherwise use: compiling takes seconds, and a kernel depends on nothing but its expression.

The profile rules every test: none sets its own randomness, and a test whose every example is expensive
(it solves a model, compiles a kernel) draws a fixed fraction of the profile's count,
`settings(max_examples=max(1, settings.default.max_examples // k))` with a comment saying why, so that
`fresh` draws k times more of them too (tests/test_hypothesis_profiles.py checks both).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

PROFILES = {
    "ci": settings(max_examples=100, derandomize=True, deadline=None, print_blob=True,
                   suppress_health_check=[HealthCheck.too_slow]),
    "fresh": settings(max_examples=400, derandomize=False, deadline=None, print_blob=True,
                      suppress_health_check=[HealthCheck.too_slow]),
    "dev": settings(max_examples=10, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]),
}
for name, profile in PROFILES.items():
    settings.register_profile(name, profile)
# `--hypothesis-profile NAME` (the hypothesis pytest plugin) overrides this default.
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import numba
        import torch

        numba.set_num_threads(1)
        torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def private_cache_root(tmp_path_factory, monkeypatch):
    from attnphase.resume import cache_root

    kernels = cache_root() / "kernels"
    kernels.mkdir(parents=True, exist_ok=True)
    root = tmp_path_factory.mktemp("cache-root")
    (root / "kernels").symlink_to(kernels, target_is_directory=True)
    monkeypatch.setenv("ATTNPHASE_CACHE_DIR", str(root))
