"""attnphase.version: results are keyed by the source, and `attnphase --version` stays light."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from attnphase import __version__
from attnphase.version import PACKAGE_DIR, code_version, hash_of_tree, package_version, source_hash

HEAVY_MODULES = ("torch", "sympy", "dask", "distributed", "numba", "scipy", "matplotlib")

# Runs the command line in a fresh interpreter and reports which heavy modules it imported.
DRIVER = """
import json, sys
from attnphase.cli import main
try:
    main(sys.argv[1:], prog_name="attnphase")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


def imported_heavy_modules(*args: str) -> tuple[list[str], str]:
    out = subprocess.run([sys.executable, "-c", DRIVER.format(heavy=HEAVY_MODULES), *args], capture_output=True,
                         text=True, timeout=120)
    return json.loads(out.stderr.strip().splitlines()[-1]), out.stdout


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("solve", "--help"), ("sweep", "--help")])
def test_the_command_line_starts_without_torch_sympy_or_dask(args):
    heavy, stdout = imported_heavy_modules(*args)
    assert heavy == [], f"`attnphase {' '.join(args)}` imported {heavy}"
    assert stdout.strip()


def test_version_names_the_release_and_the_code():
    heavy, stdout = imported_heavy_modules("--version")
    assert stdout.strip() == f"attnphase, version {__version__} (code {code_version()})"
    assert re.fullmatch(r"\S+\+src\.[0-9a-f]{12}", code_version())
    assert code_version().startswith(package_version()) and code_version().endswith(source_hash())
    from importlib.metadata import version

    assert package_version() == version("attnphase")  # the fast METADATA read agrees with importlib


def test_the_source_hash_changes_with_the_source_and_ignores_caches(tmp_path):
    tree = tmp_path / "attnphase"
    shutil.copytree(PACKAGE_DIR, tree, ignore=shutil.ignore_patterns("__pycache__"))
    original = hash_of_tree(tree)
    assert original[:12] == source_hash()  # the copy hashes like the installed package
    (tree / "__pycache__").mkdir()
    (tree / "__pycache__" / "store.cpython-311.pyc").write_bytes(b"compiled")
    (tree / "results.py.swp").write_text("editor leftovers")
    assert hash_of_tree(tree) == original
    store = tree / "store.py"
    store.write_text(store.read_text() + "\n# an edit\n")
    edited = hash_of_tree(tree)
    assert edited != original
    store.rename(tree / "store2.py")  # same bytes, another name: another program
    assert hash_of_tree(tree) not in (original, edited)
