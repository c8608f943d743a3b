"""The layer packages (numeric, derive, validate) re-export every public name of their modules, lazily, and
the API reference lists every module (no stale entries)."""

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS_API = Path(__file__).resolve().parents[1] / "docs" / "api"
PACKAGES = {"attnphase.numeric": "numeric.md", "attnphase.derive": "derive.md", "attnphase.validate": "validate.md"}
# a function named like its module is reached through the module (the import system sets the package
# attribute to the submodule when it is imported, so a re-export would change meaning)
SAME_NAME_AS_MODULE = {"attnphase.validate": {"compare", "sphere_sga"}}
# modules without __all__ whose public API is one function
ENTRY_POINTS = {"attnphase.validate.ziggurat": ["fill_normal"]}


def submodules(package_name):
    package = importlib.import_module(package_name)
    return [f"{package_name}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]


def public_names(module_name):
    if module_name in ENTRY_POINTS:
        return ENTRY_POINTS[module_name]
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:  # no __all__: what the module defines itself, without a leading underscore
        names = [n for n, v in vars(module).items() if not n.startswith("_")
                 and getattr(v, "__module__", None) == module_name]
    return names


@pytest.mark.parametrize("package_name", PACKAGES)
def test_every_public_name_of_every_module_is_re_exported(package_name):
    package = importlib.import_module(package_name)
    exported = set(package.__all__)
    assert len(exported) == len(package.__all__), "a name is exported twice"
    for module_name in submodules(package_name):
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            if name in SAME_NAME_AS_MODULE.get(package_name, set()):
                continue
            assert name in exported, f"{module_name}.{name} is not re-exported by {package_name}"
            assert getattr(package, name) is getattr(module, name), f"{package_name}.{name}"
    for name in package.__all__:
        assert getattr(package, name) is not None
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018


@pytest.mark.parametrize("package_name", ["attnphase.numeric", "attnphase.validate"])
def test_importing_a_layer_package_imports_none_of_its_modules(package_name):
    code = (f"import sys, {package_name}; "
            "print(sorted(m for m in ('scipy', 'torch', 'numba', 'sympy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("package_name", PACKAGES)
def test_the_api_reference_lists_every_module_and_nothing_else(package_name):
    page = (DOCS_API / PACKAGES[package_name]).read_text()
    listed = re.findall(r"^::: (\S+)", page, flags=re.MULTILINE)
    assert sorted(set(listed) - {package_name}) == sorted(submodules(package_name))


def test_every_api_reference_entry_is_importable():
    for page in DOCS_API.glob("*.md"):
        for target in re.findall(r"^::: (\S+)", page.read_text(), flags=re.MULTILINE):
            importlib.import_module(target)
