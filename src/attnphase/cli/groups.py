"""The command groups every model fills in.

Model CLI modules (`attnphase.cli.<model>`) register one subcommand per model on these groups, e.g.
`@solve.command("signal-recovery")`. Keeping the groups in their own module lets those modules import
them without importing the whole CLI.
"""

from __future__ import annotations

import os
import sys

import click

from attnphase.errors import ParameterError


class GuardedGroup(click.Group):
    """A click group that turns a `ParameterError` raised anywhere below it into exit status 2.

    Unexpected exceptions become one line on stderr and exit status 1; set ATTNPHASE_DEBUG=1 to see the
    traceback.
    """

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ParameterError as exc:
            raise click.UsageError(str(exc), ctx=None) from None
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except Exception as exc:  # noqa: BLE001 - last line of defence: no traceback for users
            if os.environ.get("ATTNPHASE_DEBUG"):
                raise
            click.echo(f"error: {type(exc).__name__}: {exc}", err=True)
            sys.exit(1)


@click.group(cls=GuardedGroup)
def solve() -> None:
    """Solve a model's saddle point / population objective at one parameter point."""


@click.group(cls=GuardedGroup)
def threshold() -> None:
    """Locate a model's transition thresholds with error estimates."""


@click.group(cls=GuardedGroup)
def scaling() -> None:
    """Fit a model's threshold scaling laws."""


@click.group(cls=GuardedGroup)
def simulate() -> None:
    """Run finite-size torch simulations of a model."""
