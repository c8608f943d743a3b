"""Run every example printed by `attnphase <command> --help`, as a user would (whole processes, in a scratch
directory), and print each one's exit status, wall time and the fields it printed, so that the claim
beside the example ("recovers xi: mean final |rho| about 0.99") can be read against what it gives.

    python benchmarks/help_examples.py                   # every example
    python benchmarks/help_examples.py --only potts      # those whose command line contains "potts"
    python benchmarks/help_examples.py --skip reproduce  # all but the reproduce examples (minutes each)
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from attnphase.cli import main

EXAMPLE_LINE = re.compile(r"^\s*(attnphase .+?)(?:\s+#.*)?$")
# Examples that show a form rather than a run here, with the reason they are not run.
NOT_RUN = {
    "mypackage.points:point": "a user's own sweep function (a placeholder module)",
    "--scheduler tcp://": "needs a running dask scheduler",
    "--other cuda": "needs a CUDA device",
}
# `sweep` examples first: the `store` examples read the store a sweep writes.
ORDER = ("attnphase sweep", "attnphase store")


def help_texts():
    """(command path, --help text) for every command and subcommand, walked from the click tree."""
    found = []

    def walk(command: click.Command, ctx: click.Context, path: list[str]) -> None:
        found.append((" ".join(path), command.get_help(ctx)))
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None:
                    walk(sub, click.Context(sub, info_name=name, parent=ctx), [*path, name])

    walk(main, click.Context(main, info_name="attnphase"), ["attnphase"])
    return found


def examples(text: str) -> list[str]:
    """The example command lines of a help text (continuation lines ending in a backslash joined)."""
    lines, out, pending = text.splitlines(), [], None
    for line in lines:
        if pending is not None:
            pending += " " + line.strip().rstrip("\\").strip()
            if not line.rstrip().endswith("\\"):
                out.append(pending)
                pending = None
            continue
        match = EXAMPLE_LINE.match(line)
        if match and "<" not in match.group(1):
            command = match.group(1).rstrip()
            if command.endswith("\\"):
                pending = command.rstrip("\\").strip()
            else:
                out.append(command)
    return out


def summary(stdout: str, limit: int = 12) -> str:
    """The top-level scalar fields of a JSON output (the first `limit`), else the output's last lines."""
    try:
        record = json.loads(stdout)
    except json.JSONDecodeError:
        return "\n".join(stdout.strip().splitlines()[-limit:])
    result = record.get("result", record) if isinstance(record, dict) else record
    if not isinstance(result, dict):
        return json.dumps(result)[:400]
    scalars = {k: v for k, v in result.items() if isinstance(v, (int, float, str, bool)) or v is None}
    return ", ".join(f"{k}={v}" for k, v in list(scalars.items())[:limit])


def run(command: str, directory: Path, timeout: float) -> tuple[int | str, float, str]:
    argv = [sys.executable, "-m", "attnphase", *shlex.split(command)[1:]]
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, cwd=directory, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start, ""
    text = summary(done.stdout) if done.returncode == 0 else done.stderr.strip()[-600:]
    return done.returncode, time.perf_counter() - start, text


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", default=[], help="run the examples containing this text")
    parser.add_argument("--skip", action="append", default=[], help="skip the examples containing this text")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per example")
    args = parser.parse_args()
    listed = {}  # command -> the help it is printed by
    for path, text in help_texts():
        for command in examples(text):
            if (not args.only or any(o in command for o in args.only)) and not any(s in command for s in args.skip):
                listed.setdefault(command, path)
    ordered = sorted(listed, key=lambda c: next((i for i, p in enumerate(ORDER) if c.startswith(p)), -1))
    failures = not_run = 0
    with tempfile.TemporaryDirectory() as scratch:
        for command in ordered:
            reason = next((why for key, why in NOT_RUN.items() if key in command), None)
            if reason is not None:
                not_run += 1
                print(f"$ {command}\n  [{listed[command]} --help] not run: {reason}\n", flush=True)
                continue
            status, seconds, printed = run(command, Path(scratch), args.timeout)
            failures += status != 0
            print(f"$ {command}\n  [{listed[command]} --help] exit {status}, {seconds:.1f} s\n  {printed}\n", flush=True)
    print(f"{len(ordered)} examples: {len(ordered) - not_run - failures} ran and succeeded, {failures} failed, "
          f"{not_run} not run")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    cli()
