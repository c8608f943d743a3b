"""Where a simulation runs: the torch device, and how many CPU threads it uses.

Device: `select_device("auto" | "cpu" | "cuda")`.

Threads (`choose_threads`, applied with `using_threads`; the CLI option is
`attnphase.cli.common.threads_option`; numba's compiled loops: `using_numba_threads`). The rule:

* `--threads N` (N >= 1) is used as given.
* Otherwise one thread, unless one step of the simulation does enough arithmetic to pay for a
  parallel region: the caller states the floating-point operations of its largest tensor operation
  per step (`work`), and from `PARALLEL_WORK` (2**24, about 1.7e7) upwards it gets as many threads as
  there are idle cores: the cores this process may use minus the 1-minute load average (rounded),
  at least 1.

Why: torch starts as many intra-op threads as there are cores. Every parallel region costs a
synchronisation of all threads (tens of microseconds), and when other processes compete for the
cores each region also waits for its slowest thread to be scheduled. The simulations here run many
small steps (a d = 100 GD step is about 1e5-1e6 operations), so on a busy 2-core machine two threads
made 200 GD steps 20x slower than one (8.3 s against 0.42 s). A large matrix product, on the other
hand, is split efficiently over idle cores. Simulations on CUDA use one CPU thread: the CPU only
launches kernels (and, with `--rng cpu`, draws random numbers, which torch does on one thread).

torch is imported only inside these functions, so importing this module (e.g. for `DEVICE_CHOICES`
in a command's options) costs nothing.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from attnphase.params import check_choice, check_int

__all__ = [
    "DEVICE_CHOICES",
    "PARALLEL_WORK",
    "select_device",
    "available_cores",
    "idle_cores",
    "choose_threads",
    "using_threads",
    "using_numba_threads",
]

DEVICE_CHOICES = ("auto", "cpu", "cuda")
# Floating-point operations of one tensor operation from which intra-op threads pay off (see above).
PARALLEL_WORK = 2**24


def select_device(requested: str | None = None):
    """The `torch.device` to simulate on.

    `None` or "auto" picks CUDA when a GPU is visible and the CPU otherwise; "cpu" and "cuda" are
    explicit. Asking for "cuda" on a machine without a GPU is a parameter error, not a silent fallback,
    so that a timing or a device-agreement check never runs on the wrong device unnoticed.
    """
    import torch

    choice = check_choice("device", "auto" if requested is None else requested, DEVICE_CHOICES)  # "" is refused
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if choice == "cuda" and not torch.cuda.is_available():
        from attnphase.errors import ParameterError

        raise ParameterError("device", requested, "'cpu' or 'auto' (no CUDA device is visible)")
    return torch.device(choice)


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def idle_cores() -> int:
    """Cores not already busy: available cores minus the 1-minute load average (rounded), at least 1."""
    cores = available_cores()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this OS: assume the machine is idle
        return cores
    return max(1, min(cores, cores - round(load)))


def choose_threads(requested: int | None = None, *, work: float | None = None, device=None) -> int:
    """The number of torch intra-op threads for a simulation (the rule is in this module's docstring).

    requested: the user's `--threads` (None or 0: choose); work: floating-point operations of the
    largest tensor operation of one step (None: unknown, treated as small); device: the simulation's
    torch device or its name (CUDA: one CPU thread).
    """
    if requested:
        return check_int("--threads", requested, 1, 4096)
    if device is not None and str(device).startswith("cuda"):
        return 1
    if work is None or work < PARALLEL_WORK:
        return 1
    return idle_cores()


@contextmanager
def using_threads(n_threads: int | None, *, device=None, name: str = "--threads"):
    """Run the block with `n_threads` torch intra-op threads, then restore the previous count; yields the count.

    None, or a `device` that is not the CPU (CUDA: the CPU only launches kernels), leaves the count alone (and
    yields None). `name`: the parameter a refusal of n_threads (not an integer in [1, 4096]) names, by default
    the CLI option, through which the count usually comes (`choose_threads`).
    """
    import torch

    if n_threads is None or (device is not None and torch.device(device).type != "cpu"):
        yield None
        return
    n_threads = check_int(name, n_threads, 1, 4096)
    saved = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    try:
        yield n_threads
    finally:
        torch.set_num_threads(saved)


@contextmanager
def using_numba_threads(n_threads: int):
    """Run the block with at most `n_threads` numba threads (at least one, at most numba's pool,
    NUMBA_NUM_THREADS), then restore the previous count; yields the count set. numba's count is per thread:
    this sets the calling thread's."""
    import numba

    n_threads = max(1, min(n_threads, numba.config.NUMBA_NUM_THREADS))
    saved = numba.get_num_threads()
    numba.set_num_threads(n_threads)
    try:
        yield n_threads
    finally:
        numba.set_num_threads(saved)
