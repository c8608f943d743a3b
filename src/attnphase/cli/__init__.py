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


for _group in (solve, threshold, scaling, simulate):
    main.add_command(_group)
