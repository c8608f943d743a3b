"""Same seed, two devices: do the simulators give the same numbers?

Each simulator of the validate layer runs a short, fixed problem on both devices with its random
numbers drawn on the CPU (`seeds.generator(..., source="cpu")`), so both runs consume identical
numbers and differ only by floating-point rounding: the devices' kernels sum in different orders and
use different fused operations. The problems, all in float64:

- projected SGA (signal recovery, projected sampler) and dense SGA (L×d tokens, torch normals);
- MALA on the copy task (softmax and linear attention, a uniform and a copy start) and Adam on it.

Tolerance. One rounding error is ε = 2⁻⁵² ≈ 2.2e-16 relative. A simulation of k steps accumulates
O(k) of them and its dynamics can amplify them; these short runs (≤ 400 steps) sit in contracting
regimes (decaying steps, weight decay, basins of a stable minimum), so the deviations stay within a
few hundred ε per step. `RELATIVE_TOLERANCE` = 1e-9 allows 10⁷ ε: far above rounding, far below any
statistical effect (seed-to-seed spreads are ≥ 1e-3 relative), so a device-dependent bug (a wrong
stream, a dropped term, a float32 downcast, which gives ≳ 1e-7) fails it. A Metropolis decision made
differently on the two devices (a uniform within rounding of the acceptance probability) would send
the chains apart; at ~1e-13 relative per decision over a few hundred decisions it has probability
≲ 1e-10, and it would show as a failure, not pass silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from attnphase.validate import seeds
from attnphase.validate.device import select_device

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


def _compare(simulator: str, quantity: str, reference: np.ndarray, other: np.ndarray) -> Agreement:
    reference, other = np.asarray(reference, dtype=float), np.asarray(other, dtype=float)
    if reference.shape != other.shape:
        return Agreement(simulator, quantity, math.inf, math.inf, math.inf, False)
    deviation = float(np.max(np.abs(reference - other))) if reference.size else 0.0
    scale = max(float(np.max(np.abs(reference))) if reference.size else 0.0, 1e-300)
    relative = deviation / scale
    return Agreement(simulator, quantity, deviation, scale, relative,
                     bool(np.all(np.isfinite(reference)) and np.all(np.isfinite(other)) and relative <= RELATIVE_TOLERANCE))


def _signal_recovery(device: torch.device, sampler: str, seed: int) -> dict[str, np.ndarray]:
    from attnphase.validate.sga import PlantedTokens, StepSchedule, projected_sga

    if sampler == "projected":
        tokens, trials, steps, batch = PlantedTokens(d=64, L=256, R=32, theta_d=1.0, sigma=1.0, sign_model="C"), 4, 300, 2
    else:
        tokens, trials, steps, batch = PlantedTokens(d=32, L=64, R=8, theta_d=1.0, sigma=1.0, sign_model="B"), 3, 100, 1
    run = projected_sga(tokens, beta=1.0, schedule=StepSchedule(0.5, 10.0, 0.6), steps=steps, trials=trials, batch=batch,
                        generator=seeds.generator(seed, device, "cpu"), device=device, record_every=max(1, steps // 10),
                        dtype=torch.float64, sampler=sampler, normal_source="torch")
    return {"rho": run.rho, "objective": run.objective[1:], "nuisance": run.nuisance[1:]}


def _copy_task(device: torch.device, attention: str, sampler: str, seed: int) -> dict[str, np.ndarray]:
    from attnphase.validate import sgld

    cfg = sgld.CopyTaskConfig(L=8, V=4, attention=attention, beta=1.0 / 8)
    gen = seeds.generator(seed, device, "cpu")
    data_sets = 2 if sampler == "sgld" else 1  # MALA: one per chain; Adam: all seeds on one data set
    train = sgld.statistics([sgld.sample_tokens(25, cfg, gen, device) for _ in range(data_sets)], cfg.V)
    test = sgld.statistics([sgld.sample_tokens(200, cfg, gen, device) for _ in range(data_sets)], cfg.V)
    if sampler == "sgld":
        run = sgld.run_langevin(cfg, train, test, ["uniform", "copy"], steps=400, seed=seed + 1, device=str(device),
                                rng="cpu")
    else:
        run = sgld.run_adam(cfg, train, test, 3, steps=300, seed=seed + 1, device=str(device), rng="cpu")
    return {"G": run.G, "train_loss": run.train_loss, "test_loss": run.test_loss}


SIGNAL_RECOVERY_SIMULATORS = {
    "signal-recovery projected SGA": lambda dev, seed: _signal_recovery(dev, "projected", seed),
    "signal-recovery dense SGA": lambda dev, seed: _signal_recovery(dev, "dense", seed),
}
COPY_HEADS_SIMULATORS = {
    "copy-heads MALA softmax": lambda dev, seed: _copy_task(dev, "softmax", "sgld", seed),
    "copy-heads MALA linear": lambda dev, seed: _copy_task(dev, "linear", "sgld", seed),
    "copy-heads Adam softmax": lambda dev, seed: _copy_task(dev, "softmax", "adam", seed),
}


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
    determinism: the same device twice must give identical numbers).
    """
    reference_device, other_device = select_device(reference), select_device(other)
    results = []
    for name, run in (registered_simulators() if simulators is None else simulators).items():
        first, second = run(reference_device, seed), run(other_device, seed)
        results.extend(_compare(name, quantity, first[quantity], second[quantity]) for quantity in first)
    return results
