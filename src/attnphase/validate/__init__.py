"""Finite-size torch simulations held against the theory (CPU or CUDA), batched over seeds.

Modules: `device` (device and thread choice), `seeds` (reproducible random streams, drawn on the CPU or
the device), `ziggurat` (a parallel normal generator), `sphere_sga` (projected stochastic gradient ascent
on the sphere), `training` (full-batch gradient descent and Adam, on one tensor or on a dict of blocks),
`mala` (Metropolis-adjusted Langevin sampling), `compare` (theory against simulation with error bars),
`finite_size` (finite-size gaps and the classification of minima) and `agreement` (the same seed on two
devices).

Every public name of these modules is available here, imported from its module on first use (most of
them import torch). Two functions share their module's name and are reached through the module:
`attnphase.validate.compare.compare` and `attnphase.validate.sphere_sga.sphere_sga`.
"""

from __future__ import annotations

from attnphase.lazy_exports import lazy_exports

_MODULES = {
    "device": ("DEVICE_CHOICES", "PARALLEL_WORK", "select_device", "available_cores", "idle_cores", "choose_threads",
               "using_threads", "using_numba_threads"),
    "seeds": ("MAX_SEED", "RNG_SOURCES", "seed_after", "generator", "randn", "rand", "randint", "normal_", "trial_seeds"),
    "ziggurat": ("fill_normal",),
    "sphere_sga": ("StepSchedule", "SGAResult", "GradientSampler", "initial_queries"),
    "training": ("OPTIMIZERS", "FullBatchRun", "train_full_batch", "divergence", "adam_minimise"),
    "mala": ("autograd_potential", "mala_step", "adaptive_mala"),
    "compare": ("NORMAL_BAND", "student_band", "Comparison", "verdict_of", "verdict_message", "batch_means",
                "batch_means_error"),
    "finite_size": ("Gap", "gap_at_size", "fit_gap_rate", "classify_minimum", "binomial_interval", "MINIMA"),
    "agreement": ("RELATIVE_TOLERANCE", "Agreement", "compare_outputs", "registered_simulators", "compare_devices"),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)
