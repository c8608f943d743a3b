"""The `attnphase` command line.

Commands: `derive`, `solve`, `threshold`, `scaling`, `simulate`, `reproduce`, `sweep`, `store`, `agreement`. The
model-specific subcommands live in `attnphase.cli.<model>` and register themselves on the groups in
`attnphase.cli.groups` when imported below.
"""

from __future__ import annotations

import click

from attnphase import __version__
from attnphase.cli.agreement import agreement
from attnphase.cli.derive import derive
from attnphase.cli.groups import GuardedGroup, scaling, simulate, solve, threshold
from attnphase.cli.reproduce import reproduce
from attnphase.cli.store import store_group
from attnphase.cli.sweep import sweep


@click.group(cls=GuardedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="attnphase")
def main() -> None:
    """attnphase: derive, solve and validate solvable models of attention.

    \b
    Examples:
      attnphase derive all --check
      attnphase solve positional-semantic --omega 0.3 --alpha 1.25 --json
      attnphase reproduce all --quick --out reports
    """


main.add_command(derive)
main.add_command(solve)
main.add_command(threshold)
main.add_command(scaling)
main.add_command(simulate)
main.add_command(reproduce)
main.add_command(sweep)
main.add_command(store_group)
main.add_command(agreement)

# Model subcommands register themselves on the groups when imported.
from attnphase.cli import copy_heads, positional_semantic, signal_recovery  # noqa: E402,F401
