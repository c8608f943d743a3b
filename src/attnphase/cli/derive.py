"""`attnphase derive`: regenerate derivations/<model>.md from the symbolic sources."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from attnphase.cli.common import emit, json_option
from attnphase.cli.output_paths import OutputPath, why_not_writable
from attnphase.models import derivation_filename, load_model, model_names
from attnphase.resume import written_atomically

__all__ = ["derive", "default_derivations_dir"]


def default_derivations_dir() -> Path:
    """`derivations/` of the source checkout when running from one, else `./derivations`."""
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "pyproject.toml").exists() and (checkout / "derivations").is_dir():
        return checkout / "derivations"
    return Path.cwd() / "derivations"


DERIVE_HELP = f"""Render a model's equations to Markdown (LaTeX inside), from its symbolic source.

    MODEL is one of {", ".join(model_names())}, or all.

    \b
    Examples:
      attnphase derive all            # regenerate every derivations/<model>.md
      attnphase derive copy-heads --check
    """


@click.command(help=DERIVE_HELP)
@click.argument("model", type=click.Choice(model_names() + ["all"]), metavar="MODEL|all")
@click.option("--check", is_flag=True, help="Exit 1 if a checked-in derivation is stale; write nothing.")
@click.option(
    "--dir", "directory", type=OutputPath(directory=True, writable=False), default=None,
    help="Where the Markdown files live (default: the checkout's derivations/).",
)
@json_option
def derive(model: str, check: bool, directory: Path | None, as_json: bool) -> None:
    """Render derivations/<model>.md (the help text is `DERIVE_HELP`, which names the registered models)."""
    given = directory is not None
    directory = directory or default_derivations_dir()
    # Checked before rendering (seconds of SymPy per model); --check only reads, so a read-only checkout is fine.
    problem = None if check else why_not_writable(directory, directory=True)
    if check and not directory.is_dir():  # nothing to compare with: not a stale page, a wrong path
        problem = (f"{directory} does not exist: --check compares the pages in an existing directory"
                   + ("" if given else " (the default; give --dir)"))
    if problem is not None:
        raise click.BadParameter(problem, param_hint="'--dir'")
    names = model_names() if model == "all" else [model]
    stale, written = [], []
    for name in names:
        text = load_model(name).derivation_markdown()
        path = directory / derivation_filename(name)
        current = path.read_text() if path.exists() else None
        if current == text:
            continue
        if check:
            stale.append(str(path))
        else:
            with written_atomically(path) as partial:  # an interrupted run leaves the earlier page, not half of one
                partial.write_text(text)
            written.append(str(path))
    emit("derive", model, {"check": check, "dir": str(directory)}, {"stale": stale, "written": written}, as_json)
    if stale:
        if not as_json:  # the command that rewrites these pages: the same model and directory, without --check
            again = f"attnphase derive {model}" + (f" --dir {shlex.quote(str(directory))}" if given else "")
            click.echo(f"stale derivations (run `{again}`): " + ", ".join(stale), err=True)
        sys.exit(1)
