"""Generated kernels against SymPy's 30-digit evalf, on random expressions, plus shapes, dtypes,
autograd, stability, caching and pickling.

"Well conditioned" is made precise by a first-order rounding-error analysis of the expression tree:
evaluating node s in floating point commits a relative error <= u (u = 2^-53, or about one ulp for a
libm function), which reaches the result multiplied by |df/ds| |s| / |f|. Summing over the interior
nodes and over the rounded constants (1/3, erf(2): constant subtrees are folded into one float by the
kernels) gives the condition number

    kappa = sum_s |df/ds| |s| / |f|,          |error(f)| / |f| <~ kappa * u.

The adjoints df/ds are computed by reverse accumulation at 30 digits. Draws with kappa > 1000 (so
kappa * u > 1.1e-13), or with an intermediate value outside [1e-250, 1e250], are excluded with
hypothesis.assume; on the rest the float64 backends must agree to relative 1e-12, which leaves a
factor ~10 for the libm functions' own error of one or two ulps. The mpmath kernel is run at
mp.dps = 40, where the same analysis bounds its error by 1000 * 10^-40, far below the required 1e-27;
the 30-digit evalf reference itself is accurate to about 1e-30.
"""

import json
import os
import pickle
import subprocess
import sys

import mpmath
import numpy as np
import pytest
import sympy
import torch
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from attnphase.derive import calculus
from attnphase.derive.codegen import clear_memory_cache, compile_kernel
from attnphase.derive.rewrite import logaddexp, sigmoid
from attnphase.errors import ParameterError

X, Y, Z = sympy.symbols("x y z", positive=True)
VARIABLES = [X, Y, Z]
UNIT_ROUNDOFF = 2.0**-53
MAX_CONDITION = 1e3


# -- random expressions ---------------------------------------------------------------------------
# Positive expressions may feed log and fractional powers; real ones may feed exp, erf, sigmoid and
# log-sum-exp. Inputs are drawn from [1/4, 4].

RATIONAL_CONSTANTS = [sympy.Rational(p, q) for p, q in ((1, 3), (1, 2), (3, 4), (2, 1), (5, 3), (7, 2))]
EXPONENTS = [sympy.Rational(p, q) for p, q in ((1, 2), (-1, 2), (1, 3), (-2, 3), (3, 2), (2, 1), (-1, 1))]


@st.composite
def positive_expressions(draw, depth):
    if depth == 0:
        return draw(st.sampled_from(VARIABLES + RATIONAL_CONSTANTS))
    kind = draw(st.sampled_from(["leaf", "add", "mul", "pow", "exp", "sigmoid", "sigmoid_explicit", "erfc"]))
    if kind == "leaf":
        return draw(positive_expressions(0))
    if kind in ("add", "mul"):
        a, b = draw(positive_expressions(depth - 1)), draw(positive_expressions(depth - 1))
        return a + b if kind == "add" else a * b
    if kind == "pow":
        return draw(positive_expressions(depth - 1)) ** draw(st.sampled_from(EXPONENTS))
    r = draw(real_expressions(depth - 1))
    return {"exp": sympy.exp(r), "sigmoid": sigmoid(r), "sigmoid_explicit": 1 / (1 + sympy.exp(-r)),
            "erfc": sympy.erfc(r)}[kind]


@st.composite
def real_expressions(draw, depth):
    if depth == 0:
        return draw(positive_expressions(0))
    kind = draw(st.sampled_from(["positive", "log", "erf", "difference", "logsumexp", "logaddexp", "product"]))
    if kind == "positive":
        return draw(positive_expressions(depth))
    if kind == "log":
        return sympy.log(draw(positive_expressions(depth - 1)))
    if kind == "erf":
        return sympy.erf(draw(real_expressions(depth - 1)))
    a, b = draw(real_expressions(depth - 1)), draw(real_expressions(depth - 1))
    if kind == "difference":
        return a - b
    if kind == "logsumexp":
        return sympy.log(sympy.exp(a) + sympy.exp(b))
    if kind == "logaddexp":
        return logaddexp(a, b)
    return a * b


