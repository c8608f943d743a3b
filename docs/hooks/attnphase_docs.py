"""MkDocs hook: the pages that are generated at build time, so that they cannot go stale.

* `cli.md`: the marker `<!-- attnphase-cli-reference -->` is replaced by the `--help` text of every
  command and subcommand, walked from the click command tree (model subcommands included, found
  through the model registry).
* Examples: each `examples/*.py` (a jupytext percent-format script) becomes a page `examples/<name>.md`,
  its Markdown cells as text and its code cells as code, and an entry under "Examples" in the nav.
* Derivations: each `derivations/*.md` (rendered by `attnphase derive` from the symbolic sources) becomes
  a page `derivations/<name>.md` and an entry under "Derivations".
* `<!-- attnphase-run: ARGS -->` in any page is replaced by `$ attnphase ARGS` and what the command
  printed (run when the site is built, all in one scratch directory, so a later command sees the store
  an earlier one wrote): the getting-started page shows real output of the current code.
* Models: every `docs/models/*.md`, and `docs/adding-a-model.md` when present, get nav entries under
  "Models", titled by their first heading; every `docs/research/*.md` (a model's research notes) gets one
  under "Research notes".
* A link from a page to a checked-in derivation by its path in the repository (`../../derivations/x.md`
  from docs/models/, which works when the Markdown is read on its own) is pointed at the site's page.
"""

from __future__ import annotations

import re
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLES = REPOSITORY / "examples"
DERIVATIONS = REPOSITORY / "derivations"
EXAMPLE_RUNNER = "run_examples.py"
CLI_MARKER = "<!-- attnphase-cli-reference -->"
HELP_WIDTH = 100


def _title(markdown: str, fallback: str) -> str:
    match = re.search(r"^#\s+(.+)$", markdown, flags=re.MULTILINE)
    return match.group(1).strip() if match else fallback


def _example_scripts() -> list[Path]:
    return sorted(p for p in EXAMPLES.glob("*.py") if p.name != EXAMPLE_RUNNER)


def example_markdown(script: Path) -> str:
    """The script's cells as Markdown (jupytext: percent format in, Markdown out)."""
    import jupytext

    notebook = jupytext.read(script, fmt="py:percent")
    body = jupytext.writes(notebook, fmt="md")
    body = re.sub(r"\A---\n.*?\n---\n", "", body, flags=re.DOTALL)  # jupytext's YAML header
    run = (f"\n\n!!! note \"Run it\"\n    `python examples/{script.name}` from the repository root (all examples, at "
           f"small size: `make examples`); `jupytext --to notebook examples/{script.name}` opens it as a notebook.\n")
    return body.strip() + run


def _with_section(nav: list, section: str, entries: list) -> None:
    for item in nav:
        if isinstance(item, dict) and section in item:
            item[section] = entries
            return


def on_config(config):
    docs_dir = Path(config["docs_dir"])
    models = [{_title(p.read_text(), p.stem): f"models/{p.name}"} for p in sorted((docs_dir / "models").glob("*.md"))]
    if (docs_dir / "adding-a-model.md").exists():
        models.append({"Adding a model": "adding-a-model.md"})
    examples = [{_title(example_markdown(p), p.stem): f"examples/{p.stem}.md"} for p in _example_scripts()]
    research = [{_title(p.read_text(), p.stem): f"research/{p.name}"} for p in sorted((docs_dir / "research").glob("*.md"))]
    derivations = [{_title(p.read_text(), p.stem): f"derivations/{p.name}"} for p in sorted(DERIVATIONS.glob("*.md"))]
    nav = config["nav"]
    _with_section(nav, "Models", models)
    _with_section(nav, "Examples", examples)
    _with_section(nav, "Derivations", derivations)
    _with_section(nav, "Research notes", research)
    # a section left empty (no such files) is dropped rather than shown empty
    config["nav"] = [item for item in nav if not (isinstance(item, dict) and list(item.values()) == [[]])]
    return config


def on_files(files, config):
    from mkdocs.structure.files import File

    for script in _example_scripts():
        files.append(File.generated(config, f"examples/{script.stem}.md", content=example_markdown(script)))
    for derivation in sorted(DERIVATIONS.glob("*.md")):
        files.append(File.generated(config, f"derivations/{derivation.name}", content=derivation.read_text()))
    return files


def cli_reference() -> str:
    """Markdown: one section per command, its `--help` text as a code block."""
    import click

    from attnphase.cli import main

    sections: list[str] = []

    def walk(command: click.Command, ctx: click.Context, path: list[str]) -> None:
        level = "#" * min(len(path) + 1, 4)
        sections.append(f"{level} `{' '.join(path)}`\n\n```text\n{command.get_help(ctx).rstrip()}\n```\n")
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None:
                    walk(sub, click.Context(sub, info_name=name, parent=ctx, terminal_width=HELP_WIDTH,
                                            max_content_width=HELP_WIDTH), path + [name])

    walk(main, click.Context(main, info_name="attnphase", terminal_width=HELP_WIDTH, max_content_width=HELP_WIDTH),
         ["attnphase"])
    return "\n".join(sections)


RUN_MARKER = re.compile(r"<!-- attnphase-run: (.+?) -->")
_SCRATCH: list[Path] = []


def run_command(args: str) -> str:
    """`$ attnphase ARGS` followed by its stdout, as a text code block; a failing command fails the build."""
    import os
    import shlex
    import subprocess
    import sys
    import tempfile

    if not _SCRATCH:
        _SCRATCH.append(Path(tempfile.mkdtemp(prefix="attnphase-docs-")))
    result = subprocess.run([sys.executable, "-m", "attnphase", *shlex.split(args)], cwd=_SCRATCH[0],
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "COLUMNS": str(HELP_WIDTH), "ATTNPHASE_STORE": "results.sqlite"})
    if result.returncode != 0:
        raise RuntimeError(f"docs: `attnphase {args}` exited {result.returncode}: {result.stderr.strip()}")
    return f"```text\n$ attnphase {args}\n{result.stdout.rstrip()}\n```"


REPOSITORY_LINK = re.compile(r"\]\((?P<path>(?:\.\./)+derivations/[\w.-]+\.md)(?P<anchor>#[^)]*)?\)")


def site_links(markdown: str, page_path: str, docs_dir: Path) -> str:
    """Links to `derivations/*.md` by their repository path, from the page `page_path` (relative to the docs
    directory), rewritten to the generated pages of the site."""
    import os

    page_dir = (docs_dir / page_path).parent

    def rewrite(match):
        target = (page_dir / match.group("path")).resolve()
        if target.parent != DERIVATIONS:
            return match.group(0)
        site_target = os.path.relpath(docs_dir / "derivations" / target.name, page_dir)
        return f"]({Path(site_target).as_posix()}{match.group('anchor') or ''})"

    return REPOSITORY_LINK.sub(rewrite, markdown)


def on_page_markdown(markdown, page, config, files):
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    markdown = site_links(markdown, page.file.src_path, Path(config["docs_dir"]).resolve())
    return RUN_MARKER.sub(lambda match: run_command(match.group(1)), markdown)
