"""The sweep point function of the positional-semantic model is the solver, flattened."""

from attnphase.api import positional_semantic as api
from attnphase.sweep import resolve_point


def test_sweep_point_is_registered_and_flattens_solve():
    _, point_function = resolve_point("positional-semantic")
    point = point_function(omega=0.3, alpha=1.75, nodes_per_dim=6)
    reference = api.solve(0.3, 1.75, nodes_per_dim=6, branches=("positional", "semantic"), stability=False)
    by_name = {b.branch: b for b in reference.branches}
    assert point["semantic_free_energy"] == by_name["semantic"].free_energy
    assert point["positional_test_error"] == by_name["positional"].test_error
    assert point["linear_baseline_error"] == reference.linear_baseline_error
    # Global minimum = larger free energy (spec §4).
    semantic_wins = by_name["semantic"].free_energy > by_name["positional"].free_energy
    assert point["semantic_is_global"] == float(semantic_wins)
