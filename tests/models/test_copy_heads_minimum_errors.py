"""Every numeric field of a copy-heads `Minimum` carries an error that covers a much finer recomputation.

Reference (the same for every point): the stationary point polished by our own Newton iteration on the gradient of
the package's mpmath kernels at 60 digits (until the step is below 1e-45), and there the action and the Hessian's
eigenvalues from those kernels (the causal Hessian by our own chain rule from the collective kernels to the row sums),
a_copy from its definition (softmax: the logistic of the logit; linear: m = (t + (L − 1)c)/L, causal: the mean
g_l) and the two losses from their formulas written out here (`symbolic.mean_predictor_loss_rows`,
`gibbs_loss_rows`), all at 60 digits. The reported float64 value must lie within its error of the reference, and the
error must not be absurd: at most 1e6 times the actual difference (or the float's own half ulp, where the difference
is below it) and below 1e-6 relative.
"""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest
from click.testing import CliRunner

from attnphase.api import copy_heads as ch
from attnphase.cli import main
from attnphase.models.copy_heads.instance import CopyHeadsInstance
from attnphase.results import Status

DPS = 60
FIELDS = ("action", "a_copy", "loss_mean_predictor", "loss_gibbs")


def _newton(gradient, hessian, start) -> list:
    """Our own Newton iteration on the gradient at DPS digits from a float64 point: the stationary point to ~45
    digits (the last step must have fallen below 1e-45 of the point's size)."""
    p = [mpmath.mpf(x) for x in start]
    for _ in range(40):
        step = mpmath.lu_solve(mpmath.matrix(hessian(p)), mpmath.matrix(gradient(p)))
        p = [pi - si for pi, si in zip(p, step)]
        if mpmath.norm(step) <= mpmath.mpf(10) ** -45 * (1 + max(abs(x) for x in p)):
            return p
    raise AssertionError(f"Newton did not converge: last step {mpmath.norm(step)}")


def _losses(inst, m, q, t1, t2, n):
    """(mean-predictor, Gibbs) loss per position at (m, q, mean row sum t1, mean squared row sum t2), uncentred."""
    values = inst.values(exact=True)
    V, tau = mpmath.mpf(inst.V), values["tau"]
    u = tau * n * q / V
    w = u / (1 + u)
    w_ones = tau * n * t1 / (V * (1 + tau * n * t2 / V))
    fit = m**2 * (tau * n / V) / (1 + u) * (2 - w)  # m²/q·w(2 − w), finite at q = 0 (the symmetric point)
    mean = (1 - 1 / V) * (1 - fit) + (1 - 2 * w_ones * t1 + w_ones**2 * t2) / V
    return mean, mean + (V - 1) * tau * q / (1 + u) + tau * t2 / (1 + tau * n * t2 / V)


def _softmax_reference(inst, minimum, n):
    action, L = inst.reduced, inst.L
    k = inst.values(exact=True)["k_rest"]
    x0 = np.log(minimum.a_copy / (1 - minimum.a_copy))
    (x,) = _newton(lambda p: [action.gradient_mp(p[0], n)[0]],
                   lambda p: np.atleast_2d(action.hessian_mp(p[0], n)).tolist(), [x0])
    a = 1 / (1 + mpmath.exp(-x))
    q = a * a + k * (1 - a) ** 2 / (L - 1)
    losses = _losses(inst, a, q, 1, 1, n)
    c = (L * a - 1) / (L - 1)
    return {"action": action.action_mp(x, n), "a_copy": a, "loss_mean_predictor": losses[0], "loss_gibbs": losses[1],
            "eigenvalues": [np.atleast_2d(action.hessian_mp(x, n))[0][0]], "c_copy": c,
            "rho": q - (1 + (L - 1) * c * c) / L}


def _linear_reference(inst, minimum, n):
    action, L = inst.reduced, inst.L
    t, c = _newton(lambda p: list(np.ravel(action.gradient_mp(*p, n))),
                   lambda p: np.atleast_2d(action.hessian_mp(*p, n)).tolist(), [minimum.c_uniform, minimum.c_copy])
    m, q = (t + (L - 1) * c) / L, (t * t + (L - 1) * c * c) / L
    losses = _losses(inst, m, q, t, t * t, n)
    H = mpmath.matrix(np.atleast_2d(action.hessian_mp(t, c, n)).tolist())
    return {"action": action.action_mp(t, c, n), "a_copy": m, "loss_mean_predictor": losses[0],
            "loss_gibbs": losses[1], "eigenvalues": sorted(mpmath.eigsy(H)[0]), "c_uniform": t, "c_copy": c}


