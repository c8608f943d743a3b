"""derive.fused.MultiStartNewton: the fused multi-start Newton loop over generated kernels.

Reference: numeric.minimize.minimize_multistart_newton, the same iteration written with numpy (an
independent implementation), on the same kernels. Objective: n = 2 or 3 coupled double wells
f(v) = Σ_i (v_i² − 1)² + s·v_1 + c·v_1 v_n with a per-problem tilt s and a constant coupling c (several
local minima; the global one switches well with s), plus small distinct tilts 0.05 i·v_i so that no two
wells are exactly as deep (a tie between starts may resolve differently in the two implementations, whose
objective values can differ by an ulp).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from attnphase.derive.calculus import gradient, hessian
from attnphase.derive.codegen import compile_kernel
from attnphase.derive.fused import MultiStartNewton
from attnphase.errors import ParameterError
from attnphase.numeric.minimize import minimize_multistart_newton


def double_wells(n: int, argument_order):
    """(objective kernel, value-gradient-Hessian kernel, variable names) with the arguments in the given order."""
    v = sympy.symbols(f"v1:{n + 1}", real=True)
    s, c = sympy.symbols("s c", real=True)
    f = sum((x**2 - 1) ** 2 + sympy.Rational(i + 1, 20) * x for i, x in enumerate(v)) + s * v[0] + c * v[0] * v[-1]
    symbols = {str(x): x for x in (*v, s, c)}
    args = [symbols[name] for name in argument_order]
    joint = [f, *gradient(f, list(v)), *hessian(f, list(v))]
    return compile_kernel(f, args), compile_kernel(joint, args), [str(x) for x in v]


# n = 3 in a shuffled argument order: the loop finds every argument by name, whatever the kernel's order
# n = 3 (five variables in another order) in the slow suite: each case compiles its own fused loop (5 s)
@pytest.mark.parametrize("n, order", [(2, ["v1", "v2", "s", "c"]),
                                      pytest.param(3, ["c", "v3", "s", "v1", "v2"], marks=pytest.mark.slow)])
def test_fused_loop_equals_the_vectorised_multistart_newton(n, order):
    objective, joint, variables = double_wells(n, order)
    newton = MultiStartNewton(objective, joint, variables)
    rng = np.random.default_rng(n)
    tilt = rng.normal(size=50)
    starts = np.stack([np.zeros((50, n)), np.ones((50, n)), -np.ones((50, n)), rng.normal(size=(50, n))])
    fused = newton.minimise(starts, {"s": tilt}, {"c": 0.3})

    def arguments(x, rows):
        return {**{f"v{i + 1}": x[:, i] for i in range(n)}, "s": tilt[rows], "c": 0.3}

    def gradient_hessian(x, rows):
        out = joint.call(**arguments(x, rows))
        return out[:, 1:1 + n], out[:, 1 + n:].reshape(-1, n, n)

    reference = minimize_multistart_newton(lambda x, rows: objective.call(**arguments(x, rows)), gradient_hessian,
                                           starts)
    assert fused.converged.all() and reference.converged.all()
    # the Newton tolerance is 1e-13 relative per step; Jacobi rotations (n = 3) against LAPACK add ~1e-12
    assert np.abs(fused.x - reference.x).max() <= 1e-11
    assert np.abs(fused.value - reference.value).max() <= 1e-14
    # the global minimiser of the first coordinate is in the well opposite to a strong tilt
    strong = np.abs(tilt) > 0.6
    assert np.all(np.sign(fused.x[strong, 0]) == -np.sign(tilt[strong]))


def test_the_problems_split_over_two_threads_give_what_one_thread_gives(monkeypatch):
    """Above fused.PARALLEL_MIN_PROBLEMS per thread the problems are cut into blocks on numba's threads (the split-line
    solves' path; the suite's workers otherwise run on one thread each): every problem's minimum, bit for bit."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:  # numba's pool is sized once, at start-up (audit t18: NUMBA_NUM_THREADS=1)
        pytest.skip("needs two numba threads: NUMBA_NUM_THREADS is set to 1")

    from attnphase.derive import fused

    newton = MultiStartNewton(*double_wells(2, ["v1", "v2", "s", "c"]))
    rng = np.random.default_rng(5)
    tilt = rng.normal(size=201)
    starts = np.stack([np.zeros((201, 2)), rng.normal(size=(201, 2))])
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        serial = newton.minimise(starts, {"s": tilt}, {"c": 0.3})
        numba.set_num_threads(2)
        parallel_calls = []
        loop = newton._loops.multistart_newton_parallel
        monkeypatch.setattr(fused, "PARALLEL_MIN_PROBLEMS", 100)
        monkeypatch.setattr(newton._loops, "multistart_newton_parallel",
                            lambda chunks, *args: parallel_calls.append(chunks) or loop(chunks, *args))
        parallel = newton.minimise(starts, {"s": tilt}, {"c": 0.3})
    finally:
        numba.set_num_threads(threads)
    assert parallel_calls == [2]
    assert np.array_equal(parallel.x, serial.x) and np.array_equal(parallel.value, serial.value)
    assert np.array_equal(parallel.converged, serial.converged) and parallel.iterations == serial.iterations


