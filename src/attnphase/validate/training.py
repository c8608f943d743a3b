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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnphase.params import check_choice, check_int, check_positive
from attnphase.results import Status

__all__ = ["OPTIMIZERS", "FullBatchRun", "train_full_batch", "divergence"]

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
