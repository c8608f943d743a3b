"""validate.training.adam_minimise: Adam on a potential of a dict of blocks, against a closed-form minimum and
against the other Adam driver of the module, train_full_batch(optimizer="adam")."""

from __future__ import annotations

import torch

from attnphase.validate.device import using_threads
from attnphase.validate.training import adam_minimise, train_full_batch

MU = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
SD_X, SD_Y = 0.3, torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)


def _gaussian(params):
    """−log density of independent normals: x ~ N(0, 0.3²) (2 components), y ~ N(μ, diag(1, 4, 0.25))."""
    return (params["x"] ** 2).sum(-1) / (2 * SD_X**2) + (((params["y"] - MU) / SD_Y) ** 2).sum(-1) / 2


def test_adam_reaches_the_minimum_of_a_quadratic():
    K = 5
    params = {"x": torch.randn(K, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0)),
              "y": torch.zeros(K, 3, dtype=torch.float64)}
    with using_threads(1):
        out = adam_minimise(_gaussian, params, steps=300, lr=0.1)
    assert torch.allclose(out["x"].detach(), torch.zeros(K, 2, dtype=torch.float64), atol=1e-5)
    assert torch.allclose(out["y"].detach(), MU.expand(K, 3), atol=1e-5)


def test_the_two_adam_drivers_take_the_same_steps():
    """Adam updates each coordinate on its own, so blocks {x (K, 2), y (K, 3)} in adam_minimise and their
    concatenation (K, 5) in train_full_batch(optimizer="adam") follow the same iterates, bit for bit, on a
    non-quadratic potential (where a difference in the step rule, e.g. its ε or bias correction, would show)."""
    K = 4
    generator = torch.Generator().manual_seed(1)
    start = torch.randn(K, 5, dtype=torch.float64, generator=generator)
    coupling = torch.randn(5, 5, dtype=torch.float64, generator=generator)
    coupling = coupling @ coupling.T + torch.eye(5, dtype=torch.float64)

    def potential(z):
        return 0.5 * torch.einsum("ki,ij,kj->k", z, coupling, z) + torch.sin(3 * z).sum(-1)

    with using_threads(1):
        for steps in (1, 7, 200):
            blocks = adam_minimise(lambda p: potential(torch.cat([p["x"], p["y"]], -1)),
                                   {"x": start[:, :2].clone(), "y": start[:, 2:].clone()}, steps=steps, lr=0.1)
            run = train_full_batch(potential, start.clone(), optimizer="adam", lr=0.1, steps=steps)
            assert torch.equal(torch.cat([blocks["x"], blocks["y"]], -1).detach(), run.parameters.detach())
            if steps > 1:  # the runs moved, so the comparison is not of two copies of the start
                assert not torch.allclose(run.parameters.detach(), start)
