"""Declared symbols: domains, SymPy assumptions, validation of values."""

import math

import pytest
import sympy

from attnphase.derive.symbols import (
    Domain,
    domain_of,
    latex_names,
    order_parameter,
    parameter,
    symbol_info,
    symbol_matrix,
    validate,
)
from attnphase.errors import ParameterError


def test_domain_membership_at_and_around_the_ends():
    unit = Domain.unit_interval()
    assert unit.contains(0) and unit.contains(1) and unit.contains(0.5)
    assert not unit.contains(-1e-12) and not unit.contains(1 + 1e-12) and not unit.contains(math.nan)
    half_open = Domain.interval(0, 1, low_open=True)
    assert not half_open.contains(0) and half_open.contains(1)
    assert Domain.positive().contains(1e-300) and not Domain.positive().contains(0.0)
    assert Domain.nonnegative().contains(0.0)
    assert Domain.real().contains(-1e300) and not Domain.real().contains(math.inf)
    ints = Domain.integers(1, 10)
    assert ints.contains(3) and not ints.contains(3.5) and not ints.contains(11)


def test_domain_descriptions():
    assert Domain.positive().describe() == "a real number in (0, inf)"
    assert Domain.unit_interval().describe() == "a real number in [0, 1]"
    assert Domain.interval(-1, 2, high_open=True).describe() == "a real number in [-1, 2)"
    assert Domain.integers(1, 10).describe() == "an integer in [1, 10]"
    with pytest.raises(ParameterError):
        Domain(2.0, 1.0)


def test_assumptions_follow_the_domain():
    beta = parameter("beta_test", Domain.positive(), latex=r"\beta", description="inverse temperature")
    assert beta.is_positive and beta.is_real
    assert sympy.sqrt(beta**2) == beta  # the assumption is usable by SymPy
    q = order_parameter("q_test", Domain.unit_interval())
    assert q.is_nonnegative and q.is_real and q.is_positive is None
    neg = parameter("neg_test", Domain.interval(-3, 0, high_open=True))
    assert neg.is_negative
    n = parameter("n_test", Domain.integers(1, 100))
    assert n.is_integer and n.is_positive
    assert symbol_info(q).is_order_parameter and not symbol_info(beta).is_order_parameter
    assert domain_of(beta) == Domain.positive()
    assert latex_names()[beta] == r"\beta"
    # Re-declaring is idempotent (worker processes re-import model modules).
    assert parameter("beta_test", Domain.positive(), latex=r"\beta") is beta


def test_validate_returns_floats_and_rejects_out_of_domain_values():
    lam = parameter("lambda_test", Domain.positive())
    assert validate(lam, 2) == 2.0 and isinstance(validate(lam, "0.5"), float)
    for bad in (0.0, -1.0, math.nan, math.inf, True, "abc", None, [1.0]):
        with pytest.raises(ParameterError) as info:
            validate(lam, bad)
        assert info.value.name == "lambda_test"
        assert info.value.allowed == "a real number in (0, inf)"
    n = parameter("n_valid_test", Domain.integers(1, 8))
    assert validate(n, 8) == 8.0
    with pytest.raises(ParameterError):
        validate(n, 2.5)


def test_symbol_matrix_general_and_symmetric():
    A = symbol_matrix("Msym", 3, symmetric=True)
    assert A == A.T and len(A.free_symbols) == 6
    B = symbol_matrix("Mgen", 2, 3)
    assert B.shape == (2, 3) and len(B.free_symbols) == 6
    with pytest.raises(ParameterError):
        symbol_matrix("Mbad", 2, 3, symmetric=True)
