"""Hypothesis profiles for the whole suite.

* "ci" (the default under pytest): derandomised, so every run (a developer's, CI's) draws the same
  examples and a failure reproduces; 100 examples where a test does not set its own count
  (hypothesis's own default, so that no test draws fewer examples than before the profiles).
* "fresh": new random examples on every run and 4x as many (400), to look for what the fixed examples
  miss: `pytest --hypothesis-profile=fresh` (a failing example is printed with its seed and kept in
  .hypothesis/ so that the next run tries it first).
* "dev": a quick local iteration, 10 examples, derandomised.

A test that sets `max_examples` itself keeps that count (because each example is expensive); it
still follows the profile's derandomisation unless it sets `derandomize` too.
"""

from __future__ import annotations

import os

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
