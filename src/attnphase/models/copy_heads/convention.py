"""The conventions of the copy-heads model: choices that move thresholds by powers of L and V (docs/models/copy_heads.md, "Conventions").

Each choice is a declared parameter (`attnphase.params`), so its range is written once and serves the Python
API, the CLI options (`attnphase.cli.common.options_from`) and the simulator. A `Convention` is validated
whenever it is made (also by `with_`), and everything downstream trusts it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from attnphase.errors import ParameterError
from attnphase.params import OneOf, ParameterSet, RealRange, check_bool, parameter

__all__ = ["BOUNDARIES", "P_COUNTS", "LOSS_REDUCTIONS", "TAU_SCALES", "LINEAR_SCALES", "REMAINDERS", "TOKENS",
           "READ_OUTS", "ROW_SUMS", "Convention", "DEFAULT"]

BOUNDARIES = ("periodic", "drop-first", "causal")
P_COUNTS = ("sequences", "tokens")
LOSS_REDUCTIONS = ("summed", "averaged")
TAU_SCALES = ("one", "inverse-V")
LINEAR_SCALES = ("1/L", "1/sqrt(L)", "1")
REMAINDERS = ("map", "entropy")
TOKENS = ("one-hot", "centred")
READ_OUTS = ("integrated", "map")
ROW_SUMS = ("shared", "per-row")
_POSITIVE = RealRange(0.0, None, low_open=True)
# The fields that only linear attention's action contains: with softmax attention a value away from its default
# would be reported among the parameters as if applied while changing nothing, so it is refused.
LINEAR_ONLY = ("linear_scale", "bias", "row_sums", "s1")


def refuse_linear_only(name: str, value, default) -> None:
    """A ParameterError for a setting of linear attention only (`name`) given with softmax attention away from its
    default."""
    if value != default:
        raise ParameterError(name, value, f"left at its default ({default!r}) with softmax attention: it applies to "
                                          "linear attention only")


@dataclass(frozen=True)
class Convention(ParameterSet):
    """Choices that move thresholds by powers of L and V (docs/models/copy_heads.md, "Conventions").

    boundary: periodic (y_1 = x_L, T = L targets), drop-first (T = L − 1) or causal (T = L − 1 and row l
    attends to positions ≤ l only: see the causal-mask section of `symbolic`).
    P_counts: what P counts, sequences or target tokens.
    loss: the squared error summed over positions, or averaged (β → β/T per sequence).
    tau_scale: value-prior variance τ = tau0 ("one") or tau0/V.
    linear_scale: κ in G = κ(A + b11ᵀ).
    bias: the score bias b on the uniform mode (variance s1) is present.
    remainder: "map" (saddle point over G, no entropy: Convention A) or "entropy" (the remainder's
    volume is kept, a free energy over G).
    read_out: "integrated" (W integrated out: the Bayesian marginal) or "map" (joint MAP over W, what
    Adam on all weights minimises; the log-det terms drop).
    tokens: inputs "one-hot" or "centred" (x − 1/V; targets stay one-hot): the all-ones terms of the data
    action drop (`symbolic.data_action`). Softmax rows sum to 1, so centring shifts every feature by the
    constant vector 1/V and changes the softmax action by a constant only.
    row_sums (linear attention, periodic and drop-first): "shared" (one global row sum t, the plane t U + c S_⊥) or
    "per-row" (one row sum t_l per target row, the row-resolved plane of the causal section with every row of length
    L). The saddle point has equal row sums, so only the order parameters' fluctuations (`linear_posterior_means`)
    see the difference: the T − 1 row-sum spreads that posterior sampling of the network integrates over. The causal
    mask is always row-resolved.
    beta, tau0 (option --tau), sigma2 (option --score-variance: the prior variance of one attention score), s1 (the
    bias's prior variance).
    """

    boundary: str = parameter(OneOf(BOUNDARIES), "periodic",
                              help="periodic (y_1 = x_L), drop-first (no target at position 1) or causal (drop-first "
                                   "and row l attends to positions <= l).")
    P_counts: str = parameter(OneOf(P_COUNTS), "tokens", help="What P counts: target tokens or sequences.")
    loss: str = parameter(OneOf(LOSS_REDUCTIONS), "summed", help="Squared error summed or averaged over positions.")
    tau_scale: str = parameter(OneOf(TAU_SCALES), "one", help="Value-prior variance tau or tau/V.")
    linear_scale: str = parameter(OneOf(LINEAR_SCALES), "1/L", help="Linear attention G = kappa (A + b 11^T).")
    bias: bool = parameter(None, True, help="Linear attention with the uniform score bias b (CLI: --no-bias drops it).")
    remainder: str = parameter(OneOf(REMAINDERS), "map",
                               help="map: saddle point over G (Convention A); entropy: keep the remainder's volume.")
    read_out: str = parameter(OneOf(READ_OUTS), "integrated",
                              help="integrated: W marginalised (Bayesian); map: joint MAP over W (what Adam minimises).")
    tokens: str = parameter(OneOf(TOKENS), "one-hot",
                            help="Inputs one-hot or centred (x - 1/V; targets one-hot; softmax unchanged).")
    row_sums: str = parameter(OneOf(ROW_SUMS), "shared",
                              help="Linear attention, periodic/drop-first: one global row sum (shared) or one per row "
                                   "(per-row; same saddle point, but the posterior means of simulate --fluctuations then "
                                   "match the sampled network). The causal mask is always per row.")
    beta: float = parameter(_POSITIVE, 1.0, help="Inverse temperature.")
    tau0: float = parameter(_POSITIVE, 1.0, help="Value-prior variance.", option="--tau")
    sigma2: float = parameter(_POSITIVE, 1.0, help="Prior variance of one attention score.", option="--score-variance")
    s1: float = parameter(_POSITIVE, 1.0, help="Bias prior variance (linear).")

    def __post_init__(self):
        # every construction is checked against the declarations (also `with_` and the dataclass constructor), and
        # keeps the converted value: beta="2" would otherwise reach the arithmetic as a string. A flag (bool by
        # default, no declared range) must be a bool: bias="no" would act as True by its truth value.
        for f in fields(self):
            allowed = f.metadata.get("allowed")
            if allowed is not None:
                object.__setattr__(self, f.name, allowed.check(f.name, getattr(self, f.name)))
            elif isinstance(f.default, bool):
                object.__setattr__(self, f.name, check_bool(f.name, getattr(self, f.name)))

    @property
    def centred(self) -> bool:
        return self.tokens == "centred"

    @property
    def log_det_weight(self) -> float:
        return 1.0 if self.read_out == "integrated" else 0.0

    def with_(self, **changes) -> Convention:
        return replace(self, **changes)

    def check_applies_to(self, attention: str) -> None:
        """A ParameterError for a linear-only field (`LINEAR_ONLY`) away from its default with softmax attention."""
        if attention != "softmax":
            return
        for name in LINEAR_ONLY:
            refuse_linear_only(name, getattr(self, name), self.declarations()[name].default)

    def without_linear_choices(self) -> Convention:
        """This convention with the linear-only fields at their defaults: the softmax model under it (the softmax
        action does not contain them)."""
        return replace(self, **{name: self.declarations()[name].default for name in LINEAR_ONLY})

    def targets(self, L_: int) -> int:
        return L_ if self.boundary == "periodic" else L_ - 1

    def tau(self, V_: int) -> float:
        return self.tau0 if self.tau_scale == "one" else self.tau0 / V_

    def kappa(self, L_):
        """κ at L_ (an int, or an mpmath number for the exact parameter values)."""
        if self.linear_scale == "1/L":
            return 1.0 / L_
        if self.linear_scale == "1/sqrt(L)":
            import mpmath

            return 1.0 / (mpmath.sqrt(L_) if isinstance(L_, mpmath.mpf) else math.sqrt(L_))
        return 1.0

    def beta_per_target(self, L_: int) -> float:
        """Inverse temperature multiplying each target's squared error."""
        return self.beta if self.loss == "summed" else self.beta / self.targets(L_)

    def n_of_P(self, P, L_: int):
        """n = β_eff × number of target tokens for P samples (P sequences or P target tokens)."""
        tokens = P * self.targets(L_) if self.P_counts == "sequences" else P
        return self.beta_per_target(L_) * tokens

    def P_of_n(self, n_, L_: int):
        """P for the control n (n / β_eff target tokens); β/T is never rounded on its own, so an mpmath n gives P
        to its own precision."""
        tokens = n_ / self.beta if self.loss == "summed" else n_ * self.targets(L_) / self.beta
        return tokens / self.targets(L_) if self.P_counts == "sequences" else tokens

    def sequences_of_P(self, P: float, L_: int) -> int:
        """Training sequences of a data set of size P (P/T rounded when P counts target tokens), at least one."""
        return max(1, int(round(P / self.targets(L_)))) if self.P_counts == "tokens" else max(1, int(round(P)))

    def P_of_sequences(self, sequences: int, L_: int):
        """The P that `sequences` training sequences realise (what a simulation's theory is evaluated at)."""
        return sequences * self.targets(L_) if self.P_counts == "tokens" else sequences

    def linear_precisions(self, L_: int) -> dict[str, float]:
        """Prior precisions of t, c and ρ for G = κ(A + b11ᵀ) restricted to the T target rows.

        t = κL b + (mean score)κ: variance κ²(L² s1 + Lσ²/T) (no bias: κ²Lσ²/T); the copy direction
        c(S − U) needs A = (c/κ)(e_prev − 1/L) per row: precision T(L−1)/(κ²Lσ²); the remainder
        ρ = ‖R‖²/T: precision T/(κ²σ²).
        """
        k, T_ = self.kappa(L_), self.targets(L_)
        var_t = k**2 * ((L_**2 * self.s1 if self.bias else 0.0) + L_ * self.sigma2 / T_)

        def over(a, b):  # a variance that underflowed to 0 (σ² ~ 1e-320 in float64) gives an infinite precision
            return a / b if b != 0 else math.inf

        return {
            "lam_t": over(1.0, var_t),
            "lam_c": over(T_ * (L_ - 1), k**2 * L_ * self.sigma2),
            "lam_r": over(T_, k**2 * self.sigma2),
            # zero-row-sum remainder orthogonal to the copy direction: T(L−1) − 1 dimensions
            "D_r": (T_ * (L_ - 1) - 1 - 2) / 2 if self.remainder == "entropy" else 0.0,
        }


DEFAULT = Convention()
