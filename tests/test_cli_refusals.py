"""Refusals of bad or contradictory input on the command line (audit b13, D6-D10): exit status 2 and one message
naming the option and what it allows, never a value silently chosen, clamped, dropped or ignored."""

import pytest
from click.testing import CliRunner

from attnphase.cli import main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def assert_refused(result, option: str, *allowed: str):
    """Exit status 2, with the option named in the common form and each piece of the allowed range."""
    assert result.exit_code == 2, result.output
    assert f"invalid value for {option}: " in result.output, result.output
    assert "(allowed: " in result.output, result.output
    for piece in allowed:
        assert piece in result.output, result.output
    assert "Traceback" not in result.output


def test_sweep_refuses_a_parameter_fixed_by_two_sets(tmp_path):
    """D6: --set q=3 --set q=4 was silently q = 4, as a repeated --grid is refused."""
    result = run("sweep", "potts", "--grid", "beta=1,2", "--set", "q=3", "--set", "q=4", "--workers", 1,
                 "--store", tmp_path / "sweep.sqlite", "--json")
    assert_refused(result, "--set q", "each parameter fixed by one --set only", "--set q=3")
    assert result.stdout == ""  # refused before any point ran


SOLVE = ["solve", "copy-heads", "--L", 16, "--V", 4, "--P", 300]
THRESHOLD = ["threshold", "copy-heads", "--L", 16, "--V", 4]
SCALING = ["scaling", "copy-heads", "--V", 4, "--L-min", 16, "--L-max", 64]
SIMULATE = ["simulate", "copy-heads", "--L", 8, "--V", 4, "--P", 100, "--steps", 10, "--device", "cpu"]


@pytest.mark.parametrize("command", [SOLVE, THRESHOLD, SCALING, SIMULATE], ids=lambda c: c[0])
@pytest.mark.parametrize("extra, option", [
    (["--no-bias"], "--no-bias"),
    (["--s1", 5], "--s1"),
    (["--linear-scale", "1"], "--linear-scale"),
    (["--row-sums", "per-row"], "--row-sums"),
])
def test_copy_heads_refuses_linear_options_with_softmax(command, extra, option):
    """D7: the linear-only options were echoed in the parameters of a softmax run as if applied."""
    result = run(*command, "--attention", "softmax", *extra, "--json")
    assert_refused(result, option, "left out with --attention softmax", "linear attention only")
    assert result.stdout == ""


@pytest.mark.parametrize("attention, extra, option, other", [
    ("softmax", ["--reduction", "first-attempt"], "--reduction", "linear"),
    ("linear", ["--row-rate", "exact"], "--row-rate", "softmax"),
])
def test_threshold_refuses_the_other_activations_setting(attention, extra, option, other):
    result = run(*THRESHOLD, "--attention", attention, *extra, "--json")
    assert_refused(result, option, f"left out with --attention {attention}", f"{other} attention only")


def test_copy_heads_options_left_at_their_defaults_pass():
    """D7: an option of the other activation given at its default changes nothing and is not refused."""
    result = run(*SOLVE, "--attention", "softmax", "--s1", 1, "--linear-scale", "1/L", "--row-sums", "shared", "--json")
    assert result.exit_code == 0, result.output
    result = run(*THRESHOLD, "--attention", "softmax", "--reduction", "convention-a", "--digits", 5, "--json")
    assert result.exit_code == 0, result.output
    result = run(*THRESHOLD, "--attention", "linear", "--row-rate", "shortcut", "--no-bias", "--reduction",
                 "first-attempt", "--digits", 5, "--json")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("branches", ["positional,", ",positional", "positional,,semantic", ",", ""])
def test_branches_refuses_an_empty_entry(branches):
    """D8: a trailing comma dropped the empty entry (the run solved `positional` alone), where --omega-grid refuses
    `0.3,0.4,`."""
    result = run("solve", "positional-semantic", "--omega", 0.3, "--alpha", 1.25, "--branches", branches, "--json")
    assert_refused(result, "--branches", "a non-empty list without empty entries", "positional, semantic")


