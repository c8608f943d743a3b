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
