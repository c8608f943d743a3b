"""Reproduction pipelines, one module per model (`ModelEntry.reproduce` in the registry).

`<pipeline>.run(out_dir, quick, device) -> dict` writes a report directory (report.md, PNG figures, CSV
data) and returns the headline numbers.
"""

from __future__ import annotations

from pathlib import Path

from attnphase.models.registry import MODELS, get, load


def reproducible_models() -> list[str]:
    """The registered models that have a reproduction pipeline."""
    return [name for name, entry in MODELS.items() if entry.reproduce is not None]


def run_model(name: str, out_dir: Path, quick: bool, device: str = "auto") -> dict:
    """Run the reproduction pipeline of model `name` into `out_dir/<model_name_with_underscores>`.

    The directory's report.md, if any, is removed first (the pipeline writes the new one last): a report.md is always
    the complete report of one run, never an earlier run's beside the figures and data of an interrupted one."""
    entry = get(name)
    model_dir = Path(out_dir) / entry.derivation_stem
    (model_dir / "report.md").unlink(missing_ok=True)
    return load(entry.reproduce).run(model_dir, quick=quick, device=device)
