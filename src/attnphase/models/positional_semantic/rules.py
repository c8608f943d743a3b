"""The model's quadrature rules as one ladder, and a branch's fixed point on a rule.

Every quantity of the model is an average over the 2L standard normals (ξ, η) of a function of the
GLOBAL proximal minimiser, which jumps where two basins exchange the role of the global one. The rules
that average it, from cheap and biased to expensive and accurate:

* tensor Gauss-Hermite (`Rule.tensor(n)`): n nodes per dimension. Cheap and smooth in the state with
  frozen basins, so it is where branches are FOLLOWED (numeric.branches) and thresholds bracketed; but it
  does not converge on the jumps (the positional state at ω = 0 has m ≈ 0.07 on every tensor rule where
  the converged value is 0.15), so it never carries an error estimate on its own.
* split-line rules (`Rule.split_line(n)`, numeric.split_line): lines along ξ_1 split where the minimiser
  switches basin, n-point Gauss-Hermite in the other 2L − 1 coordinates. They converge, algebraically and
  with an oscillation in n, on the state and on Φ. Their conjugates m̂, θ̂, V̂ average the continuous envelope
  against polynomials (Gaussian integration by parts, state_evolution), not the jumping g, which the outer
  Gauss-Hermite nodes meet: at the semantic reference state at ω = 0.3, α = 1.25 the map's V on split-line 8, 10,
  12 is off by 5e-4, 1e-5, 5e-5 relative, against 4e-3, 2e-3, 1e-3 with the g integrands, and the default
  tolerances are met on split-line rungs (α_l at ω = 0 … 0.45 on split-line 12 … 16).
* count-split rules (`Rule.count_split(n)`): split lines whose second coordinate ξ_2 is integrated adaptively too,
  cut where the number of switches on a line changes (a fixed point on count-split 8 takes 2-3 s, 2-3× one on
  split-line 12), for tolerances the split-line rungs do not meet, and as the check of those they meet. At ω = 0 the
  α_l roots of the count-split rules 8 … 20 (with the g integrands) scatter over [0.74601, 0.74699] without a trend
  (docs/research, "α_l(0) on the count-split family").

`state_ladder(L)` is the ladder of the accuracy-driven commands (numeric.convergence): a branch is carried
from the tensor rule onto the split-line rungs, then the count-split rungs, in turn, each rung started from
the previous one's fixed point and inverse Jacobian, until the requested tolerance is met; each reported
value carries the spread over the last three rungs, plus the geometric tail of a one-way drift (or no bound
when the drift does not slow), as its verified error; where split-line rungs meet the tolerance, the step to the
first count-split rung is added for the state's fields and α_l (accurate.FAMILY_CHECKED: the split-line family
approaches the state from one side, and its spread can be half its error). Measured at ω = 0.3, α = 1.25
(fixed points on outer 4 .. 12, 32 probes, g integrands): the positional q is 0.046416, 0.047661, 0.047074, 0.047025, 0.047114 (outer 4, 6, 8, 10, 12:
an oscillation that the difference of two successive rungs can understate: 8 → 10 moves it by 0.1 %,
10 → 12 by 0.19 %), the semantic V 17.758, 18.086, 18.200, 18.261, 18.287 (geometric, ratio ~0.5 per
two nodes); Φ on the plain rules oscillates by ~1e-7 (positional, same state: outer 8 … 16 give
−2.720954, −2.719842, −2.719717, −2.719902, −2.719892 e-3: the 14 → 16 difference, 1e-8, is 9× smaller
than the error of either). Hence three rungs and their spread. Outer 6 is not a rung: at ω = 0,
α = 0.615 it has a spurious positional fixed point (m = 0.066, carried there from the tensor start)
where outer 8 and 10 have none (they climb to m = 0.151).

L ≥ 3: the split-line rules need (outer nodes)^(2L−1) lines (hours at L = 3), so the ladder is tensor
rules only (4, 6, 8 nodes per dimension) and its errors are tensor-rule spreads: indicators, not bounds
(docs: at L = 3 the 4 → 6 difference understated the positional ε_g 15-fold).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from attnphase.errors import ParameterError
from attnphase.models.positional_semantic.parameters import Accuracy, Parameters
from attnphase.models.positional_semantic.state_evolution import SaddlePointEquations
from attnphase.numeric.basin_lines import LINE_CUTS
from attnphase.numeric.basin_planes import CountSplit
from attnphase.numeric.split_line import OUTER_WEIGHT_FLOOR, SplitLineRule
from attnphase.params import check_int, check_positive, check_real

__all__ = ["Rule", "FIELD_TOL", "FOLLOW_NODES", "SPLIT_RULE_TENSOR_NODES", "SPREAD_RUNGS", "WINDOW_BIAS",
           "WINDOW_FLOORS", "count_line_probes", "window_bias", "below_window_floor", "state_ladder", "follow_nodes", "resolve_rules"]

# Tensor rule of the continuation in α and ω (frozen-basin solves of 0.05-0.5 s each).
FOLLOW_NODES = {2: 10, 3: 6}
# The tensor rule the split-line rules' equations carry besides their lines (for `SaddlePointEquations.fields`; ε_g is
# integrated on its own tensor rules, `SaddlePointEquations.test_error_estimate`).
SPLIT_RULE_TENSOR_NODES = 16
# Probes per split line (basin-switch detection) and the panel tolerance of its Gauss-Kronrod pieces: 16
# probes moved the map by 0.16 % in V at ω = 0.3 (outer 6), missed switches at ω = 0.26 (a map without a
# fixed point); 1e-9 per panel is 1e4 times below the 0.01 % the state needs.
LINE_PROBES = 32
LINE_PANEL_TOL = 1e-9
# Rungs whose spread is a value's verified error (see the module docstring).
SPREAD_RUNGS = 3
# The count split of the reference rules: ξ_2 cut where the number of switches on a ξ_1 line changes (32
# probes, 30 bisections), panels to 1e-5 per unit outer weight (the hats are O(1)), lines to 1e-8. Measured
# on count-split 8 at the semantic fixed point of split-line 8 at ω = 0.3, α = 1.25: panels to 1e-6, 1e-5,
# 1e-4 give V = 18.2758805, 18.2758808, 18.2758857 (1.4e-8 and 3e-7 relative, the rungs differ by 2.5e-4)
# in 8.4, 5.2, 5.1 s (every plane integrated, before the token exchange); 16 instead of 32 probes per line moves
# V by 2.2e-4 (switches missed).
COUNT_SPLIT = CountSplit(1, 32, 1e-5, 30)
COUNT_LINE_PANEL_TOL = 1e-8
# The default relative tolerance of every field of a branch (q, |m|, |θ|, V, ε_g, ε_t, Φ): `--tol` of `solve`.
FIELD_TOL = Accuracy().tol
# Tolerances finer than the defaults get count-split rungs with FINE_LINE_PROBES probes per line
# (`count_line_probes`). With LINE_PROBES the count-split lines miss windows of the other basin narrower than the
# probe spacing, and the count split puts many lines just there (next to the cut where a pair of switches is born): at
# the semantic reference state at ω = 0.3, α = 1.25 the map of count-split 10 moves V by 2.6e-4 relative between 32
# and 128 probes (count-split 8: 4.7e-5, 16: 1.5e-4; positional ≤ 3.4e-5), a bias the rungs' spread need not show; α_l
# on count-split 10 moves by 2.5e-4 at ω = 0.2, 1.2e-4 at ω = 0 and ≤ 9e-5 at ω = 0.1, 0.3, 0.4, 0.45. That is under a
# tenth of the default field tolerance and a quarter of the default threshold tolerance. More probes reduce it
# erratically, not monotonically: 128 probes still leave 8e-5 in V (count-split 12, 64 against 128 probes) and 1.1e-4
# in α_l (ω = 0.1, count-split 10, 128 against 256), so this narrows the bias without bounding it (the windows are not
# searched for).
FINE_LINE_PROBES = 128
# The finest tolerances whose errors the ladder verifies, per quantity: below them the missed windows (above) can reach
# a quarter of the tolerance (their share at the default threshold tolerance), and a value that meets the tolerance is
# reported `limited`, not `converged` (`below_window_floor`). Each is 4× the largest effect measured: fields 8e-5
# relative with FINE_LINE_PROBES (V, count-split 12, 64 against 128 probes); α_l 1.1e-4 (ω = 0.1, count-split 10, 128
# against 256); α_c, from Φ on lines of LINE_PROBES (the outer-split check), 3.2e-5 (ω = 0: Φ of the two branches on
# the count-split reference rule moved by 7.4e-9 and 4.8e-9 from 32 to 64 probes, over the slope 3.9e-4; ω = 0.3, the
# check rule (12, 10): 1.2e-8 and 1.0e-9 over 8.2e-4, 1.5e-5).
WINDOW_FLOORS = {"fields": 3.2e-4, "alpha_l": 4.4e-4, "alpha_c": 1.3e-4}
# What those windows do to the state's fields (q, m, θ, V, and ε_g through them), relative, per probes per line: the
# largest effect measured above, 2.6e-4 with LINE_PROBES (V, count-split 10, against 128 probes) and 8e-5 with
# FINE_LINE_PROBES (V, count-split 12, 64 against 128: at most what 128 probes still leave). Every rung probes alike, so
# the spread over the rungs need not show it: it joins the reported errors of those fields (`window_bias`). Φ does not
# take it: the envelope is continuous where the minimiser switches basin, so a missed window moves Φ at second order.
WINDOW_BIAS = {LINE_PROBES: 2.6e-4, FINE_LINE_PROBES: 8e-5}
# Lines of the outer-split rules: a panel tolerance 10× below the plain rules' (their E[M] converges to ~1e-9).
OUTER_LINE_PANEL_TOL = 1e-10


@dataclass(frozen=True)
class Rule:
    """One quadrature rule of the ladder: tensor Gauss-Hermite with `nodes` per dimension, or (with `split`)
    the split-line rule `split` (its outer Gauss-Hermite nodes per dimension in `nodes`); with `count` also
    the second coordinate integrated adaptively, cut where the number of switches on a line changes (the
    reference rule of the state, 4-6× a split-line evaluation; SaddlePointEquations.count_split); with
    `outer` the outer-split rule instead: coordinates rotated so that h* depends on ζ alone, lines along χ_1,
    ζ_1 integrated adaptively, cut where the pitchfork indicator changes sign, `outer` Gauss-Hermite nodes in
    (χ_2, ζ_2) (SaddlePointEquations.outer_split_nodes; at ω ≳ 0.2 finer than the count split, ~15-30× a
    split-line evaluation; not a rung: the rule of the α_c check and of the references), its (χ_2, ζ_2) nodes of
    weight at or below `outer_weight_floor` left out."""

    nodes: int
    split: SplitLineRule | None = None
    count: bool = False
    outer: tuple[int, ...] | None = None
    outer_weight_floor: float = OUTER_WEIGHT_FLOOR

    @classmethod
    def tensor(cls, nodes: int) -> Rule:
        return cls(check_int("nodes", nodes, 2, 60))

    @classmethod
    def split_line(cls, nodes: int) -> Rule:
        return cls(nodes, SplitLineRule(nodes, LINE_PROBES, LINE_PANEL_TOL))

    @classmethod
    def count_split(cls, nodes: int, probes: int = LINE_PROBES) -> Rule:
        """probes: uniform probes per line (switch detection); FINE_LINE_PROBES for tolerances finer than the
        default and for references, where windows of the other basin narrower than the probe spacing matter."""
        return cls(nodes, SplitLineRule(nodes, check_int("probes", probes, 4, 400), COUNT_LINE_PANEL_TOL), True)

    @classmethod
    def outer_split(cls, nodes: tuple[int, ...], line_panel_tol: float = OUTER_LINE_PANEL_TOL,
                    line_cuts: tuple[float, ...] = LINE_CUTS, weight_floor: float = OUTER_WEIGHT_FLOOR) -> Rule:
        """line_panel_tol: the panel tolerance of its lines (the outer panels' is OUTER_TO_LINE_PANEL_TOL times it);
        line_cuts: where its lines are cut before their first panels (numeric.split_line.SplitLineRule);
        weight_floor: its (χ_2, ζ_2) Gauss-Hermite nodes of weight at or below it are left out
        (numeric.split_line.OuterSplit)."""
        nodes = tuple(check_int("nodes", n, 2, 60) for n in nodes)
        weight_floor = check_real("weight_floor", weight_floor, 0.0, 1e-6)
        return cls(max(nodes), SplitLineRule(max(nodes), LINE_PROBES, line_panel_tol, tuple(line_cuts)), False, nodes,
                   weight_floor)

    @property
    def label(self) -> str:
        if self.split is None:
            return f"tensor {self.nodes}"
        if self.outer is not None:
            return "outer-split " + "×".join(map(str, self.outer))
        probes = "" if self.split.probe_nodes == LINE_PROBES else f" ({self.split.probe_nodes} probes)"
        return (f"count-split {self.nodes}" if self.count else f"split-line {self.nodes}") + probes

    @property
    def family(self) -> str:
        """The family of rules this one belongs to (numeric.convergence.Rung.family): tensor, split-line,
        count-split or outer-split."""
        if self.split is None:
            return "tensor"
        return "outer-split" if self.outer is not None else ("count-split" if self.count else "split-line")

    def equations(self, params: Parameters, alpha: float) -> SaddlePointEquations:
        """The state-evolution map at α on this rule."""
        if self.split is None:
            return SaddlePointEquations(params, alpha, self.nodes)
        return SaddlePointEquations(params, alpha, SPLIT_RULE_TENSOR_NODES, split_rule=self.split,
                                    outer_split_nodes=self.outer, outer_weight_floor=self.outer_weight_floor,
                                    count_split=COUNT_SPLIT if self.count else None)


def window_bias(rule: Rule) -> float:
    """The relative bias of the state's fields on `rule` from windows its lines' probes miss (WINDOW_BIAS): none on a
    tensor rule (no lines); with fewer probes than LINE_PROBES no bound was measured (inf)."""
    if rule.split is None:
        return 0.0
    probes = rule.split.probe_nodes
    if probes < LINE_PROBES:
        return math.inf
    return WINDOW_BIAS[FINE_LINE_PROBES] if probes >= FINE_LINE_PROBES else WINDOW_BIAS[LINE_PROBES]


def count_line_probes(tol: float, default_tol: float) -> int:
    """Probes per line of the count-split rungs for a tolerance `tol` whose default is `default_tol`: LINE_PROBES
    at the default or coarser, FINE_LINE_PROBES below it (see FINE_LINE_PROBES). Both are relative tolerances,
    finite and > 0 (ParameterError naming tol or default_tol)."""
    tol, default_tol = check_positive("tol", tol), check_positive("default_tol", default_tol)
    return FINE_LINE_PROBES if tol < default_tol else LINE_PROBES


def below_window_floor(quantity: str, tol: float) -> str | None:
    """Why a value of `quantity` ("fields", "alpha_c", "alpha_l") that meets `tol` on the split-line ladder is not
    verified to it (`tol` below WINDOW_FLOORS[quantity]), or None where it is."""
    floor = WINDOW_FLOORS[quantity]
    if tol >= floor:
        return None
    return (f"the tolerance {tol:g} is below {floor:g}, the finest this ladder verifies: windows of the other basin "
            "that the probes on its lines miss move values by up to a quarter of that, and the error does not bound "
            "them")


def state_ladder(L: int, count_probes: int = LINE_PROBES) -> tuple[Rule, ...]:
    """The rungs above the following rule, in climbing order (see the module docstring); count_probes: probes per
    line of the count-split rungs (`count_line_probes`)."""
    if L == 2:
        return (tuple(Rule.split_line(n) for n in (8, 10, 12, 14, 16))
                + tuple(Rule.count_split(n, count_probes) for n in (8, 10, 12, 14, 16)))
    if L == 3:
        return tuple(Rule.tensor(n) for n in (4, 6, 8))
    if L <= 6:
        return tuple(Rule.tensor(n) for n in (3, 4, 5))
    raise ParameterError("L", L, "an integer in [2, 6]")


def follow_nodes(L: int) -> int:
    """Nodes per dimension of the tensor rule on which branches are followed for L tokens."""
    return FOLLOW_NODES.get(L, 3)


def resolve_rules(params: Parameters, rules, count_probes: int = LINE_PROBES) -> tuple[tuple[Rule, ...], int, bool]:
    """(the rungs, the following rule's nodes, whether the errors are verified on split-line rules) for
    `rules`: "auto" (the model's ladder, its count-split rungs with `count_probes` probes per line), a sequence of
    `Rule`s, or tensor node counts (a tensor-only ladder, followed on its first rule)."""
    if isinstance(rules, str):
        if rules != "auto":
            raise ParameterError("rules", rules, '"auto", Rules, or tensor node counts')
        ladder = state_ladder(params.L, count_probes)
        return ladder, follow_nodes(params.L), any(rule.split is not None for rule in ladder)
    if not isinstance(rules, Iterable):
        raise ParameterError("rules", rules, '"auto", or a sequence of Rules or tensor node counts, e.g. (6, 8)')
    given = list(rules)
    ladder = tuple(r if isinstance(r, Rule) else Rule.tensor(check_int("rules", r, 2, 40)) for r in given)
    if not ladder or len(set(ladder)) != len(ladder):
        raise ParameterError("rules", rules, '"auto", or distinct Rules or tensor node counts, e.g. (6, 8)')
    tensors = [r.nodes for r in ladder if r.split is None]
    follow = tensors[0] if tensors else follow_nodes(params.L)
    return ladder, follow, any(rule.split is not None for rule in ladder)
