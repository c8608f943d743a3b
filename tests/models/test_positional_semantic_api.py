"""The positional-semantic Python API at its edges: every argument is checked where it enters (a ParameterError
naming the API's parameter, never a TypeError from deep inside or a run that never ends), and every result's
`as_dict()` is JSON-safe and carries `success`, as `Result.as_dict` promises."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnphase.api import positional_semantic as ps
from attnphase.errors import ParameterError

# A simulation that takes a fraction of a second: the checks below are about its arguments.
TINY_RUN = dict(omega=0.3, alpha=1.5, d=20, trials=2, steps=5, test_samples=10, device="cpu", num_threads=1)
# The cheapest solve the docs allow: a tensor-only ladder.
TENSOR_RULES = (6, 8, 10)


def raises_named(name: str, call, *args, **kwargs) -> ParameterError:
    with pytest.raises(ParameterError) as caught:
        call(*args, **kwargs)
    assert caught.value.name == name, caught.value
    return caught.value


# -- simulate: every argument checked before the run ----------------------------------------------------------------


@pytest.mark.timeout(60)  # a test_chunk of 0 used to loop forever over the test samples
@pytest.mark.parametrize("test_chunk", [0, -5, "a", 1.5, None])
def test_simulate_refuses_a_test_chunk_that_is_not_a_positive_integer(test_chunk):
    raises_named("test_chunk", ps.simulate, **TINY_RUN, test_chunk=test_chunk)


@pytest.mark.parametrize("dtype", ["int64", torch.int64, torch.float16, None, np.float64])
def test_simulate_refuses_a_dtype_it_does_not_run_in(dtype):
    raises_named("dtype", ps.simulate, **TINY_RUN, dtype=dtype)


def test_simulate_takes_a_dtype_by_name():
    """'float64' used to reach torch as a string (TypeError); by name it is the same run as the torch dtype."""
    by_name = ps.simulate(**TINY_RUN, dtype="float64")
    assert np.array_equal(by_name.test_error, ps.simulate(**TINY_RUN, dtype=torch.float64).test_error)
    assert ps.simulate(**TINY_RUN, dtype="float32").q.dtype == np.float32


@pytest.mark.parametrize("threads", [0, -3, 1.5, "two", 5000])
def test_simulate_names_num_threads_not_the_cli_option(threads):
    """0 used to be accepted (read as "choose"), −3 refused as "--threads", an option the API does not have."""
    raises_named("num_threads", ps.simulate, **{**TINY_RUN, "num_threads": threads})


@pytest.mark.parametrize("name, value", [("rng", "gpu"), ("rng", None), ("device", "tpu"), ("device", 3)])
def test_simulate_refuses_a_bad_rng_or_device(name, value):
    raises_named(name, ps.simulate, **{**TINY_RUN, name: value})


# -- solve, threshold, phase_curve, spinodals: containers and flags -------------------------------------------------


@pytest.mark.parametrize("branches", [None, 5, "semantic"])
def test_solve_refuses_branches_that_are_not_a_sequence_of_names(branches):
    """None and 5 used to fail iterating (TypeError); a single name was read letter by letter."""
    raises_named("branches", ps.solve, 0.3, 1.25, branches=branches, rules=TENSOR_RULES)


@pytest.mark.parametrize("rules", [None, 5, 2.5])
def test_solve_refuses_rules_that_are_neither_auto_nor_a_sequence(rules):
    raises_named("rules", ps.solve, 0.3, 1.25, rules=rules)


@pytest.mark.parametrize("stability", ["no", 0, 1, None])
def test_solve_refuses_a_stability_flag_that_is_not_a_bool(stability):
    """'no' used to be taken by its truth value: the stability was computed all the same."""
    raises_named("stability", ps.solve, 0.3, 1.25, stability=stability, rules=TENSOR_RULES)


@pytest.mark.parametrize("which", [None, 1, "alpha_c"])
def test_threshold_and_phase_curve_refuse_which_that_is_not_a_sequence(which):
    raises_named("which", ps.threshold, 0.3, which=which)
    raises_named("which", ps.phase_curve, [0.3], which=which)


def test_threshold_refuses_rules_that_are_not_a_sequence():
    raises_named("rules", ps.threshold, 0.3, rules=None)


def test_spinodals_refuse_branches_that_are_not_a_sequence():
    raises_named("branches", ps.spinodals, 0.3, branches=None)


# -- the plots --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("curve", [None, 3, "rows", [1, 2]])
def test_plot_phase_diagram_refuses_what_is_not_a_curve(curve):
    raises_named("curve", ps.plot_phase_diagram, curve)


@pytest.mark.parametrize("results", [None, 3, [None], [{"alpha": 1.0}]])
def test_plot_order_parameters_refuses_what_is_not_solve_results(results):
    raises_named("results", ps.plot_order_parameters, results)
