"""Full-batch training of K independent models at once (GD or Adam), with divergence reported per trial.

The parameters of all K trials are one tensor with a leading trial axis, and the objective returns one
value per trial: since the trials are independent, the gradient of the SUM of the objectives is each
trial's own gradient, so one backward pass trains all of them. A trial whose measurements end
non-finite (a too large learning rate, an unstable optimiser) is counted and reported by status, not
left as silent NaNs among the others.

* `train_full_batch(objective, initial, optimizer, lr, steps)`: the training loop (a `FullBatchRun`: the
  parameters, how much the objective still moved over the last tenth of the steps, the parameters before that tenth,
  and whether a step raised the objective).
* `divergence(measurements)`: the status of a run from its per-trial measurements.
* `adam_minimise(potential, params, steps, lr)`: Adam on a potential of a dict of parameter blocks, each with a
  leading run axis (K, ...), in place; optionally each run's iterate of lowest potential (`keep_best`) and the state
  after chosen steps (`record`). It reports no divergence: its caller filters the runs by their potential. On a
  single block its iterates are those of `train_full_batch(optimizer="adam")`, step for step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnphase import progress
from attnphase.params import check_choice, check_int, check_positive
from attnphase.results import Status

__all__ = ["OPTIMIZERS", "FullBatchRun", "train_full_batch", "divergence", "adam_minimise"]

OPTIMIZERS = ("gd", "adam")
# A rise of the objective between two steps above this (relative) counts as one (`FullBatchRun.rose_in_tail`): well
# above float64 rounding, far below the moves of an unsettled run (1e-3 over the tail).
RISE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class FullBatchRun:
    """What `train_full_batch` returns: the trained parameters (a leaf tensor that requires grad), each trial's
    objective (K,) before the last tenth of the steps (`tail_steps` of them, at least one) and at the end, the
    parameters before that tenth (what a caller measures its own quantities on, to judge whether they settled too),
    and whether a step raised a trial's objective: in that last tenth (`rose_in_tail`) or before it
    (`rose_before_tail`)."""

    parameters: torch.Tensor
    objective_before_tail: torch.Tensor
    objective_final: torch.Tensor
    rose_in_tail: bool = False
    parameters_before_tail: torch.Tensor | None = None
    tail_steps: int = 1
    rose_before_tail: bool = False

    def tail_change(self) -> np.ndarray:
        """Each trial's relative change of the objective over the last tenth of the steps (at least one step)."""
        before, final = (t.detach().cpu().numpy() for t in (self.objective_before_tail, self.objective_final))
        with np.errstate(all="ignore"):
            return np.abs(before - final) / np.abs(final)


def train_full_batch(objective: Callable[[torch.Tensor], torch.Tensor], initial: torch.Tensor, *, optimizer: str,
                     lr: float, steps: int) -> FullBatchRun:
    """Minimise objective(parameters) -> (K,) from `initial` (K, ...) by `steps` full-batch steps.

    optimizer: "gd" (torch.optim.SGD, plain gradient descent) or "adam" (torch.optim.Adam) with learning
    rate lr.
    """
    optimizer = check_choice("optimizer", optimizer, OPTIMIZERS)
    lr = check_positive("lr", lr)
    steps = check_int("steps", steps, 1, None)
    parameters = initial.requires_grad_(True)
    step_rule = torch.optim.Adam([parameters], lr=lr) if optimizer == "adam" else torch.optim.SGD([parameters], lr=lr)
    tail_steps = max(1, steps // 10)
    tail_start = steps - tail_steps
    before_tail = parameters_before_tail = previous = None
    # whether a step raised a trial's objective, before the last tenth and in it (a descent whose steps are small
    # enough only lowers it); kept as tensors so that a run on a GPU does not wait on every step
    rose_before = rose = torch.zeros((), dtype=torch.bool, device=parameters.device)
    for step in range(steps):
        step_rule.zero_grad(set_to_none=True)
        # The trials are independent: the gradient of the sum is each trial's own gradient.
        values = objective(parameters)
        if step == tail_start:
            before_tail = values.detach().clone()
            parameters_before_tail = parameters.detach().clone()
        if previous is not None:
            risen = torch.any(values.detach() > previous + RISE_TOLERANCE * previous.abs())
            if step > tail_start:
                rose = rose | risen
            else:
                rose_before = rose_before | risen
        previous = values.detach()
        values.sum().backward()
        step_rule.step()
    with torch.no_grad():
        final = objective(parameters)
    rose = rose | torch.any(final > previous + RISE_TOLERANCE * previous.abs())
    return FullBatchRun(parameters, before_tail, final, bool(rose), parameters_before_tail, tail_steps,
                        bool(rose_before))


def divergence(measurements: Sequence[np.ndarray]) -> tuple[Status, int]:
    """(converged, 0) when every trial's measurements (arrays of one value per trial) are finite, else
    (diverged, the number of trials with a non-finite one)."""
    bad = int(np.sum(~np.all(np.isfinite(np.stack([np.asarray(m, float) for m in measurements])), axis=0)))
    return (Status.DIVERGED if bad else Status.CONVERGED), bad


def adam_minimise(potential: Callable, params: dict, *, steps: int, lr: float, keep_best: bool = False,
                  record: Callable | None = None, record_at: tuple = ()) -> dict:
    """`steps` Adam steps on the summed potential of K independent runs, in place on params (returned).

    keep_best: return, per run, the iterate of lowest potential seen (the potential of every iterate is computed for
    its gradient anyway; the last iterate is evaluated once more) instead of the last one. Adam at a fixed step size
    does not settle once the gradient is small: its normalised steps (lr in every coordinate) carry the state away from
    the minimum again and the potential rises. record(step, state) is called after each step in record_at with the
    state the run would return if it stopped there (the best iterates so far with keep_best)."""
    leaves = [v.requires_grad_(True) for v in params.values()]
    optimiser = torch.optim.Adam(leaves, lr=lr)
    best, best_U = None, None

    def track(U: torch.Tensor) -> None:
        nonlocal best, best_U
        U = U.detach()
        if best is None:
            best, best_U = {k: v.detach().clone() for k, v in params.items()}, U.clone()
            return
        better = U < best_U
        best_U = torch.where(better, U, best_U)
        for k, v in params.items():
            mask = better.reshape((-1,) + (1,) * (v.dim() - 1))
            best[k] = torch.where(mask, v.detach(), best[k])

    def state() -> dict:
        if not keep_best:
            return {k: v.detach() for k, v in params.items()}
        with torch.no_grad():
            track(potential(params))
        return best

    with progress.task("Adam", total=steps) as bar:
        for step in range(steps):
            optimiser.zero_grad()
            U = potential(params)
            if keep_best:
                track(U)
            U.sum().backward()
            optimiser.step()
            if record is not None and step + 1 in record_at:
                record(step + 1, {k: v.clone() for k, v in state().items()})
            if step % 50 == 49:
                bar.advance(amount=50)
    if not keep_best:
        return params
    final = state()
    with torch.no_grad():
        for k, v in params.items():
            v.copy_(final[k])
    return params
