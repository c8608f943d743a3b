"""Mean-field q-state Potts model, H = −(J/2N) Σ_ij δ(σ_i, σ_j): the symbolic source.

Free energy per spin of the state fractions p_k: f = −(J/2) Σ p_k² + β⁻¹ Σ p_k ln p_k. Ordered states
favour one state: p_1 = x, the others (1 − x)/(q − 1); order parameter m = (qx − 1)/(q − 1) (Wu, Rev.
Mod. Phys. 54, 235 (1982)). The numeric layers follow f in the log-odds u = ln(x(q − 1)/(1 − x)):
unbounded, so no branch meets a domain edge, and x never rounds to 1. Stationarity reads u = βJm.

x and 1 − x are sigmoids of u − ln(q − 1) and its negative, and ln(e^u + q − 1) a logaddexp: their derivatives
(x' = x(1 − x)) are then products, not differences of numbers near 1. Deep in the ordered phase (βJ ≳ 37 + ln q,
where x' < 1e-16) ∂f/∂u and ∂²f/∂u² keep their relative precision, so the continuation can follow the ordered
branch to βJ = 1.25 q: written as e^u/(e^u + q − 1), x − x² is rounding noise there and the branch is lost.
"""

from functools import lru_cache

import sympy as sp

from attnphase.derive.rewrite import logaddexp, sigmoid
from attnphase.derive.symbols import Domain, order_parameter, parameter

__all__ = ["NAME", "TITLE", "u", "beta", "J", "q", "x", "unfavoured", "m", "free_energy_of_x", "free_energy",
           "transverse_curvature", "kernels"]

NAME, TITLE = "potts", "Mean-field q-state Potts model"
u = order_parameter("u", Domain.real(), latex="u", description="log-odds of the favoured state")
beta = parameter("beta", Domain.positive(), latex=r"\beta", description="inverse temperature")
J = parameter("J", Domain.positive(), latex="J", description="coupling")
q = parameter("q", Domain.integers(2), latex="q", description="number of states")
_x, _eps, _p = sp.symbols("x epsilon p", positive=True)

x = sigmoid(u - sp.log(q - 1))
unfavoured = sigmoid(sp.log(q - 1) - u)  # 1 − x, the q − 1 unfavoured states together
m = (q * x - 1) / (q - 1)
free_energy_of_x = -J / 2 * (_x**2 + (1 - _x) ** 2 / (q - 1)) + (_x * sp.log(_x) + (1 - _x) * sp.log((1 - _x) / (q - 1))) / beta
# f(x(u)) with ln x = u − ln(e^u + q − 1) and ln((1 − x)/(q − 1)) = −ln(e^u + q − 1): no log of a difference.
free_energy = -J / 2 * (x**2 + unfavoured**2 / (q - 1)) + (x * u - logaddexp(u, sp.log(q - 1))) / beta
# Two unfavoured fractions split as p ± ε: the second derivative of f in ε at ε = 0, p = (1 − x)/(q − 1) (the full
# second derivative, as `curvature` is along the family: f changes by κ⊥ε²/2).
_split = -J / 2 * ((_p + _eps) ** 2 + (_p - _eps) ** 2) + ((_p + _eps) * sp.log(_p + _eps) + (_p - _eps) * sp.log(_p - _eps)) / beta
transverse_curvature_of_x = sp.simplify(sp.diff(_split, _eps, 2).subs(_eps, 0)).subs(_p, (1 - _x) / (q - 1))
transverse_curvature = sp.simplify(transverse_curvature_of_x.subs(1 - _x, unfavoured)).subs(_x, x)


@lru_cache(maxsize=None)
def kernels():
    """f, ∇f, ∇²f of (u; β, J, q) in float64 and mpmath (the action), and (u, β, J, q) -> [m, f, κ⊥]."""
    from attnphase.derive.codegen import compile_action, compile_kernel

    return compile_action(free_energy, [u], [beta, J, q]), compile_kernel([m, free_energy, transverse_curvature], [u, beta, J, q])
