"""One copy-heads model instance: the attention, the sizes and the convention, validated once.

`CopyHeadsInstance.validated(attention=..., L=..., V=..., convention=...)` checks every value against its
declared range (`parameters.InstanceParameters`) and the cross-parameter constraints, then binds the kernels of
the instance's reduced action by parameter name, with everything but the control n fixed. Every solver takes
the instance and trusts it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import mpmath

from attnphase.models.copy_heads import kernels, symbolic
from attnphase.models.copy_heads.parameters import InstanceParameters

__all__ = ["CopyHeadsInstance", "harmonic_tail", "EXACT_VALUES_DPS"]

#: Decimal places of the exact parameter values (`values(exact=True)`): above the working precision of any polish the
#: parameters allow (100 digits, the guard digits and the 3·log10 L digits the linear curvatures lose, L ≤ 2^64; the
#: softmax crossing's digits + 20 at L ≤ 2^256).
EXACT_VALUES_DPS = 400


@dataclass(frozen=True)
class CopyHeadsInstance(InstanceParameters):
    """(attention, L, V, convention) of one model instance, with the bound kernels of its reduced action.

    reduced: the kernels (`kernels.BoundAction`) of the action `solve` and `threshold` minimise, every parameter
    but n bound, called as f(*variables, n): softmax in x (periodic, drop-first), linear in (t, c[, r]) with one
    shared row sum (periodic, drop-first), the row-resolved linear action in (Q_t, M_t, T1, T2, c[, r]) under the
    causal mask; None for softmax under the mask (its theory is the row mean field, on row tables). losses:
    (mean-predictor, Gibbs) loss at (m, q, t, n), or (m, q, t1, t2, n) when the rows differ, V and τ bound.
    rows, row_losses: the row-resolved linear action and its losses (linear attention with one row sum per
    row: the causal mask, or `row_sums="per-row"`; what the order parameters' fluctuations need), else None.
    """

    reduced: kernels.BoundAction | None = field(init=False, repr=False, compare=False)
    losses: object = field(init=False, repr=False, compare=False)
    rows: kernels.BoundAction | None = field(init=False, repr=False, compare=False)
    row_losses: object = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        self.check_joint()
        conv = self.convention
        rows = row_losses = None
        if self.attention == "linear" and self.row_resolved:
            values = self.row_resolved_values(exact=True)
            rows = kernels.bind_action(kernels.causal_linear_kernels(conv.centred, self.entropy), values)
            row_losses = kernels.bind(kernels.row_loss_kernel(conv.centred), values)
        if self.causal:
            reduced, losses = rows, kernels.bind(kernels.row_loss_kernel(conv.centred), self.values())
        else:
            action = (kernels.softmax_kernels(conv.centred) if self.attention == "softmax"
                      else kernels.linear_kernels(conv.remainder, conv.centred))
            reduced = kernels.bind_action(action, self.values(exact=True))
            losses = kernels.bind(kernels.loss_kernel(conv.centred), self.values())
        for name, value in (("reduced", reduced), ("losses", losses), ("rows", rows), ("row_losses", row_losses)):
            object.__setattr__(self, name, value)

    # -- derived sizes -------------------------------------------------------------------------------------
    @property
    def causal(self) -> bool:
        return self.convention.boundary == "causal"

    @property
    def entropy(self) -> bool:
        """The remainder keeps its volume (remainder "entropy")."""
        return self.convention.remainder == "entropy"

    @property
    def row_resolved(self) -> bool:
        """Linear attention with one row sum per target row: always under the causal mask, on request
        (`row_sums="per-row"`) otherwise."""
        return self.causal or self.convention.row_sums == "per-row"

    @property
    def T(self) -> int:
        """Target rows per sequence."""
        return self.convention.targets(self.L)

    def n_of_P(self, P):
        return self.convention.n_of_P(P, self.L)

    def P_of_n(self, n_):
        return self.convention.P_of_n(n_, self.L)

    def with_convention(self, convention) -> CopyHeadsInstance:
        return CopyHeadsInstance(self.attention, self.L, self.V, convention)

    # -- parameter values by SymPy name -------------------------------------------------------------------
    # Each takes exact=True for the values as mpmath numbers to EXACT_VALUES_DPS places, computed from the inputs as
    # given (binary floats, integer sizes): what the mpmath kernels are bound with, so that the digits of a polished
    # threshold beyond float64 are the model's and not the rounding of e^{σ²} or of a prior precision.
    def values(self, exact: bool = False) -> dict:
        """Values of the parameters of the instance's kernels (`reduced`, `losses`), by SymPy name (n excluded)."""
        return _in_arithmetic(self._values, exact)

    def _values(self, size) -> dict:
        conv, L, V = self.convention, size(self.L), size(self.V)
        exp = mpmath.exp if size is mpmath.mpf else math.exp
        out = {"V": V, "tau": conv.tau(V), "ld": conv.log_det_weight, "sigma2": conv.sigma2}
        if self.attention == "softmax":
            # participation of the non-copy weights: e^{σ²} at large L (lognormal law of large numbers), at most
            # L−1 (compared in logs: e^{σ²} overflows a float for σ² > 709); L as a float: the asymptotic checks go
            # far beyond 2^63
            k = L - 1.0 if conv.sigma2 >= math.log(self.L - 1.0) else exp(conv.sigma2)
            out.update({"L": L * 1.0, "T": size(self.T) * 1.0, "k_rest": k})
        elif self.causal:
            out.update(self.row_resolved_values(exact=size is mpmath.mpf))
        else:
            precisions = conv.linear_precisions(L)
            out.update({"L": L, "lam_t": precisions["lam_t"], "lam_c": precisions["lam_c"]})
            if self.entropy:
                out.update({"lam_r": precisions["lam_r"], "D_r": precisions["D_r"]})
        return out

    def row_resolved_values(self, exact: bool = False) -> dict:
        """T, H = Σ_rows 1/l, λ_a, w_b (and D_r) of the row-resolved linear action: G = κ(A + b)·mask on the rows
        l = 2..L (causal mask, D = L(L−1)/2 − 1), or G = κ(A + b11ᵀ) with every target row of length L
        (`row_sums="per-row"`: H = T/L, w_b = 1/(TL + σ²/s₁), D = T(L − 1) − 1 zero-row-sum directions less the
        shared copy direction); w_b = 1/(Σ_rows l + σ²/s₁), 0 without bias."""
        if exact:  # asked at every mpmath evaluation of the causal kernels: computed once (H by digamma at 400 places)
            return dict(self._exact_row_resolved_values)
        return _in_arithmetic(self._row_resolved_values, False)

    @cached_property
    def _exact_row_resolved_values(self) -> dict:
        return _in_arithmetic(self._row_resolved_values, True)

    def _row_resolved_values(self, size) -> dict:
        conv, L, T_, V = self.convention, size(self.L), size(self.T), size(self.V)
        sum_l = L * (L + 1) / 2 - 1 if self.causal else T_ * L
        if not self.causal:
            H = T_ / L
        elif size is mpmath.mpf:
            H = harmonic_tail(self.L, mp=True)
        else:
            H = symbolic.causal_row_uniform_weight(self.L) if self.L <= 2**16 else harmonic_tail(self.L)
        out = {"V": V, "tau": conv.tau(V), "ld": conv.log_det_weight, "T": T_ * 1.0, "H_T": H,
               "lam_a": 1.0 / (conv.kappa(L) ** 2 * conv.sigma2),
               "w_b": 1.0 / (sum_l + size(conv.sigma2) / conv.s1) if conv.bias else 0.0}
        if self.entropy:
            D = size(symbolic.causal_remainder_dimension(self.L)) if self.causal else T_ * (L - 1) - 1
            out["D_r"] = (D - 2) / 2
        return out

    def first_attempt_values(self, exact: bool = False) -> dict:
        """Parameters of the first attempt (the reduction to m and q alone): λ_ρ = T/s_g per unit of q and D_r = (TL − 2)/2."""
        return _in_arithmetic(self._first_attempt_values, exact)

    def _first_attempt_values(self, size) -> dict:
        conv, L, T_, V = self.convention, size(self.L), size(self.T), size(self.V)
        s_g = conv.kappa(L) ** 2 * conv.sigma2
        return {"V": V, "tau": conv.tau(V), "lam_r": T_ / s_g, "D_r": (T_ * L - 2) / 2, "ld": conv.log_det_weight}


def _in_arithmetic(compute, exact: bool):
    """compute(size), `size` making the sizes L, V, T the numbers the arithmetic runs in: as given (ints, so float64
    where they meet a float), or exact: mpmath numbers at EXACT_VALUES_DPS places."""
    if not exact:
        return compute(lambda size: size)
    with mpmath.workdps(EXACT_VALUES_DPS):
        return compute(mpmath.mpf)


def harmonic_tail(L: int, mp: bool = False):
    """Σ_{l=2}^{L} 1/l = ψ(L + 1) − ψ(2) (digamma: the direct sum costs L terms)."""
    if mp:
        import mpmath

        return mpmath.digamma(L + 1) - mpmath.digamma(2)
    from scipy.special import digamma

    return float(digamma(L + 1.0) - digamma(2.0))
