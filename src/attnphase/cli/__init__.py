"""The `attnphase` command line.

Commands: `derive`, `solve`, `threshold`, `scaling`, `simulate`, `reproduce`, `sweep`, `store`,
`agreement`. Nothing behind a command is imported until that command runs, so `attnphase --version`
and `--help` start in a fraction of a second; the model subcommands are found through
`attnphase.models.registry` (see `attnphase.cli.groups`).
"""

from __future__ import annotations

import click

from attnphase.cli.groups import LazyGroup, scaling, simulate, solve, threshold

TOP_LEVEL_COMMANDS = {
    "derive": ("attnphase.cli.derive:derive", "Render a model's equations to Markdown from its symbolic source."),
    "reproduce": ("attnphase.cli.reproduce:reproduce", "Write a report directory per model (report.md, figures, CSV)."),
    "sweep": ("attnphase.cli.sweep:sweep", "Compute a model on a parameter grid, storing each point as it finishes."),
    "store": ("attnphase.cli.store:store_group", "Inspect and export the results store."),
    "agreement": ("attnphase.cli.agreement:agreement", "Run every simulator on two devices with the same seed."),
}


def _print_version(ctx: click.Context, param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from attnphase.version import code_version, package_version

    click.echo(f"attnphase, version {package_version()} (code {code_version()})")
    ctx.exit()


@click.group(cls=LazyGroup, lazy_commands=TOP_LEVEL_COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the release and code versions and exit.")
def main() -> None:
    """attnphase: derive, solve and validate solvable models of attention.

    \b
    Examples:
      attnphase derive all --check
      attnphase solve positional-semantic --omega 0.3 --alpha 1.25 --json
      attnphase reproduce --out reports
    """
    check_numba_threads_variable()


# numba starts NUMBA_NUM_THREADS threads with its first parallel loop: 5000 hung a two-core machine, 100000 crashed
# it (a segmentation fault), and 0 or a negative count stops numba with its own error wherever it is first used
MAX_NUMBA_THREADS = 4096


def check_numba_threads_variable() -> None:
    """$NUMBA_NUM_THREADS, where set, must be a thread count numba can start (ParameterError naming it otherwise):
    checked before any command runs, since numba reads it once, at its first use."""
    import os

    from attnphase.errors import ParameterError

    value = os.environ.get("NUMBA_NUM_THREADS")
    if value is None:
        return
    allowed = f"an integer in [1, {MAX_NUMBA_THREADS}] (unset: every core)"
    try:
        count = int(value)
    except ValueError:
        raise ParameterError("$NUMBA_NUM_THREADS", value, allowed) from None
    if not 1 <= count <= MAX_NUMBA_THREADS:
        raise ParameterError("$NUMBA_NUM_THREADS", value, allowed)


for _group in (solve, threshold, scaling, simulate):
    main.add_command(_group)
