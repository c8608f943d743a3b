"""Converged references for the positional-semantic thresholds, on rules far finer than the ladder's.

Writes (and resumes from) benchmarks/positional_semantic_reference.json, key "references":

* α_l(ω), ω = 0, 0.1, 0.2, 0.3, 0.4, 0.45. α_l is the root of ε_g,sem(α) − ε_g^lin; ε_g depends on the
  semantic state at first order, so the state must be converged: the semantic branch is followed on the tensor
  rule, carried up the split-line ladder (8, 10, 12 outer nodes) and then onto the COUNT-SPLIT rules
  (rules.Rule.count_split: planes (ξ_1, ξ_2) cut where the number of switches on a line changes, 8 and 10
  Gauss-Hermite nodes in (η_1, η_2), 128 probes per line, then 10 nodes with 256), whose hats converge where the
  plain rules oscillate. On each count-split rule two fixed points (α_1, α_1 + h) give ε_g and its slope, a Newton
  step α_N = α_1 − Δ/Δ', and a third fixed point at α_N one more step; the reference is the last rule's value, its
  error the spread over the three rules plus the size of that last step.
* α_c(0.45): both branches at the ladder's α_c on count-split 8 (the state), Φ there with E[M] on the
  outer-split rules (16, 14) and (20, 18) (Φ needs the state at second order only; at ω ≥ 0.3 these agree
  to ~1e-9); error: the difference of the two outer-split rules + the state effect (Φ at the split-line-12
  state against the count-split-8 state, same envelope rule), over the exact slope E[M]_pos − E[M]_sem.

* fields(0.3,1.25): both branches at (ω, α) = (0.3, 1.25) on count-split 16 with 256 probes per line (error: the
  spread over count-split 12, 14, 16 with 128 probes and that rule), the reference of the benchmark's solve (key
  "fields(0.3,1.25)"; the default solve stops on count-split 10 at the latest).

Each finished entry is written at once (the whole run takes CPU-hours on a loaded 2-core machine).
Run: `.venv/bin/python benchmarks/positional_semantic_references.py [--only alpha_l] [--omega 0.3]`.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from attnphase.api import positional_semantic as api
from attnphase.models.positional_semantic.accurate import AccurateState, on_rule
from attnphase.numeric.split_line import SplitLineRule

REFERENCE_FILE = Path(__file__).with_name("positional_semantic_reference.json")
ALPHA_L_OMEGAS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.45)
# Starting points: the docs' refined values (within a few 1e-3 of the roots), ω = 0.45 from the tensor secant.
ALPHA_L_START = {0.0: 0.7379, 0.1: 0.8883, 0.2: 1.1155, 0.3: 1.4905, 0.4: 2.2762, 0.45: 3.19}
ALPHA_C_START = {0.45: 2.1991}
SLOPE_STEP = 0.01
# 128 probes per line: with the ladder's 32 the count-split lines miss windows of the other basin narrower than the
# probe spacing (at ω = 0.3, α = 1.25 the semantic V moves by 2.6e-4 relative on count-split 10 between 32 and 128
# probes, by 1.5e-4 on count-split 16, as much as the rules' spread). The last rule, with twice the probes, puts
# their remaining effect into the spread.
REFERENCE_LINE_PROBES = 128
COUNT_RULES = (api.Rule.count_split(8, REFERENCE_LINE_PROBES), api.Rule.count_split(10, REFERENCE_LINE_PROBES),
               api.Rule.count_split(10, 2 * REFERENCE_LINE_PROBES))
ENVELOPE_RULES = ((16, 14), (20, 18))


def load() -> dict:
    return json.loads(REFERENCE_FILE.read_text()) if REFERENCE_FILE.exists() else {}


def save(data: dict) -> None:
    """Write `data` over the file's current content, merged (two runs with --only/--omega can work at once)."""
    merged = load()
    merged.update({k: v for k, v in data.items() if k != "references"})
    merged.setdefault("references", {}).update(data.get("references", {}))
    REFERENCE_FILE.write_text(json.dumps(merged, indent=1) + "\n")


