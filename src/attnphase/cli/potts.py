"""`attnphase solve|threshold potts`: the mean-field q-state Potts model.

Options come from the declarations in `attnphase.models.potts.parameters`; nothing heavy is imported
until a command runs.
"""

from __future__ import annotations

import click

from attnphase.cli.common import Real, as_option_error, emit, json_option, options_from
from attnphase.cli.groups import solve, threshold
from attnphase.models.potts.parameters import Accuracy, Parameters, Temperature
from attnphase.results import Status

__all__ = ["solve_cmd", "threshold_cmd"]

MODEL = "potts"


@solve.command(MODEL)
@options_from(Parameters, required=("q",))
@options_from(Temperature, required=("beta",))
@json_option
def solve_cmd(q, J, beta, as_json):
    """Minima of the mean-field free energy f(m) at beta: order parameter, free energy, stability, and the global one.

    \b
    Example:
      attnphase solve potts --q 3 --beta 2.8 --json
    """
    from attnphase.models.potts.solve import solve as solve_potts

    result = as_option_error(Temperature, solve_potts, q, beta, J)
    emit("solve", MODEL, {"q": q, "J": J, "beta": beta}, result.as_dict(), as_json)
    if result.status == Status.FAILED:
        raise SystemExit(1)


class _DecimalReal(Real):
    """A real option checked like any other and kept as the text typed, so that a computation to many digits can
    take the decimal number the user wrote (0.3), not the binary64 number nearest to it."""

    def convert(self, value, param, ctx):
        checked = super().convert(value, param, ctx)
        return value.strip() if isinstance(value, str) else checked


def _decimal_coupling_option(func):
    """--J of `threshold`: the declared range and default, kept as typed (`_DecimalReal`)."""
    field = Parameters.declarations()["J"]
    allowed = field.metadata["allowed"]
    kind = _DecimalReal(allowed.low, allowed.high, low_open=allowed.low_open, high_open=allowed.high_open)
    return click.option(
        "--J", "J", type=kind, default=field.default, show_default=True,
        help=f"{field.metadata['help']} beta_c and the spinodals are computed at the decimal number typed (0.3 is "
             f"3/10, not the binary64 number nearest to it). ({allowed.describe()})")(func)


@threshold.command(MODEL)
@options_from(Parameters, ["q"], required=("q",))
@_decimal_coupling_option
@options_from(Accuracy)
@json_option
def threshold_cmd(q, J, digits, as_json):
    """Order of the transition in beta, beta_c to --digits digits with its error, the spinodals and the jump of m.

    \b
    Example:
      attnphase threshold potts --q 3 --digits 30 --json
    """
    from attnphase.models.potts.solve import threshold as potts_threshold

    result = as_option_error(Accuracy, potts_threshold, q, J, digits)
    emit("threshold", MODEL, {"q": q, "J": float(J), "digits": digits}, result.as_dict(), as_json)
    if result.status == Status.FAILED:
        raise SystemExit(1)
