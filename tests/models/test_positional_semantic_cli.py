"""`attnphase solve|threshold|simulate positional-semantic`: JSON contract, deprecated options, exit status 2
on bad input. Numbers are checked against independent references elsewhere (test_positional_semantic_ladder.py);
here only what the CLI itself promises."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import attnphase.cli.positional_semantic  # noqa: F401  (registers the commands on the groups)
from attnphase.cli import main


def run(args):
    return CliRunner().invoke(main, args)


@pytest.mark.parametrize(
    "args",
    [
        ["solve", "positional-semantic", "--omega", "1.5", "--alpha", "1"],
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "0"],
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--sigma", "0"],
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--L", "1"],
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--A", "0.5,0.4,0.4,0.6"],
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--A", "0.6,0.4"],
        ["solve", "positional-semantic", "--omega", "nan", "--alpha", "1"],
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--branches", "sideways"],
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--branches", ""],  # no branch
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--branches", "positional,positional"],
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1e300"],  # above MAX_ALPHA: minutes to hours
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--tol", "0"],
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--tol", "2"],
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--check-nodes", "8"],  # without --nodes
        ["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--L", "3"],  # --A required for L = 3
        ["threshold", "positional-semantic", "--omega", "-0.1"],
        ["threshold", "positional-semantic"],  # neither --omega nor --omega-grid
        ["threshold", "positional-semantic", "--omega", "0.3", "--omega-grid", "0:0.4:3"],  # both
        ["threshold", "positional-semantic", "--omega-grid", "0:2:3"],  # ω above 1
        ["threshold", "positional-semantic", "--omega-grid", "0:0.4"],  # no count
        ["threshold", "positional-semantic", "--omega", "0.3", "--tol", "0"],
        ["threshold", "positional-semantic", "--omega", "0.3", "--alpha-min", "2", "--alpha-max", "1"],
        ["threshold", "positional-semantic", "--omega", "0.3", "--alpha-max", "1e300"],
        ["threshold", "positional-semantic", "--omega", "0.3", "--which", "alpha_x"],
        ["threshold", "positional-semantic", "--omega", "0.3", "--checkpoint-dir", "/dev/null/kept"],  # not writable
        ["threshold", "positional-semantic", "--omega-grid", "0.4", "--checkpoint-dir", "/dev/null/kept"],
        ["simulate", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--init", "zero"],
        ["simulate", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--trials", "0"],
        ["simulate", "positional-semantic", "--omega", "0.3", "--alpha", "1e-300"],  # round(α·d) = 0 samples
        ["simulate", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--threads", "0"],
    ],
)
def test_bad_values_exit_2(args):
    result = run(args)
    assert result.exit_code == 2, result.output


@pytest.mark.parametrize("grid", ["omega=0.3,0.4", "0:0.45:1", "a:b:c"])
def test_a_bad_omega_grid_is_explained_in_the_options_own_form(grid):
    """--omega-grid takes START:STOP:NUM or V1,V2,... (no NAME=, which `sweep --grid` has): its refusals say so."""
    result = run(["threshold", "positional-semantic", "--omega-grid", grid])
    assert result.exit_code == 2 and "--omega-grid" in result.output
    assert "the form is START:STOP:NUM" in result.output and "NAME=" not in result.output


def test_threshold_without_or_with_both_omega_options_says_which_to_give():
    """Neither --omega nor --omega-grid read "invalid value for --omega: None": now as click's own missing option."""
    neither = run(["threshold", "positional-semantic"])
    assert neither.exit_code == 2 and "None" not in neither.output
    assert "Missing option '--omega' (one ω), or '--omega-grid'" in neither.output
    both = run(["threshold", "positional-semantic", "--omega", "0.3", "--omega-grid", "0.3,0.4"])
    assert both.exit_code == 2 and "--omega-grid was given too" in both.output


def test_seeds_is_still_accepted_with_a_deprecation_message():
    """--seeds was renamed --trials; the old spelling works for one release and says so on stderr, while
    stdout stays one JSON object (with the option's new name)."""
    args = ["simulate", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--d", "8", "--steps", "1",
            "--test-samples", "4", "--device", "cpu", "--no-theory", "--json"]
    old, new = run(args + ["--seeds", "2"]), run(args + ["--trials", "2"])
    assert old.exit_code == 0 and new.exit_code == 0
    assert "--seeds is deprecated" in old.stderr and "--trials" in old.stderr and not new.stderr.strip()
    assert json.loads(old.stdout) == json.loads(new.stdout)
    assert json.loads(new.stdout)["parameters"]["trials"] == 2 and len(json.loads(new.stdout)["m"]) == 2


def test_simulate_chooses_its_threads_and_reports_them():
    """--threads is used as given; without it a run this small (one step ~1e4 operations) gets one thread
    (validate.device.choose_threads), and the JSON says which count ran."""
    args = ["simulate", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--d", "8", "--steps", "1",
            "--test-samples", "4", "--device", "cpu", "--no-theory", "--trials", "1", "--json"]
    chosen, given = run(args), run(args + ["--threads", "2"])
    assert json.loads(chosen.stdout)["parameters"]["threads"] == 1
    assert json.loads(given.stdout)["parameters"]["threads"] == 2