def carried(branch: str, alpha: float, params) -> AccurateState:
    """The branch followed on the tensor rule to α and carried up the split-line ladder (8, 10, 12).
    Every fixed point here is converged on its residual alone (step_tol=None): the rungs' predicted-step stop,
    3e-5 relative, is a third of the fields reference's relative error in V."""
    solution = api.follow(branch, params, 10, low=alpha, high=alpha).at(alpha)
    if solution is None:
        raise RuntimeError(f"{branch} branch not reached at α = {alpha}")
    state = AccurateState(solution)
    for rule in api.state_ladder(2)[:3]:
        state = on_rule(state, params, rule, step_tol=None)
        if not state.success:
            raise RuntimeError(f"{branch} at α = {alpha} on {rule.label}: {state.message}")
    return state


def at_alpha(state: AccurateState, alpha: float, params, rule) -> AccurateState:
    moved = on_rule(replace(state, solution=replace(state.solution, alpha=alpha)), params, rule, step_tol=None)
    if not moved.success:
        raise RuntimeError(f"{state.solution.branch} at α = {alpha} on {rule.label}: {moved.message}")
    return moved


def alpha_l_reference(omega: float) -> dict:
    params = api.Parameters.validated(omega=omega)
    baseline = api.linear_baseline(params).value
    started = time.perf_counter()
    alpha_1 = ALPHA_L_START[omega]
    state = carried("semantic", alpha_1, params)
    rows, estimates = [], []
    for rule in COUNT_RULES:
        first = at_alpha(state, alpha_1, params, rule)
        second = at_alpha(first, alpha_1 + SLOPE_STEP, params, rule)
        slope = (second.solution.test_error - first.solution.test_error) / SLOPE_STEP
        newton = alpha_1 - (first.solution.test_error - baseline) / slope
        # the crossing function at the Newton point: its own Newton step is the correction, and the size of
        # that step bounds what the linearisation leaves (the iteration converges quadratically from here)
        third = at_alpha(second, newton, params, rule)
        correction = -(third.solution.test_error - baseline) / slope
        estimates.append(newton + correction)
        rows.append({"rule": rule.label, "alpha": [alpha_1, alpha_1 + SLOPE_STEP, newton],
                     "test_error": [s.solution.test_error for s in (first, second, third)], "slope": slope,
                     "alpha_l": newton + correction, "last_step": correction, "state": list(third.solution.state)})
        print(f"ω = {omega}: {rule.label}: slope {slope:.5g}, Newton {newton:.6f}, corrected {newton + correction:.6f}",
              flush=True)
        state = third
    linear = abs(rows[-1]["last_step"])
    return {"value": estimates[-1], "error": max(estimates) - min(estimates) + linear, "linearisation": linear,
            "baseline": baseline, "rows": rows, "seconds": time.perf_counter() - started,
            "method": "fixed points at α_1, α_1 + 0.01 and the Newton point on "
                      + ", ".join(r.label for r in COUNT_RULES) + "; error: the spread over the rules + the last Newton step"}


def alpha_c_reference(omega: float) -> dict:
    params = api.Parameters.validated(omega=omega)
    alpha = ALPHA_C_START[omega]
    started = time.perf_counter()
    states = {b: carried(b, alpha, params) for b in ("semantic", "positional")}
    fine = {b: at_alpha(states[b], alpha, params, COUNT_RULES[0]) for b in states}
    values = {}
    for nodes in ENVELOPE_RULES:
        equations = api.SaddlePointEquations(params, alpha, 16, split_rule=SplitLineRule(max(nodes), 32, 1e-10),
                                             outer_split_nodes=nodes)
        for b in states:
            envelope = equations.envelope_average(fine[b].solution.state)
            values[(b, nodes)] = (equations.free_energy_of_state(fine[b].solution.state, envelope), envelope)
        print(f"ω = {omega}: outer split {nodes}: Φ_sem − Φ_pos = "
              f"{values[('semantic', nodes)][0] - values[('positional', nodes)][0]:.4g}", flush=True)
    coarse_rule, fine_rule = ENVELOPE_RULES
    equations = api.SaddlePointEquations(params, alpha, 16, split_rule=SplitLineRule(max(coarse_rule), 32, 1e-10),
                                         outer_split_nodes=coarse_rule)
    state_effect = sum(abs(equations.free_energy_of_state(states[b].solution.state) - values[(b, coarse_rule)][0])
                       for b in states)
    delta = values[("semantic", fine_rule)][0] - values[("positional", fine_rule)][0]
    slope = values[("positional", fine_rule)][1] - values[("semantic", fine_rule)][1]
    rule_difference = abs(delta - (values[("semantic", coarse_rule)][0] - values[("positional", coarse_rule)][0]))
    return {"value": alpha - delta / slope, "error": (rule_difference + state_effect) / abs(slope),
            "delta": delta, "slope": slope, "rule_difference": rule_difference, "state_effect": state_effect,
            "seconds": time.perf_counter() - started,
            "method": f"count-split 8 ({REFERENCE_LINE_PROBES} probes per line) states at α; Φ with E[M] on outer "
                      "split (16, 14), (20, 18); one Newton step"}