points = st.lists(st.floats(0.25, 4.0), min_size=3, max_size=3)


# -- rounding-error analysis ----------------------------------------------------------------------

def _to_mpf(number) -> mpmath.mpf:
    return mpmath.mpf(number._mpf_) if number.is_Float else mpmath.mpf(int(number))


def _node_values_and_partials(e, point):
    """Post-order list of (node, value, [(child index, d node / d child)]) at mp precision."""
    nodes = []

    def visit(node):
        if node in point:
            value, children = point[node], []
        elif not node.free_symbols:  # constant subtrees are folded into one rounded float by the kernels
            value, children = _to_mpf(sympy.N(node, 35)), []
        elif node.is_Add or node.is_Mul:
            idx = [visit(a) for a in node.args]
            vals = [nodes[i][1] for i in idx]
            if node.is_Add:
                value, partials = mpmath.fsum(vals), [1] * len(vals)
            else:
                value = mpmath.fprod(vals)
                partials = [mpmath.fprod(vals[:k] + vals[k + 1:]) for k in range(len(vals))]
            children = list(zip(idx, partials))
        elif node.is_Pow:
            ib, ie = visit(node.base), visit(node.exp)
            b, p = nodes[ib][1], nodes[ie][1]
            value = b**p
            children = [(ib, p * b ** (p - 1)), (ie, value * mpmath.log(b))]
        else:
            idx = [visit(a) for a in node.args]
            a = [nodes[i][1] for i in idx]
            if isinstance(node, sympy.exp):
                value = mpmath.exp(a[0]); d = [value]
            elif isinstance(node, sympy.log):
                value = mpmath.log(a[0]); d = [1 / a[0]]
            elif isinstance(node, (sympy.erf, sympy.erfc)):
                g = 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-a[0] ** 2)
                value = mpmath.erf(a[0]) if isinstance(node, sympy.erf) else mpmath.erfc(a[0])
                d = [g if isinstance(node, sympy.erf) else -g]
            elif isinstance(node, sigmoid):
                value = 1 / (1 + mpmath.exp(-a[0])); d = [value * (1 - value)]
            elif isinstance(node, logaddexp):
                value = mpmath.log(mpmath.exp(a[0]) + mpmath.exp(a[1]))
                d = [1 / (1 + mpmath.exp(a[1] - a[0])), 1 / (1 + mpmath.exp(a[0] - a[1]))]
            else:
                raise AssertionError(f"unexpected node {node}")
            children = list(zip(idx, d))
        nodes.append((node, value, children))
        return len(nodes) - 1

    visit(e)
    return nodes


def condition(e, point):
    """(kappa, smallest and largest |value| of any node) of evaluating `e` at `point` (see module doc)."""
    with mpmath.workdps(30):
        nodes = _node_values_and_partials(e, point)
        adjoint = [mpmath.mpf(0)] * len(nodes)
        adjoint[-1] = mpmath.mpf(1)
        for i in range(len(nodes) - 1, -1, -1):
            for child, partial in nodes[i][2]:
                adjoint[child] += adjoint[i] * partial
        f = abs(nodes[-1][1])
        if f == 0:
            return float("inf"), 0.0, 0.0
        rounded = [i for i, (node, _, children) in enumerate(nodes)
                   if children or (not node.free_symbols and not node.is_Integer)]
        kappa = mpmath.fsum(abs(adjoint[i] * nodes[i][1]) for i in rounded) / f
        magnitudes = [abs(v) for _, v, _ in nodes if v != 0]
        return float(kappa), float(min(magnitudes)), float(max(magnitudes))


def well_conditioned(e, point) -> bool:
    kappa, smallest, largest = condition(e, point)
    return kappa <= MAX_CONDITION and smallest >= 1e-250 and largest <= 1e250


def reference(e, values) -> mpmath.mpf:
    """SymPy evalf at 30 digits, with the float64 inputs substituted exactly (call under workdps(40),
    or the conversion to mpf rounds it to the current precision)."""
    exact = {v: sympy.Rational(float(x)) for v, x in zip(VARIABLES, values)}
    return _to_mpf(sympy.N(e, 30, subs=exact))


