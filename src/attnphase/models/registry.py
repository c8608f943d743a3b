"""The one table of models: the CLI, sweeps, the device agreement check, `derive` and `reproduce` read it.

An entry names, as import paths, everything the rest of the toolkit needs from a model; nothing is
imported until it is used, so reading the table costs nothing (the CLI lists models for `--help`
without importing torch or SymPy). Paths of functions are "module:attribute" strings, so that a sweep
worker process imports the point function itself.

Adding a model: write its package under `attnphase/models/<name>/` (docs/adding-a-model.md), then one
`ModelEntry` below.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from attnphase.errors import ParameterError

__all__ = ["ModelEntry", "MODELS", "model_names", "get", "load", "load_attribute"]


@dataclass(frozen=True)
class ModelEntry:
    """One model, by import path.

    name: the CLI name; title: one line for listings; symbolic: the module with `derivation_document()` (no
    arguments; every equation checked against the code by tests/derive/test_derivations.py) and
    `derivation_markdown()` (rendered to derivations/<derivation_stem>.md); cli: the module that defines the model's
    subcommands;
    commands: CLI group -> one-line summary of the model's subcommand there (shown by `--help` without
    importing `cli`); sweep_point: "module:function" evaluated by `attnphase sweep`; sweep_check: "module:function"
    taking a point's parameters as sweep_point does and raising ParameterError for a bad one, run by the sweep on every
    point before any point is computed (None: only the parameters' names are checked); simulators:
    "module:attribute" of a mapping name -> callable(device, seed) -> dict of arrays for the device
    agreement check (None: the model has no simulator); reproduce: the module with
    `run(out_dir, quick, device) -> dict`.
    """

    name: str
    title: str
    symbolic: str
    cli: str
    commands: dict[str, str] = field(default_factory=dict)
    sweep_point: str | None = None
    sweep_check: str | None = None
    simulators: str | None = None
    reproduce: str | None = None

    @property
    def derivation_stem(self) -> str:
        return self.name.replace("-", "_")


MODELS: dict[str, ModelEntry] = {
    entry.name: entry
    for entry in (
        ModelEntry(
            name="positional-semantic",
            title="Positional vs semantic attention: replica saddle point, alpha_c(omega), alpha_l(omega)",
            symbolic="attnphase.models.positional_semantic.derivation",
            cli="attnphase.cli.positional_semantic",
            commands={
                "solve": "Every branch (positional, semantic, trivial, mixed) of the saddle point at (omega, alpha).",
                "threshold": "alpha_c (free-energy crossing) and alpha_l (linear baseline) at omega, with errors.",
                "simulate": "Full-batch GD (Adam for --init random) at finite d, batched over trials, held against "
                            "the theory.",
            },
            sweep_point="attnphase.models.positional_semantic.point:sweep_point",
            sweep_check="attnphase.models.positional_semantic.point:check_sweep_point",
            simulators="attnphase.models.positional_semantic.network:SIMULATORS",
            reproduce="attnphase.reproduce.positional_semantic",
        ),
        ModelEntry(
            name="signal-recovery",
            title="Signal recovery by a softmax-attention query: J(rho), the limiting ODE, projected SGA",
            symbolic="attnphase.models.signal_recovery.derivation",
            cli="attnphase.cli.signal_recovery",
            commands={
                "solve": "J(rho), J'(rho), the drift (1 - rho^2) J' and the nuisance attention mass at rho.",
                "simulate": "Projected SGA of the query, all trials batched, under a schedule planned for the step "
                            "count; final |rho| against the retraction-corrected ODE's prediction.",
            },
            sweep_point="attnphase.models.signal_recovery.simulate:sweep_point",
            sweep_check="attnphase.models.signal_recovery.simulate:check_sweep_point",
            simulators="attnphase.models.signal_recovery.network:SIMULATORS",
            reproduce="attnphase.reproduce.signal_recovery",
        ),
        ModelEntry(
            name="copy-heads",
            title="Copy-head emergence: effective action, P* scaling, MALA/Adam validation",
            symbolic="attnphase.models.copy_heads.derivation",
            cli="attnphase.cli.copy_heads",
            commands={
                "solve": "Minima of the reduced action at one P (stability, order parameters).",
                "threshold": "P* of the copy transition (mpmath-polished) and its order.",
                "scaling": "P* over a range of L and fits against each claimed law.",
                "simulate": "The one-head network on the copy task: MALA sampling or Adam.",
            },
            sweep_point="attnphase.models.copy_heads.sweep_points:sweep_point",
            sweep_check="attnphase.models.copy_heads.sweep_points:check_sweep_point",
            simulators="attnphase.models.copy_heads.samplers:SIMULATORS",
            reproduce="attnphase.reproduce.copy_heads",
        ),
        ModelEntry(
            name="potts",
            title="Mean-field q-state Potts model: order of the transition, beta_c, spinodals (from the layers alone)",
            symbolic="attnphase.models.potts.derivation",
            cli="attnphase.cli.potts",
            commands={
                "solve": "Minima of the mean-field free energy f(m) at beta, and the global one.",
                "threshold": "Order of the transition, beta_c to the asked digits, spinodals, jump of m.",
            },
            sweep_point="attnphase.models.potts.solve:sweep_point",
            sweep_check="attnphase.models.potts.solve:check_sweep_point",
            reproduce="attnphase.reproduce.potts",
        ),
    )
}


def model_names() -> list[str]:
    """The registered models' CLI names, in registry order."""
    return list(MODELS)


def get(name: str) -> ModelEntry:
    """The entry of model `name`, or a ParameterError listing the registered names."""
    try:
        return MODELS[name]
    except (KeyError, TypeError):
        raise ParameterError("MODEL", name, "one of " + ", ".join(MODELS)) from None


def load(module_path: str) -> ModuleType:
    return importlib.import_module(module_path)


def load_attribute(target: str) -> Any:
    """The object a "module:attribute" path names."""
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)
