"""derive: symbolic layer (SymPy).

Modules: `symbols` (parameters and order parameters with domains), `calculus` (gradients, Hessians,
Jacobians, matrix derivatives), `landau` (Landau expansion, classification of transitions),
`asymptotics` (leading large-parameter forms, also of implicitly defined thresholds), `rewrite`
(numerical-stability rules), `codegen` (numpy / torch / mpmath kernels with caching), `source` (their
source, printed per backend after CSE), `fused` (a multistart Newton loop compiled from generated kernels),
`render` (LaTeX / Markdown derivations with named sub-expressions) and `equivalence` (a rendered equation
against the expression it stands for).

Every public name of these modules is available here. `symbols`, `calculus` and `rewrite` (SymPy only)
are imported with the package; the others on first use (module `__getattr__`), so importing the package
does not pull in numba or torch.
"""

from __future__ import annotations

from attnphase.lazy_exports import lazy_exports

from attnphase.derive.calculus import (
    elementwise,
    flatten_variables,
    gradient,
    hessian,
    jacobian,
    logdet,
    matrix_gradient,
    trace,
)
from attnphase.derive.rewrite import (
    EXPM1,
    LOG1P,
    LOGSUMEXP,
    SIGMOID,
    SIGMOID_COMPLEMENT,
    SIGMOID_RATIO,
    SMALL_POWERS,
    SOFTPLUS,
    STABILITY_RULES,
    expm1,
    log1p,
    logaddexp,
    sigmoid,
    stabilize,
    unstabilize,
)
from attnphase.derive.symbols import (
    Domain,
    SymbolInfo,
    domain_of,
    latex_names,
    order_parameter,
    parameter,
    symbol_info,
    symbol_matrix,
    validate,
)

_EAGER = (
    "Domain", "SymbolInfo", "parameter", "order_parameter", "symbol_matrix", "domain_of", "symbol_info", "latex_names",
    "validate", "gradient", "hessian", "jacobian", "matrix_gradient", "flatten_variables", "elementwise", "trace",
    "logdet", "logaddexp", "sigmoid", "log1p", "expm1", "SOFTPLUS", "LOGSUMEXP", "SIGMOID_RATIO", "SIGMOID",
    "SIGMOID_COMPLEMENT", "LOG1P", "EXPM1", "SMALL_POWERS", "STABILITY_RULES", "stabilize", "unstabilize",
)
_LAZY_MODULES = {
    "codegen": ("CODEGEN_VERSION", "BACKENDS", "Kernel", "BoundKernel", "ActionKernels", "compile_kernel",
                "compile_action", "cache_dir", "clear_memory_cache", "load_generated_module",
                "structural_digests"),
    "source": ("generate_source",),
    "fused": ("MultiStartNewton",),
    "landau": ("LandauExpansion", "TransitionClassification", "landau_expansion", "classify_transition"),
    "asymptotics": ("leading_asymptotic", "implicit_leading_asymptotic"),
    "render": ("latex", "Expectation", "Definition", "Equation", "MarkdownDocument", "MAX_LINE_WIDTH"),
    "equivalence": ("Equivalence", "EquationCheck", "equivalent", "normalise_expectations", "check_equation",
                    "check_document", "SYMBOLIC_SIZE_LIMIT"),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY_MODULES, eager=_EAGER)
