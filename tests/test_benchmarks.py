"""`make bench` runs every benchmark with the flags of its recipe: each script must accept them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda path: path.name)
def test_every_benchmark_accepts_the_flags_make_bench_passes(script):
    flags = bench_recipe_flags()
    assert flags == ["--quick"]  # what the README documents for `make bench`
    help_text = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True,
                               timeout=120, cwd=ROOT)
    assert help_text.returncode == 0, help_text.stderr
    for flag in flags:
        assert re.search(rf"(^|\s){re.escape(flag)}\b", help_text.stdout), f"{script.name} has no {flag}"
