"""The command line as a user meets it: version, derivations in sync, bad input -> exit 2."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from attnphase import __version__
from attnphase.cli import main
from terminal_signals import as_from_a_terminal


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_version():
    result = run("--version")
    assert result.exit_code == 0 and __version__ in result.output


def test_derive_check_reports_an_up_to_date_page(tmp_path):
    # the command as a user runs it, on the cheapest page (tests/derive/test_derivations.py compares every
    # page of derivations/ with its rendered document)
    result = run("derive", "potts", "--check", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["stale"] == []
    # a stale page: --check exits 1 naming it and writes nothing; without --check the page is rewritten
    (tmp_path / "potts.md").write_text("stale\n")
    result = run("derive", "potts", "--check", "--json", "--dir", str(tmp_path))
    assert result.exit_code == 1 and json.loads(result.output)["stale"] == [str(tmp_path / "potts.md")]
    assert (tmp_path / "potts.md").read_text() == "stale\n"
    assert run("derive", "potts", "--dir", str(tmp_path)).exit_code == 0
    assert run("derive", "potts", "--check", "--dir", str(tmp_path)).exit_code == 0


@pytest.mark.parametrize("options, quick", [([], True), (["--quick"], True), (["--full"], False)])
def test_reproduce_runs_the_reduced_sizes_unless_full_is_asked(options, quick, tmp_path, monkeypatch):
    """The main job is `attnphase reproduce` as it stands (a few minutes on two cores); the papers' sizes, hours, only
    with --full. Each model is asked for the sizes of the option, and the JSON names them."""
    import attnphase.cli.reproduce as reproduce_cli

    asked = []
    monkeypatch.setattr(reproduce_cli, "run_model",
                        lambda name, out_dir, quick, device: asked.append((name, quick)) or {"value": 1.0})
    result = CliRunner().invoke(main, ["reproduce", "all", *options, "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert asked == [(name, quick) for name in reproduce_cli.MODELS_WITH_REPORTS]
    assert json.loads(result.stdout)["parameters"]["quick"] is quick


@pytest.mark.parametrize("options", [["--quick", "--full"], ["--full", "--quick"]])
def test_reproduce_refuses_quick_and_full_together(options, tmp_path):
    """The two sizes exclude each other: given both, one silently won (the last), and with `all` a stray --full started
    hours of work (audit b15). Exit 2 naming both, before any model runs."""
    result = CliRunner().invoke(main, ["reproduce", "all", *options, "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--quick and --full exclude each other" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_unknown_model_exits_2_naming_the_choices():
    result = run("reproduce", "no-such-model")
    assert result.exit_code == 2
    assert "positional-semantic" in result.output


@pytest.mark.parametrize("option", ["--other", "--reference"])
def test_agreement_on_cuda_without_a_gpu_names_the_option_that_asked_for_it(option):
    import torch

    if torch.cuda.is_available():
        pytest.skip("needs a machine without a CUDA device")
    result = run("agreement", option, "cuda", "--json")
    assert result.exit_code == 2 and result.stdout == ""
    # the value and its allowed range, as every refusal gives them (it read "'cpu' or 'auto'" as if that were the value)
    assert f"invalid value for {option}: 'cuda' (allowed: 'cpu' or 'auto'" in result.stderr, result.stderr
    assert "no CUDA device" in result.stderr


def test_console_entry_point_runs_as_module():
    out = subprocess.run([sys.executable, "-m", "attnphase", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and __version__ in out.stdout


def test_output_to_a_reader_that_went_away_ends_quietly():
    """`attnphase ... --json | head -c 0` printed "error: BrokenPipeError: [Errno 32] Broken pipe" (audit k18): a
    closed pipe on stdout ends the program as other command-line tools end, with exit status 1 and nothing on
    stderr."""
    process = subprocess.Popen([sys.executable, "-m", "attnphase", "solve", "potts", "--q", "3", "--beta", "2",
                                "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdout.close()  # the reader is gone before the command writes its one object
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 1 and stderr == ""


def test_a_broken_pipe_elsewhere_is_reported_while_stdout_is_a_live_pipe():
    """The quiet exit is for a stdout whose reader has gone (poll on its pipe): with stdout a live pipe, a broken pipe
    elsewhere is reported in one line (audit t19: in-process tests have no stdout descriptor to poll)."""
    code = ("import attnphase.models.potts.solve as potts\n"
            "def broken(*args, **kwargs):\n    raise BrokenPipeError(32, 'Broken pipe (a socket)')\n"
            "potts.solve = broken\nfrom attnphase.cli import main\n"
            "main(['solve', 'potts', '--q', '3', '--beta', '2.8'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if k != "ATTNPHASE_DEBUG"})
    assert out.returncode == 1 and out.stderr == "error: BrokenPipeError: [Errno 32] Broken pipe (a socket)\n", out


def test_attnphase_debug_shows_the_exception_instead_of_one_line(monkeypatch):
    """ATTNPHASE_DEBUG=1 lets an unexpected exception through with its traceback (the group's docstring)."""
    import attnphase.models.potts.solve as potts

    def broken(*args, **kwargs):
        raise RuntimeError("a defect")

    monkeypatch.setattr(potts, "solve", broken)
    monkeypatch.setenv("ATTNPHASE_DEBUG", "1")
    assert isinstance(run("solve", "potts", "--q", "3", "--beta", "2.8").exception, RuntimeError)


@pytest.mark.parametrize("raised", [BrokenPipeError(32, "Broken pipe (a socket)"), BrokenPipeError("a pipe broke")])
def test_a_broken_pipe_other_than_stdout_is_an_error_of_one_line(monkeypatch, raised):
    """Audit r19: only a closed stdout ends quietly; a broken pipe elsewhere (a socket, a child's pipe) ended quietly
    too (errno EPIPE) or with a 41-line traceback (no errno). It is reported as any unexpected error is."""
    import attnphase.models.potts.solve as potts

    def broken(*args, **kwargs):
        raise raised

    monkeypatch.setattr(potts, "solve", broken)
    result = run("solve", "potts", "--q", "3", "--beta", "2.8")
    assert result.exit_code == 1 and result.stderr == f"error: BrokenPipeError: {raised}\n"


@pytest.mark.parametrize("command", ["derive", "solve", "threshold", "scaling", "simulate", "reproduce"])
def test_every_command_has_help_with_examples_or_subcommands(command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.output


# -- human output and progress ----------------------------------------------------------------------

SWEEP = ["sweep", "demo", "--grid", "beta=0.5:2:40", "--workers", "1"]


def run_with_stderr_on_a_terminal(args, tmp_path):
    """Run `attnphase ARGS` with stderr on a pseudo-terminal (as in an interactive shell) and stdout piped;
    returns (exit status, stdout, everything written to the terminal)."""
    import os
    import pty

    primary, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    process = subprocess.Popen([sys.executable, "-m", "attnphase", *args], stdout=subprocess.PIPE, stderr=secondary,
                               cwd=tmp_path, env=env)
    os.close(secondary)
    terminal = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        terminal += chunk
    os.close(primary)
    stdout = process.stdout.read().decode()
    return process.wait(timeout=120), stdout, terminal.decode(errors="replace")


def test_progress_is_drawn_on_a_terminal_and_never_with_json(tmp_path):
    status, stdout, terminal = run_with_stderr_on_a_terminal(SWEEP + ["--store", "a.sqlite"], tmp_path)
    assert status == 0, terminal
    assert "sweep demo" in terminal and "40" in terminal  # the bar: its description and its total
    assert "n_computed" in stdout
    status, stdout, terminal = run_with_stderr_on_a_terminal(SWEEP + ["--store", "b.sqlite", "--json"], tmp_path)
    assert status == 0 and terminal == ""
    assert json.loads(stdout)["n_computed"] == 40


def test_piped_output_has_tables_and_no_progress_text(tmp_path):
    out = subprocess.run([sys.executable, "-m", "attnphase", *SWEEP, "--store", "c.sqlite"], capture_output=True,
                         text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0 and out.stderr == ""
    lines = out.stdout.splitlines()
    assert lines[0].startswith("sweep demo") and "(attnphase 0." in lines[0]
    table = dict(line.split(None, 1) for line in lines if line.split()[:1] in (["n_points"], ["n_computed"], ["backend"]))
    assert table == {"n_points": "40", "n_computed": "40", "backend": "serial"}
    assert not any(line.lstrip().startswith("{") for line in lines)  # no JSON blobs in human output


def test_json_output_is_exactly_one_object_with_the_code_version(tmp_path):
    from attnphase.version import code_version

    out = subprocess.run([sys.executable, "-m", "attnphase", *SWEEP, "--store", "d.sqlite", "--json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0 and out.stderr == ""
    payload = json.loads(out.stdout)  # raises if anything else is on stdout
    assert payload["version"] == code_version() and payload["command"] == "sweep"


# A command that runs until it is stopped, run the way the `attnphase` script runs (`console.run()`): `reproduce`, its
# model's report replaced by a wait, so that the test costs no model's minutes.
_WAITING_REPRODUCE = """
import pathlib, sys, time
import attnphase.cli.reproduce as reproduce_cli

started = pathlib.Path(sys.argv[1])

def run_model(name, out_dir, **kwargs):
    from attnphase.resume import Checkpoint, keep

    keep(out_dir / "copy_heads" / "piece.result", {"a": 1.0})  # two pieces kept before the wait
    Checkpoint(out_dir / "copy_heads" / "checkpoint.json").put("b", {"b": 2.0})
    started.write_text("started")
    time.sleep(60)

reproduce_cli.run_model = run_model
sys.argv = ["attnphase", "reproduce", "copy-heads", "--quick", "--out", sys.argv[2], *sys.argv[3:]]
from attnphase.console import run
run()
"""


def _stop_waiting_reproduce(tmp_path, signal_number, count, *extra):
    """Run `_WAITING_REPRODUCE` (with `extra` options), send `count` signals to its process group once its model has
    started, and return (exit status, stdout, stderr, the report directory)."""
    import os
    import time

    started, out = tmp_path / "started", tmp_path / "reports"
    process = subprocess.Popen([sys.executable, "-c", _WAITING_REPRODUCE, str(started), str(out), *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=as_from_a_terminal)
    try:
        deadline = time.time() + 60
        while not started.exists() and process.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert process.poll() is None, process.communicate()
        for _ in range(count):
            os.killpg(process.pid, signal_number)
            time.sleep(0.02)
        stdout, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, stdout, stderr, out


# The program as the script starts it, with a signal sent to itself while the command line is being imported (as
# `click` is imported: before any command runs), and SIGINT ignored from the start or not.
_SIGNALLED_WHILE_STARTING = """
import builtins, os, signal, sys

number = getattr(signal, sys.argv[1])
if sys.argv[2] == "ignored":
    signal.signal(number, signal.SIG_IGN)
real_import = builtins.__import__

def signalling_import(name, *args, **kwargs):
    if name == "click":
        os.kill(os.getpid(), number)
    return real_import(name, *args, **kwargs)

builtins.__import__ = signalling_import
sys.argv = ["attnphase", "--version"]
from attnphase.console import run
run()
"""


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_a_signal_while_the_command_line_loads_ends_it_with_one_line_and_the_signal_status(signal_name):
    """Ctrl-C in the first tenths of a second (the imports) gave a KeyboardInterrupt traceback: now one line, status
    130 (143 for SIGTERM), and the command does not run."""
    import signal

    number = getattr(signal, signal_name)
    out = subprocess.run([sys.executable, "-c", _SIGNALLED_WHILE_STARTING, signal_name, "handled"], capture_output=True,
                         text=True, timeout=60, preexec_fn=as_from_a_terminal)
    word = "interrupted" if number == signal.SIGINT else "terminated"
    assert (out.returncode, out.stdout) == (128 + number, ""), out.stderr
    assert out.stderr == f"{word} while starting: nothing was computed\n"


# A signal while the program exits after its command finished (Python's teardown, up to 0.6 s with torch and
# matplotlib loaded): an atexit function signals the process, as a SLURM walltime or a Ctrl-C can at that moment.
_SIGNALLED_WHILE_EXITING = """
import atexit, os, signal, sys, time

number = getattr(signal, sys.argv[1])
atexit.register(lambda: (os.kill(os.getpid(), number), time.sleep(0.2)))
sys.argv = ["attnphase", "solve", "potts", "--q", "3", "--beta", "1", "--json"]
from attnphase.console import run
run()
"""


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_a_signal_while_a_finished_command_exits_leaves_its_status(signal_name):
    """Audit r17: a SIGTERM (or Ctrl-C) in the last tenths of a second of a finished command, after its summary or
    JSON object was printed, ended the process with 143 (130) and no line; its status is now the command's, 0."""
    out = subprocess.run([sys.executable, "-c", _SIGNALLED_WHILE_EXITING, signal_name], capture_output=True,
                         text=True, timeout=120, preexec_fn=as_from_a_terminal)
    assert out.returncode == 0 and json.loads(out.stdout)["status"] == "converged", (out.returncode, out.stderr)
    assert out.stderr == ""


# The start-up handler run where Python swallows or wraps an exception: in a weakref callback (importlib's module
# locks have one) and in __set_name__ (a class body being built). An exception raised there did not stop the program.
_SIGNALLED_IN_A_CALLBACK = """
import os, signal, sys, weakref
from attnphase.console import _stopped_while_starting

signal.signal(signal.SIGTERM, _stopped_while_starting)
if sys.argv[1] == "weakref":
    class Referent:
        pass
    referent = Referent()
    reference = weakref.ref(referent, lambda _: os.kill(os.getpid(), signal.SIGTERM))
    del referent
else:
    class Descriptor:
        def __set_name__(self, owner, name):
            os.kill(os.getpid(), signal.SIGTERM)
    class Owner:
        descriptor = Descriptor()
print("the program went on")
"""


@pytest.mark.parametrize("where", ["weakref", "set_name"])
def test_a_signal_while_starting_stops_the_program_where_python_swallows_exceptions(where):
    """A SIGTERM that came while the start-up handler's SystemExit would be dropped (a weakref callback: the command
    ran and exited 0) or wrapped (in __set_name__: a RuntimeError traceback) ends the program all the same, with the
    one line and status 143."""
    out = subprocess.run([sys.executable, "-c", _SIGNALLED_IN_A_CALLBACK, where], capture_output=True, text=True,
                         timeout=60)
    assert (out.returncode, out.stdout) == (143, ""), (out.stdout, out.stderr)
    assert out.stderr == "terminated while starting: nothing was computed\n"


def test_a_signal_ignored_on_entry_stays_ignored_while_the_command_line_loads():
    """A SIGINT ignored when the program starts (nohup, `&` in a script) is not taken up by the start-up handler."""
    out = subprocess.run([sys.executable, "-c", _SIGNALLED_WHILE_STARTING, "SIGINT", "ignored"], capture_output=True,
                         text=True, timeout=60, preexec_fn=as_from_a_terminal)
    assert out.returncode == 0 and out.stdout.startswith("attnphase, version "), out.stderr


# What an interrupted `reproduce` keeps, counted, and how to go on (docs/cli.md: every interruption says both).
REPRODUCE_KEEPS = ("no model's report was finished; copy-heads kept 2 pieces of its report in this run, in "
                   "{out}/copy_heads; the same command reads back what was kept and computes the rest")


@pytest.mark.parametrize("signal_name, count", [("SIGTERM", 1), ("SIGINT", 2), ("SIGTERM", 3)])
def test_a_stopped_command_says_what_it_kept_and_exits_with_the_signal_status(tmp_path, signal_name, count):
    """SIGTERM (a batch scheduler's walltime) is handled as Ctrl-C is: the message of what was kept and how to go on,
    status 143 (130 for SIGINT), no traceback, also when a second signal arrives while the command exits."""
    import signal

    signal_number = getattr(signal, signal_name)
    status, _, stderr, out = _stop_waiting_reproduce(tmp_path, signal_number, count)
    word = "terminated" if signal_number == signal.SIGTERM else "interrupted"
    assert status == 128 + signal_number, stderr
    assert stderr == f"{word}: {REPRODUCE_KEEPS.format(out=out)}\n"


def test_an_interrupted_command_with_json_prints_its_one_object(tmp_path):
    """--json promises exactly one JSON object on stdout: an interrupted command prints one too (status failed, the
    interruption's message), where it printed nothing."""
    import signal

    status, stdout, stderr, out = _stop_waiting_reproduce(tmp_path, signal.SIGINT, 1, "--json")
    assert status == 130, stderr
    message = f"interrupted: {REPRODUCE_KEEPS.format(out=out)}"
    assert stderr == message + "\n"
    payload = json.loads(stdout)  # exactly one object: json.loads refuses anything after it
    assert payload["command"] == "reproduce" and payload["status"] == "failed" and payload["message"] == message
    assert payload["success"] is False


def test_an_interrupted_command_in_process_gives_back_the_signal_handlers(tmp_path, monkeypatch):
    """Called from Python (CliRunner, a notebook), an interrupted command leaves SIGINT and SIGTERM as it found them."""
    import signal

    import attnphase.cli.sweep as sweep_cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(sweep_cli, "run_sweep", interrupted)
    result = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=1,2", "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 130
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_command_that_keeps_nothing_says_so_when_stopped(monkeypatch):
    """Every command's interruption says what it kept: one that keeps no partial results (here `solve potts`, stopped
    by SIGTERM, raised as `Terminated`) says "nothing was kept" on stderr and in its one JSON object, which names
    the command and the model and carries no result (it printed a bare "terminated")."""
    import attnphase.models.potts.solve as potts_solve
    from attnphase.cli.groups import Terminated

    def terminated(*args, **kwargs):
        raise Terminated

    monkeypatch.setattr(potts_solve, "solve", terminated)
    result = CliRunner().invoke(main, ["solve", "potts", "--q", "3", "--beta", "3", "--json"])
    message = "terminated: nothing was kept (this command keeps no partial results)"
    assert result.exit_code == 143 and result.stderr == message + "\n"
    payload = json.loads(result.stdout)
    assert (payload["command"], payload["model"], payload["message"]) == ("solve", "potts", message)
    assert payload["status"] == "failed" and payload["success"] is False and "minima" not in payload


def test_an_interrupted_sweep_names_its_model_in_its_json_object(tmp_path, monkeypatch):
    """The model of `sweep` is an argument, not a subcommand: the interrupted JSON object names it (it was null)."""
    import attnphase.cli.sweep as sweep_cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_cli, "run_sweep", interrupted)
    result = CliRunner().invoke(main, ["sweep", "potts", "--grid", "beta=2.6,2.9", "--set", "q=3", "--store",
                                       str(tmp_path / "s.sqlite"), "--json"])
    assert result.exit_code == 130
    payload = json.loads(result.stdout)
    assert (payload["command"], payload["model"], payload["status"]) == ("sweep", "potts", "failed")
    assert payload["message"].startswith("interrupted: no point finished in this run (the store is ")


@pytest.mark.parametrize("command", [
    ["solve", "signal-recovery", "--d", "16", "--L", "64", "--R", "8", "--theta", "1", "--rho", "0.5"],
    ["solve", "copy-heads", "--attention", "linear", "--L", "16", "--V", "4", "--P", "20"],
])
def test_an_old_option_spelling_given_with_its_new_one_is_refused(command):
    """--beta 2 --score-scale 3 had run with the score scale given last (and --sigma2 with --score-variance
    likewise): which value was meant is unknown, so the command exits 2 naming the old spelling."""
    old, new = {"signal-recovery": ("--beta", "--score-scale"),
                "copy-heads": ("--sigma2", "--score-variance")}[command[1]]
    for pair in ([old, "2", new, "3"], [new, "3", f"{old}=2"]):
        result = CliRunner().invoke(main, command + pair + ["--json"])
        assert result.exit_code == 2, result.output
        assert f"{old} is the old spelling of {new}" in result.output


def test_the_old_finite_flag_says_it_is_deprecated_and_is_the_finite_reduction():
    """docs/cli.md: every old spelling is accepted for one release with a deprecation message on stderr; --finite
    (a flag, which the renaming of option names does not cover) had been accepted silently."""
    base = ["solve", "signal-recovery", "--d", "16", "--L", "64", "--R", "8", "--theta", "1", "--rho", "0.5",
            "--samples", "64", "--json"]
    old = CliRunner().invoke(main, base + ["--finite"])
    new = CliRunner().invoke(main, base + ["--reduction", "finite"])
    assert old.exit_code == new.exit_code == 0, old.output
    assert "--finite is deprecated" in old.stderr and "--reduction finite" in old.stderr and new.stderr == ""
    drop = {"version", "parameters"}
    assert {k: v for k, v in json.loads(old.stdout).items() if k not in drop} == \
        {k: v for k, v in json.loads(new.stdout).items() if k not in drop}


def test_no_command_declares_an_option_twice():
    """An option declared both by hand and from a ParameterSet (`--device` of simulate positional-semantic) is two
    parameters under one name: click warns, and which one parses the value depends on their order."""
    import click

    import attnphase.cli.copy_heads  # noqa: F401  (register every model's commands)
    import attnphase.cli.positional_semantic  # noqa: F401
    import attnphase.cli.potts  # noqa: F401
    import attnphase.cli.signal_recovery  # noqa: F401

    def commands(group, path):
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                yield from commands(command, f"{path} {name}")
            else:
                yield f"{path} {name}", command

    for path, command in commands(main, "attnphase"):
        names = [opt for param in command.params for opt in param.opts]
        assert len(names) == len(set(names)), (path, sorted({n for n in names if names.count(n) > 1}))


# A command interrupted by SIGINT that gets a SIGTERM while its KeyboardInterrupt is still on its way out (in a
# `finally`, where a sweep stops its workers): as a Ctrl-C followed 20 ms later by the batch system's SIGTERM.
_SECOND_SIGNAL_WHILE_STOPPING = """
import os, signal, sys, time
import click
from attnphase.cli.groups import GuardedGroup

@click.group(cls=GuardedGroup)
def program():
    pass

@program.command()
def work():
    first, second = (getattr(signal, name) for name in sys.argv[1:3])
    try:
        os.kill(os.getpid(), first)
        time.sleep(5)
    finally:
        os.kill(os.getpid(), second)
        time.sleep(0.2)

program(["work"])
"""


@pytest.mark.parametrize("first, second", [("SIGINT", "SIGTERM"), ("SIGTERM", "SIGINT")])
def test_a_second_signal_while_the_command_stops_changes_nothing(first, second):
    """The first signal decides how the command ends (its line and status); the second, arriving while the first's
    exception unwinds the command, is ignored (it replaced the first: "terminated", 143, for a Ctrl-C)."""
    import signal

    out = subprocess.run([sys.executable, "-c", _SECOND_SIGNAL_WHILE_STOPPING, first, second], capture_output=True,
                         text=True, timeout=60, preexec_fn=as_from_a_terminal)
    word = "interrupted" if first == "SIGINT" else "terminated"
    assert out.returncode == 128 + getattr(signal, first), out.stderr
    assert out.stderr.startswith(f"{word}: ") and out.stderr.count("\n") == 1, out.stderr


def test_an_interrupted_reproduce_counts_the_finished_reports_and_the_pieces_the_running_model_kept(tmp_path,
                                                                                                  monkeypatch):
    """Audit r17: the message said "the reports of the models finished so far ..., with any pieces the running model
    keeps" whatever had been kept; it now names the finished models and counts the running one's pieces (one kept
    here, while the first model's own piece is not counted as the second's)."""
    import signal

    import attnphase.cli.reproduce as reproduce_cli
    from attnphase.resume import keep

    def run_model(name, out_dir, **kwargs):
        keep(out_dir / name / "piece.result", {"a": 1.0})
        if name == "signal-recovery":
            raise KeyboardInterrupt
        return {"x": 1.0}

    monkeypatch.setattr(reproduce_cli, "run_model", run_model)
    out = tmp_path / "reports"
    try:
        result = CliRunner().invoke(main, ["reproduce", "all", "--out", str(out)])
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    assert result.exit_code == 130, result.output
    assert (f"interrupted: the reports of positional-semantic are in {out}; signal-recovery kept 1 piece of its report "
            f"in this run, in {out / 'signal_recovery'}; the same command reads back what was kept and computes the "
            "rest") in " ".join(result.output.split())
