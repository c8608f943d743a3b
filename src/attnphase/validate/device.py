"""Choice of the torch device a simulation runs on."""

from __future__ import annotations

import torch

from attnphase.params import check_choice

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def select_device(requested: str | None = None) -> torch.device:
    """The device to simulate on.

    `None` or "auto" picks CUDA when a GPU is visible and the CPU otherwise; "cpu" and "cuda" are
    explicit. Asking for "cuda" on a machine without a GPU is a parameter error, not a silent fallback,
    so that a timing or a device-agreement check never runs on the wrong device unnoticed.
    """
    choice = check_choice("device", requested or "auto", DEVICE_CHOICES)
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if choice == "cuda" and not torch.cuda.is_available():
        from attnphase.errors import ParameterError

        raise ParameterError("device", requested, "'cpu' or 'auto' (no CUDA device is visible)")
    return torch.device(choice)


class single_cpu_thread:
    """Context manager: one torch intra-op thread while it is active, on the CPU only (restored after).

    For simulations on small tensors (a few thousand numbers per operation) the thread pool's
    synchronisation costs more than the arithmetic; when other processes compete for the cores, every
    parallel region also waits for its slowest thread, which made such loops several times slower.
    `enabled=False` (or a CUDA device) leaves the thread count alone.
    """

    def __init__(self, device: torch.device, enabled: bool = True):
        self.active = enabled and torch.device(device).type == "cpu"
        self.saved = None

    def __enter__(self):
        if self.active:
            self.saved = torch.get_num_threads()
            torch.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        if self.active:
            torch.set_num_threads(self.saved)
