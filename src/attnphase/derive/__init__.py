"""derive: symbolic layer (SymPy).

Modules: `symbols` (parameters and order parameters with domains), `calculus` (gradients, Hessians,
Jacobians, matrix derivatives), `landau` (Landau expansion, classification of transitions),
`asymptotics` (leading large-parameter forms, also of implicitly defined thresholds), `rewrite`
(numerical-stability rules), `codegen` (numpy / torch / mpmath kernels with CSE and caching), `render`
(LaTeX / Markdown). The names from codegen, landau, asymptotics and render are imported on first
use (module `__getattr__`), so importing the package does not pull in numba or torch.
"""

from __future__ import annotations

from attnphase.derive.calculus import gradient, hessian, jacobian, matrix_gradient
from attnphase.derive.rewrite import STABILITY_RULES, expm1, log1p, logaddexp, sigmoid, stabilize
from attnphase.derive.symbols import Domain, domain_of, order_parameter, parameter, symbol_matrix, validate

__all__ = [
    "Domain",
    "parameter",
    "order_parameter",
    "symbol_matrix",
    "domain_of",
    "validate",
    "gradient",
    "hessian",
    "jacobian",
    "matrix_gradient",
    "logaddexp",
    "sigmoid",
    "log1p",
    "expm1",
    "STABILITY_RULES",
    "stabilize",
    "compile_kernel",
    "compile_action",
    "landau_expansion",
    "classify_transition",
    "leading_asymptotic",
    "implicit_leading_asymptotic",
    "latex",
    "MarkdownDocument",
]

_LAZY = {
    "compile_kernel": "attnphase.derive.codegen",
    "compile_action": "attnphase.derive.codegen",
    "landau_expansion": "attnphase.derive.landau",
    "classify_transition": "attnphase.derive.landau",
    "leading_asymptotic": "attnphase.derive.asymptotics",
    "implicit_leading_asymptotic": "attnphase.derive.asymptotics",
    "latex": "attnphase.derive.render",
    "MarkdownDocument": "attnphase.derive.render",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'attnphase.derive' has no attribute {name!r}")
