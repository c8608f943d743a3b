"""`attnphase agreement`: the same seed on two devices, every simulator (attnphase.validate.agreement)."""

from __future__ import annotations

import click

from attnphase.cli.common import Int, emit, json_option
from attnphase.validate.device import DEVICE_CHOICES

__all__ = ["agreement"]


@click.command("agreement")
@click.option("--reference", type=click.Choice(DEVICE_CHOICES), default="cpu", show_default=True,
              help="Device of the reference runs.")
@click.option("--other", type=click.Choice(DEVICE_CHOICES), default="auto", show_default=True,
              help="Device compared with the reference (auto: CUDA when a GPU is visible, else the CPU, which then "
                   "is compared with itself).")
@click.option("--seed", type=Int(0, 2**63 - 1), default=0, show_default=True)
@json_option
def agreement(reference, other, seed, as_json):
    """Run every simulator on two devices with CPU-drawn random numbers; exit 1 if any output disagrees.

    Where both options name the same device (the default on a machine without a GPU) one device is compared with
    itself: a check of determinism, not of agreement between devices. devices_compared (1 or 2) and the message say
    which was run; the exit status is the same for both (0 every output agrees, 1 one does not, 2 a bad option), so
    a CI job that must test a GPU asks for --other cuda, which is refused where no GPU is visible.

    \b
    Example:
      attnphase agreement --other cuda --json
    """
    from attnphase.errors import ParameterError
    from attnphase.validate.agreement import RELATIVE_TOLERANCE, compare_devices
    from attnphase.validate.device import select_device

    devices = {}
    for option, requested in (("--reference", reference), ("--other", other)):
        try:  # cuda without a GPU: refused naming the option that asked for it, before any simulator runs
            devices[option] = select_device(requested)
        except ParameterError as exc:  # the value and its allowed range, under the option's name
            raise ParameterError(option, requested, exc.allowed) from None
    rows = compare_devices(reference, other, seed)
    first, second = str(devices["--reference"]), str(devices["--other"])
    compared = 1 if first == second else 2
    message = (f"one device only: {first} against itself, a check of determinism (the same seed gives the same "
               "numbers), not of agreement between devices" if compared == 1 else f"{first} against {second}")
    parameters = {"reference": first, "other": second, "seed": seed}
    agrees = all(r.agrees for r in rows)
    emit("agreement", "all", parameters, {"devices_compared": compared, "message": message,
                                           "relative_tolerance": RELATIVE_TOLERANCE, "agrees": agrees,
                                           "rows": [r.as_dict() for r in rows]}, as_json)
    if not agrees:
        raise SystemExit(1)