def test_every_non_variable_argument_must_be_given_once():
    newton = MultiStartNewton(*double_wells(2, ["v1", "v2", "s", "c"]))
    starts = np.zeros((1, 2, 2))
    with pytest.raises(ParameterError):
        newton.minimise(starts, {"s": np.zeros(2)}, {})  # c missing
    with pytest.raises(ParameterError):
        newton.minimise(starts, {"s": np.zeros(2)}, {"c": 0.0, "v1": 1.0})  # a variable given
    with pytest.raises(ParameterError):  # starts in three variables for a loop compiled for two
        newton.minimise(np.zeros((1, 2, 3)), {"s": np.zeros(2)}, {"c": 0.0})
    objective, joint, variables = double_wells(2, ["v1", "v2", "s", "c"])
    with pytest.raises(ParameterError):
        MultiStartNewton(objective, joint, ["v1", "w"])
    with pytest.raises(ParameterError):
        MultiStartNewton(objective, objective, variables)


def test_two_by_two_step_is_the_saddle_free_newton_step():
    # The closed form for n = 2 against numpy's eigendecomposition: -V diag(1/max(|λ|, 1e-8 max|λ|)) Vᵀ g, on random
    # symmetric matrices (indefinite, negative definite, nearly singular) and the special cases of the closed form:
    # a diagonal matrix with a < c (its larger eigenvector is the second axis), a multiple of the identity; and
    # matrices scaled by 1e±170.
    objective, joint, variables = double_wells(2, ["v1", "v2", "s", "c"])
    step_of = MultiStartNewton(objective, joint, variables)._loops.newton_step
    rng = np.random.default_rng(7)
    matrices = [rng.normal(size=(2, 2)) for _ in range(200)]
    matrices = [m + m.T for m in matrices] + [np.diag([1.0, 3.0]), np.diag([-2.0, 0.5]), 2.0 * np.eye(2),
                                             np.array([[1.0, 1.0], [1.0, 1.0 + 1e-9]])]
    # scales whose squares overflow or underflow (there the step's norms fall back from √(u² + v²) to hypot)
    matrices += [scale * m for scale in (1e170, 1e-170) for m in matrices[:20]]
    scratch = np.empty(2), np.empty((2, 2)), np.empty((2, 2))
    for hess in matrices:
        grad = rng.normal(size=2)
        step = np.empty(2)
        step_of(grad, hess, step, *scratch)
        eigenvalues, eigenvectors = np.linalg.eigh(hess)
        floor = 1e-8 * np.abs(eigenvalues).max()
        expected = -eigenvectors @ ((eigenvectors.T @ grad) / np.maximum(np.abs(eigenvalues), floor))
        # both are backward stable: the step's error is rounding times the condition number max|λ| / min|λ|
        condition = np.abs(eigenvalues).max() / np.maximum(np.abs(eigenvalues), floor).min()
        assert np.abs(step - expected).max() <= 1e-14 * condition * np.abs(expected).max()
