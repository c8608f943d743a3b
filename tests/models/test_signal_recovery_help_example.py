"""`attnphase simulate signal-recovery --help`: its example does what its text says on the default settings."""

from __future__ import annotations

import json
import re
import shlex

from click.testing import CliRunner

from attnphase.cli import main


def test_the_help_example_recovers_xi_with_status_converged_and_the_stated_numbers():
    """The example's own command (read from the help), run here: status converged and success (the planned schedule
    reaches the default target; 2000 steps did not, and the example read 'limited'), the mean final |ρ| within its
    standard error plus the printed rounding of the stated value, and the prediction within the errors of both."""
    runner = CliRunner()
    text = runner.invoke(main, ["simulate", "signal-recovery", "--help"]).output
    said = re.search(r"mean final \|rho\| ([\d.]+) \+- ([\d.]+) against the predicted ([\d.]+), status (\w+)", text)
    assert said, text
    (command,) = [line.strip() for line in text.splitlines() if line.strip().startswith("attnphase simulate")]
    out = runner.invoke(main, shlex.split(command)[1:] + ["--json"])
    assert out.exit_code == 0, out.output
    run = json.loads(out.stdout)
    assert run["status"] == said.group(4) == "converged" and run["success"] is True, run["message"]
    assert "target 0.996" in run["message"] and run["plan"]["status"] == "converged"
    half_digit = 0.5 * 10.0 ** -len(said.group(1).partition(".")[2])
    assert abs(run["alignment_mean"] - float(said.group(1))) <= run["alignment_error"] + half_digit
    assert abs(run["predicted_alignment"] - float(said.group(3))) <= run["predicted_alignment_error"] + half_digit
    combined = (run["alignment_error"] ** 2 + run["predicted_alignment_error"] ** 2) ** 0.5
    assert abs(run["alignment_mean"] - run["predicted_alignment"]) <= 3 * combined  # "as predicted"
    # and the run's own verdict says so (the page's row: prediction_agrees true)
    assert run["prediction_agrees"] is True and abs(run["prediction_z"]) <= 3
    assert "the prediction agrees with the run" in run["message"]
