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
