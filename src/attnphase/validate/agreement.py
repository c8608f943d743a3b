"""Same seed, two devices: do the simulators give the same numbers?

Each simulator (the models' own and the validate layer's generic drivers) runs a short, fixed problem on both
devices with its random numbers drawn on the CPU (`seeds.generator(..., source="cpu")`), so both runs consume
identical numbers and differ only by floating-point rounding: the devices' kernels sum in different orders and
use different fused operations. The problems, all in float64:

- each registered model's simulators (`ModelEntry.simulators` in attnphase.models.registry): projected and
  dense SGA, MALA and Adam on the copy task, full-batch GD and Adam on the positional/semantic model.

Tolerance. One rounding error is ε = 2⁻⁵² ≈ 2.2e-16 relative. A simulation of k steps accumulates
O(k) of them and its dynamics can amplify them; these short runs (≤ 400 steps) sit in contracting
regimes (decaying steps, weight decay, basins of a stable minimum), so the deviations stay within a
few hundred ε per step. `RELATIVE_TOLERANCE` = 1e-9 allows 10⁷ ε: far above rounding, far below any
statistical effect (seed-to-seed spreads are ≥ 1e-3 relative), so a device-dependent bug (a wrong
stream, a dropped term, a float32 downcast, which gives ≳ 1e-7) fails it. A Metropolis decision made
differently on the two devices (a uniform within rounding of the acceptance probability) would send
the chains apart; at ~1e-13 relative per decision over a few hundred decisions it has probability
≲ 1e-10, and it would show as a failure, not pass silently.

One device. `other="auto"` on a machine without a GPU is the CPU again: the check is then one of repeatability (the
same seed twice, to the same `RELATIVE_TOLERANCE`, not bit for bit), not of agreement between devices. The
tolerance stays because two runs on one CPU need not sum in the same order: each run chooses its thread count
from the machine's load (`validate.device.choose_threads`), and torch splits its reductions by thread. A
non-determinism below 1e-9 relative therefore passes. `attnphase agreement` says so in its
output (devices_compared 1 and its message) and keeps its exit status (0 when every output agrees), so a pass there
is not read as a CPU/GPU agreement; `--other cuda` demands the GPU and is refused where none is visible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnphase.validate.device import select_device

__all__ = ["RELATIVE_TOLERANCE", "Agreement", "compare_outputs", "registered_simulators", "compare_devices"]

RELATIVE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Agreement:
    """Largest deviation of one simulator's outputs between two devices, relative to their size."""

    simulator: str
    quantity: str
    max_abs_deviation: float
    scale: float  # max |value| on the reference device (at least 1e-300)
    relative_deviation: float
    agrees: bool

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def compare_outputs(simulator: str, quantity: str, reference, other) -> Agreement:
    """How far `other` is from `reference` (two runs of one output, arrays of the same shape), relative to
    the largest |reference|; they agree when both are finite and within `RELATIVE_TOLERANCE`. Arrays of
    different shapes never agree (the deviations are then infinite)."""
    reference, other = np.asarray(reference, dtype=float), np.asarray(other, dtype=float)
    if reference.shape != other.shape:
        return Agreement(simulator, quantity, math.inf, math.inf, math.inf, False)
    deviation = float(np.max(np.abs(reference - other))) if reference.size else 0.0
    scale = max(float(np.max(np.abs(reference))) if reference.size else 0.0, 1e-300)
    relative = deviation / scale
    finite = bool(np.all(np.isfinite(reference)) and np.all(np.isfinite(other)))
    return Agreement(simulator, quantity, deviation, scale, relative, finite and relative <= RELATIVE_TOLERANCE)


def registered_simulators() -> dict:
    """Every registered model's simulators (`ModelEntry.simulators`), by name."""
    from attnphase.models.registry import MODELS, load_attribute

    out = {}
    for entry in MODELS.values():
        if entry.simulators is not None:
            out.update(load_attribute(entry.simulators))
    return out


def compare_devices(reference: str = "cpu", other: str = "auto", seed: int = 0, simulators=None) -> list[Agreement]:
    """Run each simulator on both devices with the same seed; one `Agreement` per output.

    simulators: name -> callable(device, seed) -> dict of arrays (default: every registered model's).
    `other="auto"` is CUDA when a GPU is visible and the CPU otherwise (then the check is one of
    repeatability: the same device twice, within the same RELATIVE_TOLERANCE, see the module docstring).
    """
    reference_device, other_device = select_device(reference), select_device(other)
    results = []
    for name, run in (registered_simulators() if simulators is None else simulators).items():
        first, second = run(reference_device, seed), run(other_device, seed)
        results.extend(compare_outputs(name, quantity, first[quantity], second[quantity]) for quantity in first)
    return results
