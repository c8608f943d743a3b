"""Command groups whose subcommands are imported only when used.

`attnphase --version` and `--help` must not import torch, SymPy or dask: the groups list their
subcommands from import paths and one-line summaries, and import a subcommand's module only when it
runs (or when its own `--help` is asked for).

* `LazyGroup`: subcommands given as name -> ("module:attribute", summary) (`attnphase derive`, ...).
* `ModelGroup`: `solve`, `threshold`, `scaling` and `simulate`, filled from `attnphase.models.registry`;
  the model's CLI module (`ModelEntry.cli`) registers its subcommand with `@solve.command(NAME)` when
  imported.
"""

from __future__ import annotations

import importlib
import os
import select
import signal
import sys
import threading

import click

from attnphase.cli.common import JSON_COMMAND
from attnphase.errors import ParameterError
from attnphase.jsonio import dumps


# ctx.meta keys (shared by every context of one command line): what an interruption of the running command keeps, and
# the fields its interrupted JSON object adds to say so.
KEPT_WHEN_INTERRUPTED = "attnphase.kept_when_interrupted"
KEPT_FIELDS = "attnphase.kept_fields"


NOTHING_KEPT = "nothing was kept (this command keeps no partial results)"
"""The interruption message of a command that has not said what it keeps (`keep_when_interrupted`)."""


def keep_when_interrupted(what, model: str | None = None, **fields) -> None:
    """Say, for the interruption message of the running command, what its interruption keeps and how to go on (`what`:
    the text, or a function that gives it when the command is stopped, to count what was kept by then); and, for a
    command whose model is an argument (sweep, reproduce), the model its interrupted JSON object names. `fields`:
    what the interrupted JSON object adds, e.g. where the kept work is and how much of it there is."""
    meta = click.get_current_context().meta
    meta[KEPT_WHEN_INTERRUPTED] = what
    meta[KEPT_FIELDS] = fields
    if model is not None and meta.get(JSON_COMMAND) is not None:
        meta[JSON_COMMAND] = (meta[JSON_COMMAND][0], model)


def _emit_interruption(command: str, model: str | None, message: str, kept_fields: dict) -> None:
    """The one JSON object of an interrupted command run with --json: no result, status failed, what was kept (the
    message, and the command's own fields for it)."""
    from attnphase.version import code_version

    payload = {"command": command, "model": model, "version": code_version(), "status": "failed", "message": message,
               **kept_fields, "success": False}
    sys.stdout.write(dumps(payload) + "\n")
    sys.stdout.flush()


class Terminated(KeyboardInterrupt):
    """SIGTERM (what `kill`, SLURM and PBS send, e.g. at the walltime), raised in the main thread as Ctrl-C raises
    KeyboardInterrupt: a subclass, so that every path that keeps finished work on Ctrl-C keeps it on SIGTERM too."""


def _raise_terminated(signum, frame) -> None:
    _ignore_further_signals()
    raise Terminated()


def _raise_interrupted(signum, frame) -> None:
    _ignore_further_signals()
    raise KeyboardInterrupt


def _ignore_further_signals() -> None:
    """From the first signal on, SIGINT and SIGTERM are ignored while the command stops: a second one that came
    while the first's exception was still on its way out (a Ctrl-C then SLURM's SIGTERM 20 ms later) replaced it,
    and the command said "terminated" and exited 143 for a run that was interrupted."""
    _set_handlers({signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: signal.SIG_IGN})