FIELDS_POINT = (0.3, 1.25)
# The last rule, count-split 16 with twice the probes, puts the probes' remaining effect into the spread.
FIELD_RULES = tuple(api.Rule.count_split(n, REFERENCE_LINE_PROBES) for n in (12, 14, 16)) + (
    api.Rule.count_split(16, 2 * REFERENCE_LINE_PROBES),)
FIELD_NAMES = ("q", "V", "m", "theta", "test_error", "free_energy")


def fields_reference(omega: float, alpha: float) -> dict:
    """Both branches' fields at (ω, α) on the count-split rules FIELD_RULES, each started from the previous one's
    fixed point (the first from the split-line-12 state): the value is the last rule's, its error the spread over
    all of them (m, θ as magnitudes)."""
    params = api.Parameters.validated(omega=omega)
    started = time.perf_counter()
    out = {}
    for branch in ("positional", "semantic"):
        state, solutions = carried(branch, alpha, params), []
        for rule in FIELD_RULES:
            state = at_alpha(state, alpha, params, rule)
            solutions.append(state.solution)
        values = {}
        for name in FIELD_NAMES:
            on_rules = [getattr(s, name) for s in solutions]
            if name in ("m", "theta"):
                on_rules = [abs(v) for v in on_rules]
            values[name], values[name + "_error"] = float(on_rules[-1]), float(max(on_rules) - min(on_rules))
        out[branch] = values
        print(f"fields({omega},{alpha}) {branch}: " + ", ".join(f"{k} = {values[k]:.7g} ± {values[k + '_error']:.1g}"
                                                                 for k in FIELD_NAMES), flush=True)
    return {**out, "seconds": time.perf_counter() - started,
            "method": "count-split 16 fixed point with 256 probes per line, carried from the split-line-12 state "
                      "through count-split 12, 14 and 16 with 128 probes; error: the spread over the four"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["alpha_l", "alpha_c", "fields"], default=None)
    parser.add_argument("--omega", type=float, default=None)
    args = parser.parse_args()
    data = load()
    references = data.setdefault("references", {})
    jobs = [("alpha_l", w) for w in ALPHA_L_OMEGAS] + [("alpha_c", w) for w in ALPHA_C_START]
    if args.only in (None, "fields") and "fields(0.3,1.25)" not in data:
        try:
            data["fields(0.3,1.25)"] = fields_reference(*FIELDS_POINT)
            save(data)
        except RuntimeError as exc:
            print(f"fields(0.3,1.25): {exc}", flush=True)
    for name, omega in jobs:
        key = f"{name}({omega})"
        if key in references or (args.only and name != args.only) or (args.omega is not None and omega != args.omega):
            continue
        try:
            references[key] = alpha_l_reference(omega) if name == "alpha_l" else alpha_c_reference(omega)
        except RuntimeError as exc:
            print(f"{key}: {exc}", flush=True)
            continue
        print(f"{key} = {references[key]['value']:.6f} ± {references[key]['error']:.2g}", flush=True)
        save(data)


if __name__ == "__main__":
    main()
