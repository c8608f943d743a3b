"""Checks shared by the copy-heads simulation tests (imported by name: pytest puts this directory on sys.path)."""

from __future__ import annotations

import math


def agrees_and_rejects_a_shift(result, name: str, theory: float | None = None, theory_error: float = 0.0):
    """The comparison of `name` agrees with the theory (simulate's own, or the value given), and rejects the theory
    moved by twice the band it claims (n_sigma·√(sem² + theory_error²)) either way; returns the comparison."""
    measured = result.comparison(name) if theory is None else result.compared_with(name, theory, theory_error)
    assert measured.agrees, measured
    band = measured.n_sigma * math.hypot(measured.sem, measured.theory_error)
    for shift in (-2 * band, 2 * band):
        assert not result.compared_with(name, measured.theory + shift, measured.theory_error).agrees
    return measured
