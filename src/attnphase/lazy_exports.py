"""Lazy re-exports for packages that gather the public names of their modules.

A package lists its modules and their public names; `lazy_exports` gives it the `__all__`,
`__getattr__` and `__dir__` that import a module only when one of its names is first used (and keep the
value in the package, so later uses cost nothing). `import attnphase.numeric` therefore loads neither
SciPy nor mpmath, and the CLI can read a model's parameter declarations without SymPy, numba or torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from importlib import import_module

__all__ = ["lazy_exports"]


def lazy_exports(package: str, namespace: MutableMapping, modules: Mapping[str, Iterable[str]],
                 eager: Iterable[str] = ()) -> tuple[list[str], Callable[[str], object], Callable[[], list[str]]]:
    """(`__all__`, `__getattr__`, `__dir__`) for `package` (its `__name__`), whose `namespace` (its
    `globals()`) already holds the `eager` names; `modules` maps each submodule to the names it exports."""
    where = {name: module for module, names in modules.items() for name in names}
    public = [*eager, *where]

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{where[name]}"), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(public))

    return public, __getattr__, __dir__