def _set_handlers(handlers: dict) -> dict:
    """Set signal number -> handler (main thread only); returns the handlers they replace."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for number, handler in handlers.items():
            try:
                previous[number] = signal.signal(number, handler)
            except (ValueError, OSError):  # pragma: no cover - not settable here
                pass
    return previous


def _restore_handlers(previous: dict) -> None:
    _set_handlers({number: signal.SIG_DFL if handler is None else handler for number, handler in previous.items()})


class GuardedGroup(click.Group):
    """A click group that turns a `ParameterError` raised anywhere below it into exit status 2.

    Unexpected exceptions become one line on stderr and exit status 1; set ATTNPHASE_DEBUG=1 to see the
    traceback. An interruption exits with status 130 (Ctrl-C, SIGINT) or 143 (SIGTERM, raised as `Terminated`)
    and says what the command keeps (`keep_when_interrupted`); from the first signal on, further SIGINTs and SIGTERMs
    are ignored, so a second one can neither break off the exit with a traceback nor change what it says.
    """

    _run_as_program = False

    def __call__(self, *args, **kwargs):
        # Called as the program (the console script, `python -m attnphase`; CliRunner calls `main` instead): once the
        # command has finished or been stopped the process only exits, so SIGINT and SIGTERM stay ignored until it has.
        self._run_as_program = True
        try:
            return super().__call__(*args, **kwargs)
        finally:
            self._run_as_program = False

    def invoke(self, ctx: click.Context):
        outermost = ctx.parent is None
        # The outermost group handles SIGTERM for the whole command line, and gives back the handlers it found
        # (SIGINT's too: an interruption ignores it) when it returns to a Python caller.
        previous = {}
        if outermost:
            previous = _set_handlers({signal.SIGTERM: _raise_terminated})
            if threading.current_thread() is threading.main_thread():
                previous[signal.SIGINT] = signal.getsignal(signal.SIGINT)
                if previous[signal.SIGINT] is signal.default_int_handler:  # not one ignored on entry (nohup)
                    _set_handlers({signal.SIGINT: _raise_interrupted})
        try:
            return super().invoke(ctx)
        except ParameterError as exc:
            raise click.UsageError(str(exc), ctx=None) from None
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError as exc:
            if _stdout_reader_gone():  # `| head`: click ends quietly, exit status 1, as other tools do
                raise
            _unexpected(exc)  # any other broken pipe is an error like the rest
        except KeyboardInterrupt as exc:
            _set_handlers({signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: signal.SIG_IGN})
            kept = ctx.meta.get(KEPT_WHEN_INTERRUPTED)
            kept = kept() if callable(kept) else kept
            what = "terminated" if isinstance(exc, Terminated) else "interrupted"
            message = f"{what}: {kept or NOTHING_KEPT}"
            click.echo(message, err=True)
            if ctx.meta.get(JSON_COMMAND) is not None:  # --json promises one object on stdout, interrupted or not
                _emit_interruption(*ctx.meta[JSON_COMMAND], message, ctx.meta.get(KEPT_FIELDS, {}))
            sys.exit(143 if isinstance(exc, Terminated) else 130)
        except Exception as exc:  # noqa: BLE001 - last line of defence: no traceback for users
            _unexpected(exc)
        finally:
            if outermost and self._run_as_program:
                # the program only exits now, finished or stopped: a signal in its last tenths of a second (Python's
                # teardown of torch and matplotlib) ended a finished command with 143 or 130 and no line (audit r17)
                _set_handlers({signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: signal.SIG_IGN})
            elif outermost:
                _restore_handlers(previous)


def _unexpected(exc: Exception) -> None:
    """An exception no command handles: one line on stderr and exit status 1 (its traceback with ATTNPHASE_DEBUG)."""
    if os.environ.get("ATTNPHASE_DEBUG"):
        raise exc
    click.echo(f"error: {type(exc).__name__}: {exc}", err=True)
    sys.exit(1)


def _stdout_reader_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (poll reports an error on its write end), as
    against a broken pipe anywhere else (a socket, a child process's pipe), which is an error to report."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no file descriptor (an in-memory stream) or no poll
        return False


def _format_summaries(formatter: click.HelpFormatter, rows: list[tuple[str, str]]) -> None:
    if rows:
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class LazyGroup(GuardedGroup):
    """A group whose subcommands are name -> ("module:attribute", summary), imported on first use."""

    def __init__(self, *args, lazy_commands: dict[str, tuple[str, str]] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx):
        return sorted(set(self.commands) | set(self.lazy_commands))

    def get_command(self, ctx, name):
        if name not in self.commands and name in self.lazy_commands:
            module_name, _, attribute = self.lazy_commands[name][0].partition(":")
            self.add_command(getattr(importlib.import_module(module_name), attribute), name)
        return self.commands.get(name)

    def format_commands(self, ctx, formatter):
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy_commands:
                rows.append((name, self.lazy_commands[name][1]))
            else:
                rows.append((name, self.commands[name].get_short_help_str(formatter.width)))
        _format_summaries(formatter, rows)


class ModelGroup(GuardedGroup):
    """`solve`, `threshold`, ...: one subcommand per registered model that has one in this group."""

    def _entries(self):
        from attnphase.models.registry import MODELS

        return {name: entry for name, entry in MODELS.items() if self.name in entry.commands}

    def list_commands(self, ctx):
        return list(self._entries())

    def get_command(self, ctx, name):
        entry = self._entries().get(name)
        if entry is not None and name not in self.commands:
            importlib.import_module(entry.cli)  # registers its subcommands on the groups below
        return self.commands.get(name)

    def format_commands(self, ctx, formatter):
        _format_summaries(formatter, [(name, entry.commands[self.name]) for name, entry in self._entries().items()])


@click.group(cls=ModelGroup)
def solve() -> None:
    """Solve a model's saddle point / population objective at one parameter point."""


@click.group(cls=ModelGroup)
def threshold() -> None:
    """Locate a model's transition thresholds with error estimates."""


@click.group(cls=ModelGroup)
def scaling() -> None:
    """Fit a model's threshold scaling laws."""


@click.group(cls=ModelGroup)
def simulate() -> None:
    """Run finite-size torch simulations of a model."""
