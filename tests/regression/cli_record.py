"""The CLI record: fixed commands whose JSON output is kept in cli_record.json.

`python tests/regression/cli_record.py` runs every command in COMMANDS in-process and writes their JSON
outputs; `test_cli_record.py` runs them again and compares. The record was first written before the
models moved into packages (the engine restructuring), so that a move which changes no arithmetic is
seen to change no number. A deliberate change of a number is recorded in cli_record.json under
"changes" (the command, the field, the tolerance now allowed and the reason), never by rewriting the
recorded value silently.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RECORD = Path(__file__).with_name("cli_record.json")

# Small sizes, fixed seeds, CPU random numbers: every command runs in seconds and is deterministic.
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("solve", "positional-semantic", "--omega", "0.3", "--alpha", "1.25", "--nodes", "6",
     "--branches", "positional,semantic,trivial"),
    ("threshold", "positional-semantic", "--omega", "0.3", "--nodes", "6", "--check-nodes", "8", "--scan", "4",
     "--alpha-min", "1", "--alpha-max", "2"),
    ("simulate", "positional-semantic", "--omega", "0.3", "--alpha", "1.25", "--d", "40", "--seeds", "2",
     "--steps", "100", "--test-samples", "500", "--device", "cpu", "--rng", "cpu"),
    ("solve", "signal-recovery", "--d", "64", "--L", "512", "--R", "64", "--theta", "1", "--rho", "0.5"),
    ("solve", "signal-recovery", "--d", "64", "--L", "512", "--R", "64", "--theta", "1", "--rho", "0.5",
     "--finite", "--samples", "512", "--seed", "3"),
    ("solve", "signal-recovery", "--d", "64", "--L", "512", "--R", "64", "--theta", "1", "--rho", "0.5",
     "--reduction", "large-L"),
    ("simulate", "signal-recovery", "--d", "32", "--L", "64", "--R", "8", "--theta", "1", "--trials", "4",
     "--steps", "100", "--eta0", "0.05", "--k0", "10", "--gamma", "0.6", "--sampler", "projected",
     "--device", "cpu", "--rng", "cpu", "--seed", "1"),
    ("simulate", "signal-recovery", "--d", "16", "--L", "32", "--R", "4", "--theta", "1", "--trials", "2",
     "--steps", "50", "--eta0", "0.05", "--k0", "10", "--gamma", "0.6", "--sampler", "dense",
     "--device", "cpu", "--rng", "cpu", "--seed", "2"),
    ("solve", "copy-heads", "--attention", "softmax", "--L", "16", "--V", "4", "--P", "300"),
    ("solve", "copy-heads", "--attention", "linear", "--L", "8", "--V", "4", "--P", "100"),
    ("solve", "copy-heads", "--attention", "linear", "--L", "8", "--V", "4", "--P", "100", "--boundary", "causal"),
    ("threshold", "copy-heads", "--attention", "softmax", "--L", "16", "--V", "4", "--digits", "20"),
    ("threshold", "copy-heads", "--attention", "linear", "--L", "8", "--V", "4", "--digits", "20"),
    ("threshold", "copy-heads", "--attention", "linear", "--L", "8", "--V", "4", "--boundary", "causal"),
    ("scaling", "copy-heads", "--attention", "softmax", "--V", "4", "--L-min", "16", "--L-max", "64"),
    ("simulate", "copy-heads", "--attention", "softmax", "--L", "8", "--V", "4", "--P", "100", "--chains", "2",
     "--steps", "200", "--device", "cpu", "--rng", "cpu"),
    ("simulate", "copy-heads", "--attention", "linear", "--L", "8", "--V", "4", "--P", "100", "--sampler", "adam",
     "--chains", "2", "--steps", "200", "--device", "cpu", "--rng", "cpu"),
)


def run_command(argv: tuple[str, ...]) -> dict:
    """The JSON object the command prints with --json (run in this process)."""
    from click.testing import CliRunner

    from attnphase.cli import main

    result = CliRunner().invoke(main, [*argv, "--json"], catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {result.exit_code}: {result.output}")
    return json.loads(result.stdout)


def main() -> None:
    import time

    entries = []
    for argv in COMMANDS:
        start = time.perf_counter()
        output = run_command(argv)
        print(f"{time.perf_counter() - start:6.1f} s  {' '.join(argv)}", file=sys.stderr)
        entries.append({"argv": list(argv), "output": output})
    RECORD.write_text(json.dumps({"commands": entries, "changes": []}, indent=1) + "\n")


if __name__ == "__main__":
    main()
