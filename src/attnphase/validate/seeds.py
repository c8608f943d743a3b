"""Explicit seeding for simulations batched over independent trials.

A batch of K trials is one tensor computation; its randomness comes from one `torch.Generator`
seeded by the user's seed, so the same seed on the same device gives the same numbers. `trial_seeds`
derives independent per-trial seeds (numpy's SeedSequence spawning) for code that runs trials one at a
time, e.g. a reference loop, so that it can be compared with the batched run statistically.
"""

from __future__ import annotations

import numpy as np
import torch

from attnphase.params import check_int

MAX_SEED = 2**63 - 1


def generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    """A torch generator on `device` seeded with `seed` (an integer in [0, 2^63 - 1])."""
    seed = check_int("seed", seed, 0, MAX_SEED)
    gen = torch.Generator(device=torch.device(device))
    gen.manual_seed(seed)
    return gen


def trial_seeds(seed: int, n_trials: int) -> list[int]:
    """`n_trials` statistically independent 63-bit seeds derived from `seed`."""
    seed = check_int("seed", seed, 0, MAX_SEED)
    n_trials = check_int("trials", n_trials, 1, None)
    children = np.random.SeedSequence(seed).spawn(n_trials)
    return [int(child.generate_state(2, dtype=np.uint32).view(np.uint64)[0] >> 1) for child in children]
