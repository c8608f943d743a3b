"""`make bench` runs every benchmark with the flags of its recipe: each script must accept them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted((ROOT / "benchmarks").glob("bench_*.py"))


def bench_recipe_flags() -> list[str]:
    """The options `make bench` passes to each benchmark (the words after `$$b` in its loop)."""
    recipe = re.search(r"^bench:.*?\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe, "the Makefile has no bench target"
    call = re.search(r"\$\$b\s+([^|;]*)", recipe.group(1))
    assert call, "the bench recipe does not run each benchmark as $$b"
    return call.group(1).split()


# Runs each script as `python SCRIPT --help` would (as __main__, its folder first on sys.path, the argument list
# [SCRIPT, "--help"]), all in one child interpreter: what they import (torch, numba, sympy) is loaded once, not once
# per script. Prints one JSON object: per script its exit status, standard output and standard error.
HELP_ALL = """
import contextlib, io, json, runpy, sys, traceback
texts, path0 = {}, sys.path[0]
for script in sys.argv[1:]:
    out, err, status = io.StringIO(), io.StringIO(), 0
    sys.argv, sys.path[0] = [script, "--help"], script.rsplit("/", 1)[0]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:
            traceback.print_exc()
            status = 1
    texts[script] = {"returncode": status, "stdout": out.getvalue(), "stderr": err.getvalue()}
sys.path[0] = path0
print(json.dumps(texts))
"""


@pytest.fixture(scope="module")
def help_texts():
    """Each benchmark's `--help`: {script path: SimpleNamespace(returncode, stdout, stderr)}."""
    child = subprocess.run([sys.executable, "-c", HELP_ALL, *map(str, BENCHMARKS)], capture_output=True, text=True,
                           timeout=120 * len(BENCHMARKS), cwd=ROOT)
    assert child.returncode == 0, child.stderr
    return {script: SimpleNamespace(**text) for script, text in json.loads(child.stdout.splitlines()[-1]).items()}


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda path: path.name)
def test_every_benchmark_accepts_the_flags_make_bench_passes(script, help_texts):
    flags = bench_recipe_flags()
    assert flags == ["--quick"]  # what the README documents for `make bench`
    help_text = help_texts[str(script)]
    assert help_text.returncode == 0, help_text.stderr
    for flag in flags:
        assert re.search(rf"(^|\s){re.escape(flag)}\b", help_text.stdout), f"{script.name} has no {flag}"
