"""Cross-parameter consistency of the copy-heads commands, and honest `--json` output at the edges.

tests/test_cli_fuzz.py sends bad values to every numeric option one at a time (the option types
reject them). Here: combinations that are valid option by option but inconsistent together (exit 2,
one message naming the parameter, no traceback), and extreme but valid values (the printed JSON is
one object with no NaN or Infinity; a solver that cannot answer says "failed" and exits 1).
"""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from attnphase.cli import main

TALLY: Counter = Counter()


@pytest.fixture(scope="module", autouse=True)
def print_tally():
    yield
    print("\ninputs tried per command (test_robustness_cli):")
    for name, count in sorted(TALLY.items()):
        print(f"  {name:40s} {count:6d}")


def _no_constants(name):
    raise AssertionError(f"JSON output contains {name}")


def run(args, tally_key):
    TALLY[tally_key] += 1
    return CliRunner().invoke(main, [str(a) for a in args])


def assert_usage_error(result, name):
    """Exit 2 with exactly one error line naming `name`, nothing on stdout, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:"), result.stderr
    assert name in lines[0] and "allowed" in lines[0], lines[0]
    assert "Traceback" not in result.output and result.stdout == ""


def parse_json(result) -> dict:
    """Exactly one JSON object on stdout, without NaN / Infinity."""
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stdout
    payload = json.loads(lines[0], parse_constant=_no_constants)
    assert isinstance(payload, dict) and "parameters" in payload and "version" in payload
    return payload


SIM = ["simulate", "copy-heads", "--attention", "softmax", "--device", "cpu", "--steps", "10"]


@pytest.mark.parametrize("args, name", [
    (["scaling", "copy-heads", "--attention", "softmax", "--V", 4, "--L-min", 64, "--L-max", 16], "--L-max"),
    (["scaling", "copy-heads", "--attention", "linear", "--V", 4, "--L-min", 16, "--L-max", 16], "--L-max"),
    (["scaling", "copy-heads", "--attention", "linear", "--V", 4, "--L-min", 16, "--L-max", 32], "--L-max"),
    (["scaling", "copy-heads", "--attention", "softmax", "--V", 4, "--L-min", 2, "--L-max", 3,
      "--boundary", "drop-first"], "--L-max"),
    (SIM + ["--L", 8, "--V", 4, "--P", 64, "--qk-width", 3], "--qk-width"),
    (SIM + ["--L", 8, "--V", 4, "--P", 64, "--qk-width", 7], "--qk-width"),
    (SIM + ["--L", 8, "--V", 4, "--P", 64, "--tokens", "centred"], "tokens"),
    (SIM + ["--L", 8, "--V", 4, "--P", 1e12], "P"),
    (SIM + ["--L", 1000, "--V", 100, "--P", 64], "L"),
    (SIM + ["--L", 128, "--V", 4, "--P", 64, "--trials", 4096], "L"),
    (SIM + ["--L", 64, "--V", 4, "--P", 64, "--trials", 64, "--steps", 10**6], "steps"),
    (["solve", "copy-heads", "--attention", "softmax", "--L", 2, "--V", 4, "--P", 10, "--boundary", "drop-first"], "L"),
    (["threshold", "copy-heads", "--attention", "linear", "--L", 2, "--V", 4, "--boundary", "drop-first"], "L"),
])
def test_inconsistent_combinations_exit_2(args, name):
    assert_usage_error(run(args, " ".join(map(str, args[:2])) + " (inconsistent)"), name)


@given(L_min=st.integers(2, 300), L_max=st.integers(2, 300))
def test_scaling_reversed_or_short_ranges(L_min, L_max):
    """Every L range that cannot carry a fit is refused before any threshold is computed."""
    from attnphase.api.copy_heads import default_L_values

    if L_max >= L_min and len(default_L_values(L_min, L_max)) >= 3:
        L_max = L_min  # keep this test to the refused ranges (valid ones cost seconds each)
    args = ["scaling", "copy-heads", "--attention", "linear", "--V", 4, "--L-min", L_min, "--L-max", L_max]
    assert_usage_error(run(args, "scaling copy-heads (inconsistent)"), "--L-max")


@settings(max_examples=max(1, settings.default.max_examples // 8))  # each example solves the action via the CLI
@given(attention=st.sampled_from(["softmax", "linear"]), L=st.integers(2, 40), V=st.integers(2, 40),
       P=st.floats(-300, 300).map(lambda e: repr(10.0**e)), sigma2=st.floats(-30, 6).map(math.exp),
       tau=st.floats(-30, 30).map(math.exp), beta=st.floats(-30, 30).map(math.exp),
       counts=st.sampled_from(["tokens", "sequences"]), loss=st.sampled_from(["summed", "averaged"]),
       remainder=st.sampled_from(["map", "entropy"]))
def test_solve_json_is_finite_or_failed(attention, L, V, P, sigma2, tau, beta, counts, loss, remainder):
    args = ["solve", "copy-heads", "--attention", attention, "--L", L, "--V", V, "--P", P, "--score-variance", repr(sigma2),
            "--tau", repr(tau), "--beta", repr(beta), "--P-counts", counts, "--loss", loss, "--remainder", remainder, "--json"]
    result = run(args, "solve copy-heads (extreme, --json)")
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    payload = parse_json(result)
    if result.exit_code == 0:
        assert payload["status"] == "converged" and payload["global"]["stable"]
        assert all(v is not None for m in payload["minima"] for v in m.values())
    else:
        assert payload["status"] == "failed" and payload["global"] is None and payload["message"]


@pytest.mark.parametrize("extra", [
    ["--attention", "softmax", "--L", 2, "--V", 4],  # no transition: "none", P_star not computed (null)
    ["--attention", "softmax", "--L", 16, "--V", 4, "--score-variance", 800],  # e^{σ²} overflowed before the fix
    ["--attention", "linear", "--L", 16, "--V", 4, "--score-variance", 1e-8, "--digits", 5],
    ["--attention", "linear", "--L", 8, "--V", 4, "--reduction", "first-attempt", "--digits", 5],
    ["--attention", "softmax", "--L", 16, "--V", 4, "--tau", 1e300],  # the action overflows: not computed
    ["--attention", "linear", "--L", 16, "--V", 4, "--tau", 1e300],
])
def test_threshold_json_edges(extra):
    result = run(["threshold", "copy-heads", *extra, "--json"], "threshold copy-heads (edge, --json)")
    assert result.exit_code == 0, result.output
    payload = parse_json(result)
    assert payload["status"] in ("converged", "limited", "not_found", "failed")
    if payload["status"] == "not_found":
        assert payload["P_star"] is None and payload["order"] == "none"
    elif payload["status"] == "failed":
        assert payload["P_star"] is None and payload["order"] == "undetermined" and payload["message"]
    else:
        assert payload["P_star"] > 0 and payload["error"] is not None


def test_simulate_without_a_theory_fails_before_sampling():
    """τ = 1e300: the reduced action overflows, so there is no theory to compare with. The value is refused before
    any sampling: exit 2, nothing on stdout, one message naming --tau and the values at which the theory is computed
    at these L, V, P (it was a bare RuntimeError with exit 1)."""
    args = SIM + ["--L", 4, "--V", 2, "--P", 8, "--tau", 1e300, "--json"]
    result = run(args, "simulate copy-heads (no theory)")
    assert result.exit_code == 2 and result.stdout == ""
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output
    assert "--tau" in lines[0] and "not computed" in lines[0] and "a value in (0, " in lines[0]


def test_simulate_json_tiny_run():
    args = SIM + ["--L", 4, "--V", 2, "--P", 8, "--trials", 2, "--steps", 40, "--json"]
    result = run(args, "simulate copy-heads (tiny, --json)")
    assert result.exit_code == 0, result.output
    payload = parse_json(result)
    assert payload["status"] in ("converged", "poor_mixing")
    assert all(c["mean"] is not None and c["theory"] is not None for c in payload["comparisons"])
