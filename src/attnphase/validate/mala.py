"""A batched sampler on a potential: Metropolis-adjusted Langevin (MALA).

Parameters are a dict of named blocks, each a tensor with a leading chain axis (K, ...): K independent
chains advance together in one batched computation on the chosen device. The potential U(params) -> (K,)
is any differentiable torch callable (the posterior's −log density up to a constant); gradients come from
autograd. Adam on the same kind of potential (its minimum rather than samples) is `validate.training.adam_minimise`.

MALA: the proposal θ' = θ − η∇U + √(2η)ξ with a per-chain, per-block step η = h·preconditioner, accepted
with the Metropolis–Hastings ratio of the preconditioned Langevin proposal, so the chains target exp(−U)
exactly (no step-size bias, unlike plain Langevin / SGLD). The step multipliers h adapt towards a target
acceptance during burn-in only, optionally with a preconditioner refreshed from the current state; after
burn-in the sampler is a fixed Markov kernel and the caller records every `thin` steps.

Random numbers come from `validate.seeds` (a generator on the device or on the CPU), so a seed fixes the run.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from attnphase import progress
from attnphase.validate import seeds

__all__ = ["autograd_potential", "mala_step", "adaptive_mala"]


def autograd_potential(potential: Callable) -> Callable:
    """grad(params) -> (U (K,), {block: ∂U/∂block}) for a potential of a dict of blocks (autograd; the
    chains are independent, so the gradient of U.sum() is each chain's own)."""

    def grad(params: dict):
        leaves = {k: v.detach().requires_grad_(True) for k, v in params.items()}
        U = potential(leaves)
        grads = torch.autograd.grad(U.sum(), list(leaves.values()))
        return U.detach(), dict(zip(leaves.keys(), grads))

    return grad


def _per_chain_sum(blocks: dict, K: int) -> torch.Tensor:
    return sum(v.reshape(K, -1).sum(1) for v in blocks.values())


def mala_step(params: dict, U: torch.Tensor, g: dict, h: torch.Tensor, preconditioner: dict, grad: Callable,
              gen: torch.Generator, device) -> tuple[torch.Tensor, torch.Tensor]:
    """One MALA step of K chains, in place on params and g (the gradients at params): proposal
    θ' = θ − η∇U + √(2η)ξ with η = h·preconditioner per chain and block, accepted with the Metropolis–Hastings
    ratio of the preconditioned Langevin proposal. Returns (U after the step, accepted (K,) bool)."""
    K = U.shape[0]
    eta = {k: h.reshape((K,) + (1,) * (v.dim() - 1)) * preconditioner[k] for k, v in params.items()}
    noise = {k: seeds.randn(v.shape, gen, device, v.dtype) for k, v in params.items()}
    prop = {k: params[k] - eta[k] * g[k] + torch.sqrt(2 * eta[k]) * noise[k] for k in params}
    U_p, g_p = grad(prop)
    # log q(θ | θ') − log q(θ' | θ) for the preconditioned Langevin proposal
    forward = _per_chain_sum({k: noise[k] ** 2 / 2 for k in params}, K)
    backward = _per_chain_sum({k: (params[k] - prop[k] + eta[k] * g_p[k]) ** 2 / (4 * eta[k]) for k in params}, K)
    log_alpha = U - U_p - backward + forward
    accepted = torch.log(seeds.rand(K, gen, device)) < log_alpha
    for k in params:
        mask = accepted.reshape((K,) + (1,) * (params[k].dim() - 1))
        params[k] = torch.where(mask, prop[k].detach(), params[k])
        g[k] = torch.where(mask, g_p[k], g[k])
    return torch.where(accepted, U_p, U), accepted


def adaptive_mala(params: dict, grad: Callable, preconditioner: dict, h: torch.Tensor, gen: torch.Generator, device, *,
                  steps: int, burn_in: int, thin: int, target_acceptance: float, record: Callable,
                  refresh_preconditioner: Callable | None = None) -> np.ndarray:
    """`steps` MALA steps of K chains (`mala_step`), in place on params.

    During burn-in the step multipliers h (K,) adapt towards `target_acceptance` (h ← h·exp(0.05(accepted −
    target))) and, if given, `refresh_preconditioner(params)` replaces the preconditioner every 100 steps;
    afterwards `record(params)` is called every `thin` steps (without gradients). Returns the acceptance rate
    per chain after burn-in.
    """
    U, g = grad(params)
    accepted = torch.zeros(h.shape[0], dtype=torch.float64, device=device)
    with progress.task(f"MALA, {h.shape[0]} chain(s)", total=steps) as bar:
        for step in range(steps):
            if refresh_preconditioner is not None and step < burn_in and step % 100 == 0:
                preconditioner = refresh_preconditioner(params)
                U, g = grad(params)
            U, acc = mala_step(params, U, g, h, preconditioner, grad, gen, device)
            if step < burn_in:
                h = h * torch.exp(0.05 * (acc.double() - target_acceptance))
            else:
                accepted += acc.double()
                if (step - burn_in) % thin == 0:
                    with torch.no_grad():
                        record(params)
            if step % 50 == 49:
                bar.advance("burn-in" if step < burn_in else "sampling", amount=50)
    return (accepted / max(1, steps - burn_in)).cpu().numpy()
