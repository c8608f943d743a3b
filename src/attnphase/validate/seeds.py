"""Explicit seeding for simulations batched over independent trials.

A batch of K trials is one tensor computation; its randomness comes from one `torch.Generator`
seeded by the user's seed, so the same seed on the same device gives the same numbers. `trial_seeds`
derives independent per-trial seeds (numpy's SeedSequence spawning) for code that runs trials one at a
time; no simulator here does (every one is batched), so only its tests call it.

Where the numbers come from is a choice (`RNG_SOURCES`). The CPU generator (Mersenne Twister) and the
CUDA generator (Philox) give different streams for the same seed, so with source "device" a GPU run
and a CPU run agree only in law. With source "cpu" every number is drawn on the CPU and copied to the
simulation's device: the same seed then gives the same numbers on every device, and the results agree
to floating-point tolerance (`attnphase.validate.agreement`), at the price of a host-to-device copy
per draw. The simulators draw through `randn`, `rand`, `randint` and `normal_`, which draw on the
generator's device and move the numbers to the tensor's device.
"""

from __future__ import annotations

import numpy as np
import torch

from attnphase.params import check_choice, check_int

MAX_SEED = 2**63 - 1
RNG_SOURCES = ("device", "cpu")


def seed_after(seed: int) -> int:
    """The seed of a second random stream derived from `seed` (a checked seed): seed + 1 wrapped into [0, MAX_SEED], so
    that MAX_SEED, the top of the range the CLI advertises, does not become a refused seed the user never typed."""
    return (seed + 1) % (MAX_SEED + 1)


def generator(seed: int, device: torch.device | str = "cpu", source: str = "device") -> torch.Generator:
    """A torch generator seeded with `seed` (an integer in [0, 2^63 - 1]) for a simulation on `device`.

    source "device": the generator lives on `device` (fastest); "cpu": it lives on the CPU whatever
    the device, so that the same seed draws the same numbers on every device.
    """
    seed = check_int("seed", seed, 0, MAX_SEED)
    source = check_choice("rng", source, RNG_SOURCES)
    gen = torch.Generator(device=torch.device(device) if source == "device" else torch.device("cpu"))
    gen.manual_seed(seed)
    return gen


def randn(size, generator: torch.Generator, device, dtype=torch.float64) -> torch.Tensor:
    """Standard normal numbers of shape `size` from `generator`, on `device`."""
    return torch.randn(size, generator=generator, device=generator.device, dtype=dtype).to(device)


def rand(size, generator: torch.Generator, device, dtype=torch.float64) -> torch.Tensor:
    """Uniform numbers in [0, 1) of shape `size` from `generator`, on `device`."""
    return torch.rand(size, generator=generator, device=generator.device, dtype=dtype).to(device)


def randint(low: int, high: int, size, generator: torch.Generator, device) -> torch.Tensor:
    """Integers uniform in [low, high) of shape `size` from `generator`, on `device`."""
    return torch.randint(low, high, size, generator=generator, device=generator.device).to(device)


def normal_(out: torch.Tensor, std: float, generator: torch.Generator) -> torch.Tensor:
    """Overwrite `out` with N(0, std²) numbers from `generator` (drawn on its device, copied to out's)."""
    same_device = generator.device.type == out.device.type and (generator.device.index or 0) == (out.device.index or 0)
    if same_device:
        return out.normal_(0.0, std, generator=generator)
    drawn = torch.empty(out.shape, dtype=out.dtype, device=generator.device).normal_(0.0, std, generator=generator)
    return out.copy_(drawn)


def trial_seeds(seed: int, n_trials: int) -> list[int]:
    """`n_trials` statistically independent 63-bit seeds derived from `seed`."""
    seed = check_int("seed", seed, 0, MAX_SEED)
    n_trials = check_int("n_trials", n_trials, 1, None)
    children = np.random.SeedSequence(seed).spawn(n_trials)
    return [int(child.generate_state(2, dtype=np.uint32).view(np.uint64)[0] >> 1) for child in children]
