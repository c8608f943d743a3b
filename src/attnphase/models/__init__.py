"""The solvable models, one package (or module) each, listed in `attnphase.models.registry`.

Importing this package imports nothing heavy: the registry holds import paths only.
"""

from __future__ import annotations

from types import ModuleType

from attnphase.models.registry import get, model_names

__all__ = ["model_names", "load_model", "derivation_filename"]


def load_model(name: str) -> ModuleType:
    """The derivation module of model `name` (`ModelEntry.symbolic`: a module with `NAME`, `TITLE` and
    `derivation_markdown()`, which renders the model's symbolic source)."""
    from attnphase.models.registry import load

    return load(get(name).symbolic)


def derivation_filename(name: str) -> str:
    return get(name).derivation_stem + ".md"