def interesting(e) -> bool:
    """At least three operations and a variable, so that draws are not dominated by bare leaves."""
    return e.has(*VARIABLES) and sympy.count_ops(e) >= 3


# -- the property test ----------------------------------------------------------------------------

# Each example compiles one numba kernel for a batch of expressions (seconds): a sixteenth of the
# profile's examples (6 in the ci profile). Shrinking a failure would recompile hundreds of times, so
# failures are reported as drawn (no shrink phase).
@settings(max_examples=max(1, settings.default.max_examples // 32), phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(st.lists(real_expressions(3).filter(interesting), min_size=4, max_size=6),
       st.lists(points, min_size=3, max_size=3))
def test_three_backends_agree_with_30_digit_evalf(exprs, draws):
    pts = [dict(zip(VARIABLES, (mpmath.mpf(x) for x in p))) for p in draws]
    ok = np.array([[well_conditioned(e, pt) for pt in pts] for e in exprs])
    assume(ok.any())
    columns = [np.array([p[k] for p in draws]) for k in range(3)]

    numpy_values = compile_kernel(exprs, VARIABLES, "numpy")(*columns)  # (n_points, k)
    vectorised_values = compile_kernel(exprs, VARIABLES, "numpy", compiler="none")(*columns)
    torch_kernel = compile_kernel(exprs, VARIABLES, "torch")
    inputs = [torch.tensor(c, dtype=torch.float64, requires_grad=True) for c in columns]
    torch_values = torch_kernel(*inputs)
    mp_kernel = compile_kernel(exprs, VARIABLES, "mpmath")
    with mpmath.workdps(40):
        mp_values = [mp_kernel(*p) for p in draws]
    assert numpy_values.shape == (len(draws), len(exprs)) and torch_values.shape == numpy_values.shape

    for j, e in enumerate(exprs):
        for i in range(len(draws)):
            if not ok[j, i]:
                continue
            with mpmath.workdps(40):
                ref = reference(e, draws[i])
                scale = abs(ref)
                assert abs(numpy_values[i, j] - ref) <= 1e-12 * scale, (e, draws[i], numpy_values[i, j], ref)
                assert abs(vectorised_values[i, j] - ref) <= 1e-12 * scale, (e, draws[i], vectorised_values[i, j])
                assert abs(torch_values[i, j].item() - ref) <= 1e-12 * scale, (e, draws[i])
                assert abs(mp_values[i][j] - ref) <= 1e-27 * scale, (e, draws[i], mp_values[i][j], ref)

    # Autograd through the torch kernel against the kernel of the symbolic gradient, both compared
    # with the 30-digit gradient where each gradient component is itself well conditioned.
    gradients = sympy.Matrix([[sympy.diff(e, v) for v in VARIABLES] for e in exprs])
    symbolic = compile_kernel(gradients, VARIABLES, "torch")(*[t.detach() for t in inputs])
    assert symbolic.shape == (len(draws), len(exprs), 3)
    for j, e in enumerate(exprs):
        # One kernel per expression: in the batched kernel a draw that is ill conditioned for another
        # expression (log(erfc(47)) = -inf) would send 0 * inf = NaN back through shared subexpressions.
        alone = compile_kernel(e, VARIABLES, "torch")(*inputs)
        autograd = torch.autograd.grad(alone.sum(), inputs, allow_unused=True)
        for k, v in enumerate(VARIABLES):
            component = gradients[j, k]
            for i in range(len(draws)):
                if not ok[j, i] or component == 0 or not well_conditioned(component, pts[i]):
                    continue
                assert autograd[k] is not None, (e, v)
                with mpmath.workdps(40):
                    ref = reference(component, draws[i])
                    assert abs(symbolic[i, j, k].item() - ref) <= 1e-12 * abs(ref), (component, draws[i])
                    assert abs(autograd[k][i].item() - ref) <= 1e-12 * abs(ref), (e, v, draws[i])


# -- shapes, dtypes, devices ----------------------------------------------------------------------

def test_output_shapes_broadcast_in_every_backend():
    x, y = sympy.symbols("x y", real=True)
    scalar = sympy.exp(x) * y
    listing = [x + y, sympy.Integer(3), x * y]
    matrix = sympy.Matrix([[x, y, 1], [x * y, x - y, sympy.erf(x)]])
    xs = np.linspace(0.1, 0.9, 4).reshape(4, 1)
    ys = np.linspace(-1.0, 1.0, 3)
    to_torch = lambda a: torch.tensor(a, dtype=torch.float64)  # noqa: E731
    for backend, compiler, convert in (("numpy", "numba", np.asarray), ("numpy", "none", np.asarray),
                                       ("torch", "numba", to_torch)):
        assert compile_kernel(scalar, [x, y], backend, compiler=compiler)(convert(xs), convert(ys)).shape == (4, 3)
        out = compile_kernel(listing, [x, y], backend, compiler=compiler)(convert(xs), convert(ys))
        assert tuple(out.shape) == (4, 3, 3)
        np.testing.assert_array_equal(np.asarray(out)[..., 1], 3.0)
        out = compile_kernel(matrix, [x, y], backend, compiler=compiler)(convert(xs), convert(ys))
        assert tuple(out.shape) == (4, 3, 2, 3)
        np.testing.assert_allclose(np.asarray(out)[2, 1, 1, 1], xs[2, 0] - ys[1], rtol=0, atol=1e-15)
    mp_out = compile_kernel(matrix, [x, y], "mpmath")(xs, ys)
    assert mp_out.shape == (4, 3, 2, 3) and isinstance(mp_out[0, 0, 1, 2], mpmath.mpf)
    assert isinstance(compile_kernel(scalar, [x, y], "mpmath")(0.5, 2), mpmath.mpf)
    assert np.ndim(compile_kernel(scalar, [x, y], "numpy")(0.5, 2.0)) == 0
    assert np.ndim(compile_kernel(scalar, [x, y], "numpy", compiler="none")(0.5, 2.0)) == 0


def test_torch_kernel_keeps_input_dtype_and_never_uses_the_default_dtype():
    x, y = sympy.symbols("x y", real=True)
    kernel = compile_kernel([sympy.log(1 + sympy.exp(x)) * y, sympy.Rational(1, 3), sympy.sqrt(x**2 + 1)],
                            [x, y], "torch")
    previous = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        out32 = kernel(torch.tensor([0.5, 1.5], dtype=torch.float32), 2.0)
        assert out32.dtype == torch.float32
        torch.set_default_dtype(torch.float32)
        out64 = kernel(torch.tensor([0.5, 1.5], dtype=torch.float64), 2.0)
        assert out64.dtype == torch.float64
        assert kernel(0.5, 2.0).dtype == torch.float64  # plain floats: float64, not the default
    finally:
        torch.set_default_dtype(previous)
    np.testing.assert_allclose(out32.numpy(), out64.numpy(), rtol=1e-6)
    assert abs(out64[0, 1].item() - 1 / 3) <= 1e-16


def test_stabilised_kernels_do_not_overflow_or_cancel():
    x = sympy.Symbol("x", real=True)
    softplus = sympy.log(1 + sympy.exp(x))
    points = [800.0, -800.0, 1e-10, 40.0]
    for backend, compiler in (("numpy", "numba"), ("numpy", "none"), ("torch", "numba")):
        k = compile_kernel([softplus, sympy.diff(softplus, x, 2), sympy.exp(x) - 1], [x], backend, compiler=compiler)
        out = np.asarray(k(np.array(points) if backend == "numpy" else torch.tensor(points, dtype=torch.float64)))
        assert out[0, 0] == 800.0 and out[1, 0] == np.exp(-800.0)  # log(1 + e^800) would be inf
        assert out[0, 1] == 0.0  # e^x/(1 + e^x)^2 at 800 underflows to 0 instead of inf/inf = nan
        # At x = 40, 1 - sigmoid(x) would cancel to 0; the exact value is e^-40/(1 + e^-40)^2.
        exact = float(mpmath.exp(-40) / (1 + mpmath.exp(-40)) ** 2)
        assert abs(out[3, 1] - exact) <= 4e-16 * exact
        assert abs(out[2, 2] - np.expm1(1e-10)) <= 2e-16 * np.expm1(1e-10)  # exp(x) - 1 would lose 6 digits
    unstable = compile_kernel(softplus, [x], "numpy", stabilize=False, cache=False)
    assert np.isinf(unstable(800.0))


def test_sigmoid_pairs_share_one_exponential_and_keep_every_value():
    # A two-token softmax weight and its complement, sigmoid(x(x - y)) and sigmoid(x(y - x)) (a pair only once
    # expanded), and sigmoid(xy), whose derivatives bring sigmoid(-xy) (sigmoid' = sigmoid(u) sigmoid(-u)). Every
    # sigmoid has its partner, so the numba kernel computes them as two `_sigmoid_pair` calls and no `_sigmoid` call.
    x, y = sympy.symbols("x y", real=True)
    f = (sigmoid(x * (x - y)) - sympy.Rational(3, 10)) ** 2 + (sigmoid(x * (y - x)) - sympy.Rational(3, 5)) ** 2 \
        + sigmoid(x * y)
    exprs = [f, *calculus.gradient(f, [x, y]), *calculus.hessian(f, [x, y])]
    kernel = compile_kernel(exprs, [x, y], "numpy", cache=False)
    body = kernel.source.split("def evaluate_points")[1]
    assert body.count("_sigmoid_pair(") == 2 and "_sigmoid(" not in body
    reference = compile_kernel(exprs, [x, y], "mpmath", cache=False)
    points = [(-2.5, 0.7), (0.3, -1.9), (1.2, 1.1), (6.0, 0.5), (-0.4, -3.0)]
    values = kernel(np.array([p[0] for p in points]), np.array([p[1] for p in points]))
    with mpmath.workdps(40):
        exact = np.array([[float(v) for v in reference(mpmath.mpf(a), mpmath.mpf(b))] for a, b in points])
    # rounding of a few dozen operations on O(1) values, against outputs of size >= 1e-4 here
    np.testing.assert_allclose(values, exact, rtol=1e-12, atol=1e-15)


def test_bad_input_raises_parameter_error():
    x, y = sympy.symbols("x y", real=True)
    with pytest.raises(ParameterError):
        compile_kernel(x * y, [x], "numpy")
    with pytest.raises(ParameterError):
        compile_kernel(x, [x], "jax")
    with pytest.raises(ParameterError):
        compile_kernel(sympy.besselj(0, x), [x], "numpy")
    with pytest.raises(ParameterError):
        compile_kernel(x, [x, x], "numpy")
    with pytest.raises(ParameterError):
        compile_kernel(x, [x], "numpy", compiler="llvm")
    with pytest.raises(ParameterError):
        compile_kernel(x, [x], "numpy")(1.0, 2.0)


def test_symbolic_gradient_matches_autograd_on_the_matrix_action_kernel():
    A = sympy.Matrix(2, 2, sympy.symbols("a0:4", real=True))
    beta = sympy.Symbol("beta", positive=True)
    action = (A * A).trace() / 2 - calculus.logdet(sympy.eye(2) + beta * A) + sum(
        sympy.log(1 + sympy.exp(a)) for a in A)
    variables = list(A) + [beta]
    gradient = calculus.gradient(action, variables)
    values = [torch.tensor([0.1, -0.2], dtype=torch.float64, requires_grad=True) for _ in range(4)]
    values.append(torch.tensor([0.7, 0.3], dtype=torch.float64, requires_grad=True))
    s = compile_kernel(action, variables, "torch")(*values)
    auto = torch.autograd.grad(s.sum(), values)
    symbolic = compile_kernel(gradient, variables, "torch")(*[v.detach() for v in values])  # (2, 5, 1)
    for k in range(5):
        # Both are float64 evaluations of O(1) quantities with O(1) condition: agreement to 1e-14.
        np.testing.assert_allclose(auto[k].numpy(), symbolic[:, k, 0].numpy(), rtol=1e-14, atol=1e-14)


# -- caches and pickling --------------------------------------------------------------------------

def test_disk_cache_is_shared_with_another_process_and_kernels_pickle(tmp_path):
    x, y = sympy.symbols("x y", positive=True)
    exprs = [sympy.log(x) * sympy.exp(-y) + sympy.erf(x - y), sigmoid(x * y)]
    script = (
        "import json, pickle, sympy\n"
        "from attnphase.derive.codegen import compile_kernel\n"
        "from attnphase.derive.rewrite import sigmoid\n"
        "x, y = sympy.symbols('x y', positive=True)\n"
        "exprs = [sympy.log(x) * sympy.exp(-y) + sympy.erf(x - y), sigmoid(x * y)]\n"
        "k = compile_kernel(exprs, [x, y], 'numpy')\n"
        f"pickle.dump(k, open({str(tmp_path / 'k.pkl')!r}, 'wb'))\n"
        "print(json.dumps({'path': str(k.path), 'values': k(1.5, 0.25).tolist()}))\n"
    )
    env = {**os.environ, "ATTNPHASE_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    other = json.loads(done.stdout.strip().splitlines()[-1])
    assert os.path.exists(other["path"])
    mtime = os.path.getmtime(other["path"])

    os.environ["ATTNPHASE_CACHE_DIR"] = str(tmp_path / "cache")
    try:
        clear_memory_cache()
        kernel = compile_kernel(exprs, [x, y], "numpy")  # fresh memory cache: loaded from disk
        assert str(kernel.path) == other["path"] and os.path.getmtime(other["path"]) == mtime
        np.testing.assert_array_equal(kernel(1.5, 0.25), other["values"])
        assert compile_kernel(exprs, [x, y], "numpy") is kernel  # in-memory cache
        clear_memory_cache()
        unpickled = pickle.load(open(tmp_path / "k.pkl", "rb"))
        np.testing.assert_array_equal(unpickled(1.5, 0.25), other["values"])
        for backend in ("torch", "mpmath"):
            k = compile_kernel(exprs, [x, y], backend)
            again = pickle.loads(pickle.dumps(k))
            assert float(np.asarray(again(1.5, 0.25), dtype=float)[1]) == float(np.asarray(k(1.5, 0.25), dtype=float)[1])
    finally:
        os.environ["ATTNPHASE_CACHE_DIR"] = env["ATTNPHASE_CACHE_DIR"]


def test_mpmath_kernel_accuracy_scales_with_the_working_precision():
    x, y = sympy.symbols("x y", positive=True)
    e = sympy.exp(x) * sympy.log(y) + sympy.erf(x / 3) + x ** sympy.Rational(1, 3) + logaddexp(x, y) / sigmoid(y)
    kernel = compile_kernel(e, [x, y], "mpmath")
    for dps in (15, 30, 50, 80):
        with mpmath.workdps(dps + 20):
            exact = _to_mpf(sympy.N(e.subs({x: sympy.Rational(7, 5), y: sympy.Rational(3, 7)}), dps + 15))
        with mpmath.workdps(dps):
            value = kernel(mpmath.mpf(7) / 5, mpmath.mpf(3) / 7)
        with mpmath.workdps(dps + 20):
            # About ten roundings with condition O(1): a few units in the last of `dps` digits.
            assert abs(value - exact) <= mpmath.mpf(10) ** (2 - dps) * abs(exact), dps


def test_cache_key_distinguishes_assumptions_and_options():
    real_x, positive_x = sympy.Symbol("x", real=True), sympy.Symbol("x", positive=True)
    a = compile_kernel(sympy.sqrt(real_x**2), [real_x], "torch")
    b = compile_kernel(sympy.sqrt(positive_x**2), [positive_x], "torch")  # simplifies to x
    c = compile_kernel(sympy.sqrt(real_x**2), [real_x], "torch", cse=False)
    assert len({a.key, b.key, c.key}) == 3
    assert a(torch.tensor(-2.0, dtype=torch.float64)).item() == 2.0
    assert b(torch.tensor(-2.0, dtype=torch.float64)).item() == -2.0  # x > 0 was promised
