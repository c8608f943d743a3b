"""`attnphase solve|threshold potts`: the mean-field q-state Potts model.

Options come from the declarations in `attnphase.models.potts.parameters`; nothing heavy is imported
until a command runs.
"""

from __future__ import annotations

from attnphase.cli.common import as_option_error, emit, json_option, options_from
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


@threshold.command(MODEL)
@options_from(Parameters, required=("q",))
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
    emit("threshold", MODEL, {"q": q, "J": J, "digits": digits}, result.as_dict(), as_json)
    if result.status == Status.FAILED:
        raise SystemExit(1)