def _causal_reference(inst, minimum, n):
    """The row-resolved action in (t_2..t_L, c): the collective kernels in (Q_t, M_t, T1, T2, c) and the chain rule,
    from every row at the reported mean row sum."""
    action, L = inst.rows, inst.L
    T = L - 1
    ls = [mpmath.mpf(l) for l in range(2, L + 1)]
    spread = T - mpmath.fsum(1 / l for l in ls)

    def collective(p):
        t = p[:T]
        return [mpmath.fsum(x * x / l for x, l in zip(t, ls)), mpmath.fsum(x / l for x, l in zip(t, ls)),
                mpmath.fsum(t), mpmath.fsum(x * x for x in t), p[T]]

    def jacobian(p):
        J = mpmath.zeros(5, T + 1)
        for i, (x, l) in enumerate(zip(p[:T], ls)):
            J[0, i], J[1, i], J[2, i], J[3, i] = 2 * x / l, 1 / l, 1, 2 * x
        J[4, T] = 1
        return J

    def gradient(p):
        gz = mpmath.matrix(list(np.ravel(action.gradient_mp(*collective(p), n))))
        return list(jacobian(p).T * gz)

    def hessian(p):
        z = collective(p)
        gz = list(np.ravel(action.gradient_mp(*z, n)))
        J = jacobian(p)
        H = J.T * mpmath.matrix(np.atleast_2d(action.hessian_mp(*z, n)).tolist()) * J
        for i, l in enumerate(ls):
            H[i, i] += 2 * gz[0] / l + 2 * gz[3]
        return H

    p = _newton(gradient, lambda p: hessian(p).tolist(), [minimum.c_uniform] * T + [minimum.c_copy])
    Qt, Mt, T1, T2, c = collective(p)
    m, q = (Mt + c * spread) / T, (Qt + c * c * spread) / T
    losses = _losses(inst, m, q, T1 / T, T2 / T, n)
    return {"action": action.action_mp(*collective(p), n), "a_copy": m, "loss_mean_predictor": losses[0],
            "loss_gibbs": losses[1], "eigenvalues": sorted(mpmath.eigsy(hessian(p))[0])[:3], "c_uniform": T1 / T,
            "c_copy": c}


def _check(value, error, reference, what):
    difference = abs(mpmath.mpf(value) - reference)
    assert difference <= error, (f"{what}: |{value} − {mpmath.nstr(reference, 20)}| = {float(difference):.3g} "
                                 f"> {error:.3g}")
    floor = max(float(difference), float(np.spacing(abs(value))) / 2)
    assert error <= 1e6 * floor, f"{what}: error {error:.3g} absurd against the difference {float(difference):.3g}"
    assert error <= 1e-6 * max(abs(value), 1.0), f"{what}: error {error:.3g} not below 1e-6 relative"


# (attention, L, V, P, convention options, reference, number of stationary points reported)
CASES = [
    ("softmax", 12, 5, 210.0, {}, _softmax_reference, 2),  # the uniform and the copy minimum coexist
    ("softmax", 24, 3, 2500.0, {}, _softmax_reference, 1),
    # audit e18: ρ = 0.852 was one ulp off with an error of c's size (5e-17)
    ("softmax", 12, 10, 100.0, {"beta": 2.0, "sigma2": 3.0, "tau_scale": "inverse-V"}, _softmax_reference, 2),
    ("linear", 10, 3, 250.0, {}, _linear_reference, 3),  # the symmetric saddle and two stable minima
    ("linear", 7, 3, 180.0, {"boundary": "causal"}, _causal_reference, 2),  # the symmetric saddle and the minimum
]


@pytest.mark.parametrize(("attention", "L", "V", "P", "options", "reference", "count"), CASES)
def test_every_minimum_field_lies_within_its_error_of_a_60_digit_recomputation(attention, L, V, P, options,
                                                                               reference, count):
    convention = ch.DEFAULT.with_(**options)
    result = ch.solve(attention, L, V, P, convention)
    assert result.status == Status.CONVERGED, result.message
    inst = CopyHeadsInstance.validated(attention=attention, L=L, V=V, convention=convention)
    n = mpmath.mpf(inst.n_of_P(P))
    assert len(result.minima) == count
    for k, minimum in enumerate(result.minima):
        with mpmath.workdps(DPS):
            ref = reference(inst, minimum, n)
            for name in FIELDS:
                _check(getattr(minimum, name), getattr(minimum, f"{name}_error"), ref[name], f"minimum {k} {name}")
            assert len(minimum.hessian_eigenvalues_error) == len(minimum.hessian_eigenvalues) == len(ref["eigenvalues"])
            for i, (value, error, exact) in enumerate(zip(minimum.hessian_eigenvalues,
                                                          minimum.hessian_eigenvalues_error, ref["eigenvalues"])):
                _check(value, error, exact, f"minimum {k} eigenvalue {i}")
            for name in ("c_uniform", "c_copy", "rho"):  # `error` covers the coordinates and ρ
                if name in ref:
                    assert abs(mpmath.mpf(getattr(minimum, name)) - ref[name]) <= minimum.error


def test_solve_json_prints_every_error_field():
    out = CliRunner().invoke(main, ["solve", "copy-heads", "--attention", "softmax", "--L", "16", "--V", "4", "--P",
                                    "400", "--json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    for minimum in [data["global"], *data["minima"]]:
        for name in FIELDS:
            assert 0 < minimum[f"{name}_error"] < 1e-10 * max(1.0, abs(minimum[name]))
        assert len(minimum["hessian_eigenvalues_error"]) == len(minimum["hessian_eigenvalues"]) == 1
        assert 0 < minimum["hessian_eigenvalues_error"][0] < 1e-10 * abs(minimum["hessian_eigenvalues"][0])


def test_the_causal_softmax_row_mean_field_minima_have_no_error_rather_than_a_zero_one():
    """Audit t18 M53: the causal softmax minima (the row mean field) have no error estimate; their errors are NaN
    (null in JSON) and the eigenvalues' tuple empty, never 0, which would claim an exact value."""
    result = ch.solve("softmax", 8, 4, 200.0, ch.DEFAULT.with_(boundary="causal"))
    assert result.minima
    for minimum in result.minima:
        for name in ("error", "action_error", "a_copy_error", "loss_mean_predictor_error", "loss_gibbs_error"):
            assert math.isnan(getattr(minimum, name)), name
        assert minimum.hessian_eigenvalues_error == ()
