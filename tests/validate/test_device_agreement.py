"""Same seed, different devices: the validate layer's simulators agree to floating-point tolerance.

On a machine with a GPU `compare_devices` runs every simulator on the CPU and on CUDA; on a machine
without one it runs them on the CPU twice, where the numbers must then be identical (determinism).
"""

import json

import numpy as np
import torch
from click.testing import CliRunner

from attnphase.cli import main

from attnphase.validate import seeds
from attnphase.models.signal_recovery.network import SIMULATORS, PlantedTokens, ProjectedSampler
from attnphase.models.signal_recovery.parameters import Parameters
from attnphase.validate.agreement import RELATIVE_TOLERANCE, _compare, registered_simulators
from attnphase.validate.sphere_sga import StepSchedule, sphere_sga


def test_every_simulator_agrees_between_devices_with_the_same_seed():
    """Through the command line (`attnphase agreement --json`), as a user runs it."""
    result = CliRunner().invoke(main, ["agreement", "--reference", "cpu", "--other", "auto", "--seed", "5", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    rows = payload["rows"]
    assert payload["agrees"] and payload["relative_tolerance"] == RELATIVE_TOLERANCE
    assert {r["simulator"] for r in rows} == set(registered_simulators())
    failures = [r for r in rows if not r["agrees"]]
    assert not failures, failures
    if not torch.cuda.is_available():  # the CPU against itself: bit-for-bit
        assert max(r["max_abs_deviation"] for r in rows) == 0.0
    # Each compared output is a real measurement, not an empty or all-zero array.
    assert min(r["scale"] for r in rows) > 1e-4


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
    row = _compare("projected SGA", "rho", reference["rho"], run32.rho)
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
