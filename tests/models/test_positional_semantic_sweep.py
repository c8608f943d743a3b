"""The sweep point function of the positional-semantic model is the solver, flattened."""

import math

from attnphase.sweep import resolve_point


def test_sweep_point_is_registered_and_flattens_solve(monkeypatch):
    """The registered point function returns `solve`'s fields and errors per branch (solve replaced here by a
    cheap tensor-only ladder: the flattening is what is tested), and says which branch has the lower
    training loss only when the Φ gap exceeds the two errors."""
    from attnphase.models.positional_semantic import point as point_module

    real_solve = point_module.solve
    monkeypatch.setattr(point_module, "solve", lambda *args, **kwargs: real_solve(*args, **{**kwargs, "rules": (4, 5)}))
    _, point_function = resolve_point("positional-semantic")
    point = point_function(omega=0.3, alpha=1.75)
    reference = real_solve(0.3, 1.75, branches=("positional", "semantic"), stability=False, rules=(4, 5))
    by_name = {b.branch: b for b in reference.branches}
    assert point["semantic_free_energy"] == by_name["semantic"].free_energy
    assert point["positional_test_error"] == by_name["positional"].test_error
    assert point["positional_V_error"] == by_name["positional"].errors["V"]
    assert point["linear_baseline_test_error"] == reference.linear_baseline_test_error
    assert point["status"] == reference.status and point["positional_status"] == by_name["positional"].status
    gap = by_name["semantic"].free_energy - by_name["positional"].free_energy
    errors = by_name["semantic"].errors["free_energy"] + by_name["positional"].errors["free_energy"]
    if abs(gap) > errors:
        assert point["semantic_is_global"] == float(gap > 0)
    else:
        assert math.isnan(point["semantic_is_global"])


def test_a_sweep_point_names_the_global_branch_as_solve_does_where_the_other_branch_is_shown_absent(monkeypatch):
    """A sweep point decided the global branch only between two found branches: where one was shown absent it stored
    NaN while `solve` named the other global (an audit met it at ω = 0.3, α = 0.5, about 50 s to solve). At ω = 1 the
    teacher does not depend on Q*, so the semantic branch cannot exist (not_found) and the positional one is global
    by necessity: the point now says 0.0, solve's own decision. The real solver on its default ladder, followed on
    the tensor rule of 6 nodes instead of 10 (rules.FOLLOW_NODES; about 3 s instead of 6): the following rule only
    starts the ladder, and the statuses and the decision are those from 10 nodes (measured: q = 0.0384496 ± 1.1e-5
    from either)."""
    import attnphase.models.positional_semantic.rules as rule_module

    monkeypatch.setitem(rule_module.FOLLOW_NODES, 2, 6)
    _, point_function = resolve_point("positional-semantic")
    point = point_function(omega=1.0, alpha=1.25)
    assert (point["positional_status"], point["semantic_status"]) == ("converged", "not_found")
    assert point["semantic_is_global"] == 0.0


def test_a_sweep_point_whose_branch_was_not_solved_fails_with_the_reason(monkeypatch):
    """An audit found a sweep storing a failed solve (σ = 0.7, ω = 0.3, α = 0.3: positional failed) as a computed
    point without branch columns, never retried. Now such a point raises with the solve's message (the sweep
    records it as failed and computes it again on its next run)."""
    import pytest

    from attnphase.models.positional_semantic import point as point_module
    from attnphase.models.positional_semantic.results import MissingBranch, SolveResult
    from attnphase.results import Status

    failed = SolveResult((), None, 0.002, 3e-3, Status.FAILED, "positional: failed",
                         (MissingBranch("positional", Status.FAILED, "positional: no solution at its anchor"),))
    monkeypatch.setattr(point_module, "solve", lambda *args, **kwargs: failed)
    _, point_function = resolve_point("positional-semantic")
    with pytest.raises(RuntimeError, match="no solution at its anchor"):
        point_function(omega=0.3, alpha=0.3, sigma=0.7)


def test_a_sweep_refuses_an_L_its_points_cannot_take_naming_L(tmp_path):
    """A sweep point takes the default A, which is 2 × 2: `--set L=3` was refused naming A, which a sweep cannot set.
    Now L itself is named, before any point runs, and so does the point function called alone."""
    import pytest
    from click.testing import CliRunner

    from attnphase.cli import main
    from attnphase.errors import ParameterError

    out = CliRunner().invoke(main, ["sweep", "positional-semantic", "--grid", "alpha=1,2", "--set", "omega=0.3",
                                    "--set", "L=3", "--store", str(tmp_path / "s.sqlite")])
    assert out.exit_code == 2 and "invalid value for --set L: 3 (allowed: 2 " in out.output, out.output
    _, point_function = resolve_point("positional-semantic")
    with pytest.raises(ParameterError, match="for L: 3"):
        point_function(omega=0.3, alpha=1.0, L=3)