def test_scaling_names_L_min_when_no_L_max_in_range_helps():
    """D9: at --L-min 16777215 the message suggested --L-max >= 33554432, beyond --L-max's own range."""
    result = run("scaling", "copy-heads", "--attention", "linear", "--V", 4, "--L-min", 16777215,
                 "--L-max", 16777216)
    assert_refused(result, "--L-min", "an integer in [2, 8388607]", "at least 3 values of L")
    assert "--L-max" not in result.output


def test_scaling_just_below_the_L_min_bound_still_names_L_max():
    """The largest --L-min the cap leaves (8388607) takes --L-max 16777216: a short range there names --L-max."""
    result = run("scaling", "copy-heads", "--attention", "linear", "--V", 4, "--L-min", 8388607,
                 "--L-max", 8388608)
    assert_refused(result, "--L-max", "largest L >= 16777216")


def test_reproduce_device_cuda_without_a_gpu_names_the_value(monkeypatch, tmp_path):
    """D10: the refusal lacked the value and 'allowed:' (click's own form)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = run("reproduce", "potts", "--device", "cuda", "--out", tmp_path)
    assert_refused(result, "--device", "'cuda'", "'cpu' or 'auto'", "no CUDA device is visible")


def test_default_lr_refused_says_it_is_the_default():
    """D10: the user gave no --lr; the refusal said 'invalid value for --lr: 0.15' as if given."""
    result = run("simulate", "positional-semantic", "--omega", 0.3, "--alpha", 1.25, "--lam", 1e6, "--json")
    assert_refused(result, "--lr", "(0, 2e-06)", "the default lr 0.15 (for init 'semantic')",
                   "pass one in that range")


def test_given_lr_refused_does_not_speak_of_a_default():
    result = run("simulate", "positional-semantic", "--omega", 0.3, "--alpha", 1.25, "--lam", 1e6, "--lr", 0.1)
    assert_refused(result, "--lr", "(0, 2e-06)")
    assert "default" not in result.output


@pytest.mark.parametrize("grid", ["1e-400,0.3", "0.3,1e-400", "1e-400:0.3:3"])
def test_omega_grid_refuses_a_value_that_underflows_to_zero(grid):
    """D10: 1e-400 was read as ω = 0."""
    result = run("threshold", "positional-semantic", "--omega-grid", grid, "--json")
    assert_refused(result, "--omega-grid", "1e-400 is not 0", "smallest positive float 5e-324")


def test_real_option_refuses_a_value_that_underflows_to_zero():
    result = run("threshold", "positional-semantic", "--omega", "1e-400", "--json")
    assert result.exit_code == 2, result.output
    assert "--omega" in result.output and "1e-400 is not 0" in result.output and "[0, 1]" in result.output


def test_sweep_set_refuses_a_value_that_underflows_to_zero(tmp_path):
    result = run("sweep", "potts", "--grid", "beta=1,2", "--set", "q=3", "--set", "J=1e-999", "--workers", 1,
                 "--store", tmp_path / "sweep.sqlite")
    assert_refused(result, "--set J", "1e-999 is not 0")


def test_omega_grid_help_says_the_list_is_sorted():
    result = run("threshold", "positional-semantic", "--help")
    assert result.exit_code == 0
    assert "(a list is sorted)" in " ".join(result.output.split())


def test_sweep_refuses_linear_options_with_softmax(tmp_path):
    """The sweep's points are checked by the model, which refuses what the CLI's copy-heads options refuse."""
    result = run("sweep", "copy-heads", "--grid", "P=100,200", "--set", "attention=softmax", "--set", "s1=5",
                 "--workers", 1, "--store", tmp_path / "sweep.sqlite", "--json")
    assert_refused(result, "--set s1", "left at its default (1.0) with softmax attention", "linear attention only")
    assert result.stdout == ""
