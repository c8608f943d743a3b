"""Registry of the solvable models.

Each entry maps the CLI name of a model to the module holding its symbolic source. A model module
exports `NAME` (the CLI name), `TITLE`, and `derivation_markdown() -> str`, the rendered equations that
`attnphase derive` writes to `derivations/<module>.md`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

MODEL_MODULES: dict[str, str] = {
    "positional-semantic": "attnphase.models.positional_semantic",
    "signal-recovery": "attnphase.models.signal_recovery",
    "copy-heads": "attnphase.models.copy_heads",
}


def model_names() -> list[str]:
    return list(MODEL_MODULES)


def load_model(name: str) -> ModuleType:
    """Import the symbolic source of model `name` (a key of MODEL_MODULES)."""
    return importlib.import_module(MODEL_MODULES[name])


def derivation_filename(name: str) -> str:
    return MODEL_MODULES[name].rsplit(".", 1)[-1] + ".md"
