"""Same seed, different devices: the validate layer's simulators agree to floating-point tolerance.

`attnphase agreement` runs every registered simulator on two devices with CPU-drawn random numbers.
The CPU-against-CUDA check needs a GPU and is skipped, with that reason, on a machine without one; the
CPU-against-CPU run is a separate test of determinism (the same seed twice must give identical bits).
"""

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from attnphase.cli import main

from attnphase.validate import seeds
from attnphase.models.signal_recovery.network import SIMULATORS, PlantedTokens, ProjectedSampler
from attnphase.models.signal_recovery.parameters import Parameters
from attnphase.validate.agreement import RELATIVE_TOLERANCE, compare_outputs, registered_simulators
from attnphase.validate.sphere_sga import StepSchedule, sphere_sga


def agreement_payload(reference: str, other: str, seed: int) -> dict:
    """`attnphase agreement --json` as a user runs it; checks that every simulator agrees."""
    result = CliRunner().invoke(main, ["agreement", "--reference", reference, "--other", other, "--seed", str(seed),
                                       "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    rows = payload["rows"]
    assert payload["relative_tolerance"] == RELATIVE_TOLERANCE
    assert {r["simulator"] for r in rows} == set(registered_simulators())
    # Each compared output is a real measurement, not an empty or all-zero array.
    assert min(r["scale"] for r in rows) > 1e-4
    failures = [r for r in rows if not r["agrees"]]
    assert payload["agrees"] and not failures, failures
    return payload


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine: CPU-vs-CUDA agreement "
                                                           "needs a GPU (run benchmarks/gpu_checks.sh on one)")
def test_every_simulator_agrees_between_cpu_and_cuda_with_the_same_seed():
    payload = agreement_payload("cpu", "cuda", seed=5)
    assert payload["parameters"]["reference"] == "cpu" and payload["parameters"]["other"].startswith("cuda")
    assert payload["devices_compared"] == 2 and payload["message"].startswith("cpu against cuda")


def test_every_simulator_is_deterministic_on_the_cpu():
    """The same seed twice on the CPU: every output identical to the bit. The output says that one device was
    compared with itself (it read like a CPU/GPU agreement: agrees true, exit 0, nothing else); the exit status is
    still 0."""
    payload = agreement_payload("cpu", "cpu", seed=5)
    assert payload["parameters"]["other"] == "cpu"
    assert max(r["max_abs_deviation"] for r in payload["rows"]) == 0.0
    assert payload["devices_compared"] == 1
    assert payload["message"] == ("one device only: cpu against itself, a check of determinism (the same seed gives "
                                  "the same numbers), not of agreement between devices")


def test_agreement_command_rejects_an_unknown_device():
    result = CliRunner().invoke(main, ["agreement", "--other", "tpu"])
    assert result.exit_code == 2 and "--other" in result.output and "cuda" in result.output


def test_the_tolerance_separates_rounding_from_a_precision_bug():
    """The same trajectory with float32 tokens deviates from the float64 one far beyond the tolerance,
    so a device path that silently downcast would fail the agreement check."""
    device = torch.device("cpu")
    reference = SIMULATORS["signal-recovery projected SGA"](device, 2)
    tokens = PlantedTokens(Parameters.validated(d=64, L=256, R=32, theta=1.0, sign_model="C"))
    generator = seeds.generator(2, device, "cpu")
    run32 = sphere_sga(ProjectedSampler(tokens, generator), d=64, schedule=StepSchedule(0.5, 10.0, 0.6), steps=300,
                       trials=4, batch=2, generator=generator, device=device, record_every=30, dtype=torch.float32)
    row = compare_outputs("projected SGA", "rho", reference["rho"], run32.rho)
    assert not row.agrees
    assert row.relative_deviation > 100 * RELATIVE_TOLERANCE


def test_cpu_source_on_the_cpu_is_the_device_source():
    """On the CPU both sources are the same Mersenne Twister stream: "cpu" changes nothing there."""
    for draw in (lambda g: seeds.randn((3, 4), g, "cpu"), lambda g: seeds.rand(5, g, "cpu"),
                 lambda g: seeds.randint(0, 7, (6,), g, "cpu"),
                 lambda g: seeds.normal_(torch.empty(8, dtype=torch.float32), 2.0, g)):
        a = draw(seeds.generator(11, "cpu", "device"))
        b = draw(seeds.generator(11, "cpu", "cpu"))
        assert torch.equal(a, b)


def test_numbers_are_drawn_on_the_generator_device_and_land_on_the_tensor_device():
    """A CPU generator serving a tensor elsewhere: the numbers equal the CPU draw (checked on CUDA when
    present; on the CPU the target is the CPU itself)."""
    target = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    out = torch.empty(1000, dtype=torch.float64, device=target)
    seeds.normal_(out, 0.5, seeds.generator(3, target, "cpu"))
    expected = torch.empty(1000, dtype=torch.float64).normal_(0.0, 0.5, generator=seeds.generator(3, "cpu"))
    assert out.device.type == target.type
    np.testing.assert_array_equal(out.cpu().numpy(), expected.numpy())


def test_compare_outputs_measures_the_deviation_relative_to_the_reference():
    close = compare_outputs("s", "x", [1.0, -2.0], [1.0, -2.0 * (1 + 1e-12)])
    assert close.agrees and close.scale == 2.0
    assert abs(close.relative_deviation - 1e-12) < 1e-15
    far = compare_outputs("s", "x", [1.0, -2.0], [1.0, -2.0 * (1 + 10 * RELATIVE_TOLERANCE)])
    assert not far.agrees and far.relative_deviation > RELATIVE_TOLERANCE
    assert not compare_outputs("s", "x", [1.0, 2.0], [1.0, 2.0, 3.0]).agrees  # shapes differ
    assert not compare_outputs("s", "x", [1.0, float("nan")], [1.0, float("nan")]).agrees