def test_solve_json_contract_with_the_deprecated_tensor_rules():
    """The deprecated --nodes/--check-nodes still run (tensor rules only), say so on stderr and in the status
    (limited: their errors are tensor-rule differences, not verified), and the JSON has the contract's fields:
    every field with its _error, θ = 0 exactly on the positional branch (an invariant set), ε_t = −Φ, and
    the spec's linear baseline ε_g^lin = 0.00402323 (1 − ω)² (spec §7, 6 digits)."""
    result = run(["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1.25", "--nodes", "4",
                  "--check-nodes", "5", "--branches", "positional", "--json"])
    assert result.exit_code == 0, result.output
    assert "deprecated" in result.stderr
    payload = json.loads(result.stdout)
    assert abs(payload["linear_baseline_test_error"] - 0.00402323 * 0.49) <= 0.5e-8 * 0.49
    assert payload["status"] == "limited" and payload["parameters"]["rules"] == [4, 5]
    (branch,) = payload["branches"]
    fields = ("q", "m", "theta", "V", "test_error", "train_loss", "free_energy")
    assert set(branch) >= {"branch", "stable", "rule", "checked_on", *fields, *(f + "_error" for f in fields)}
    assert branch["theta"] == 0.0 and branch["theta_error"] == 0.0 and abs(branch["m"]) > 0.1
    assert branch["train_loss"] == -branch["free_energy"]
    assert "tensor rules only" in branch["message"]


def test_threshold_accepts_the_deprecated_scan_and_refine_and_ignores_them():
    args = ["threshold", "positional-semantic", "--omega", "0.3", "--scan", "4", "--refine", "both",
            "--omega-grid", "0:0.1:2"]
    result = run(args)  # --omega and --omega-grid together: the deprecation messages come first, then exit 2
    assert result.exit_code == 2 and "--scan is deprecated and ignored" in result.stderr
    assert "--refine is deprecated and ignored" in result.stderr


def test_simulate_on_cuda_without_a_gpu_names_the_option():
    """`--device cuda` on a machine without CUDA is refused naming --device, as every model's simulate does (it said
    "device")."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("needs a machine without a CUDA device")
    result = run(["simulate", "positional-semantic", "--omega", "0.3", "--alpha", "1.25", "--d", "40", "--device",
                  "cuda"])
    assert result.exit_code == 2 and "invalid value for --device: 'cuda'" in result.output, result.output


def test_thresholds_kept_by_another_code_version_are_computed_again_and_said_so(tmp_path, monkeypatch):
    """A threshold kept by another code version (any commit changes it) is computed again, never mixed in; that run
    said nothing, so a user could not tell a resumed run from one that started over (audit ps15). Now one stderr line
    says how many were computed again, and where; the run of the same version reads back and says that instead."""
    import attnphase.resume as resume

    command = ["threshold", "positional-semantic", "--omega", "0.3", "--nodes", "4", "--check-nodes", "6", "--which",
               "alpha_c", "--checkpoint-dir", str(tmp_path), "--json"]
    first = run(command)
    assert first.exit_code == 0, first.output
    assert "another code version" not in first.stderr
    monkeypatch.setattr(resume, "code_version", lambda: "0.1.0+src.otherversion")
    again = run(command)
    assert again.exit_code == 0, again.output
    assert (f"attnphase: 1 result(s) kept in {tmp_path} by another code version were computed again"
            in again.stderr), again.stderr
    assert json.loads(again.stdout)["alpha_c"] == json.loads(first.stdout)["alpha_c"]
    read_back = run(command)
    assert "read back from" in read_back.stderr and "another code version" not in read_back.stderr


def test_the_simulate_help_states_the_band_the_verdict_uses():
    """Audit h19: the help said "agrees (|z| ≤ 3)" while the command uses the 99.73% Student-t band of a mean over
    the trials (±9.22 for its own example's 4 trials). The help's numbers are that band's."""
    from attnphase.validate.compare import student_band

    text = " ".join(CliRunner().invoke(main, ["simulate", "positional-semantic", "--help"]).output.split())
    assert "|z| ≤ 3" not in text
    assert f"{student_band(3):.2f} for 4 trials, {student_band(10**9):.1f} for many" in text


@pytest.mark.parametrize("pieces", [0, 1, 2])
def test_an_interrupted_threshold_says_how_many_pieces_this_run_kept(tmp_path, monkeypatch, pieces):
    """Audit h19: stopped before any piece finished, the command said "every finished threshold is in DIR", where DIR
    held only the arguments. The line now counts the pieces this command kept, when it is stopped (not those kept
    earlier in the same process: audit t19)."""
    import attnphase.api.positional_semantic as api
    from attnphase.resume import Checkpoint

    Checkpoint(tmp_path / "earlier.json").put("a piece of an earlier command", {"value": -1})

    def stopped_after_some_pieces(*args, **kwargs):
        for i in range(pieces):
            Checkpoint(tmp_path / "pieces.json").put(f"piece {i}", {"value": i})
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "threshold", stopped_after_some_pieces)
    result = CliRunner().invoke(main, ["threshold", "positional-semantic", "--omega", "0.3", "--checkpoint-dir",
                                       str(tmp_path / "kept")])
    assert result.exit_code == 130
    if pieces:
        counted = "1 finished piece" if pieces == 1 else f"{pieces} finished pieces"
        assert f"interrupted: {counted} of the threshold search kept in {tmp_path / 'kept'}" in result.stderr
    else:
        assert "interrupted: no piece of the threshold search finished in this run" in result.stderr
