"""Reproduction pipelines, one module per model.

`attnphase.reproduce.<module>.run(out_dir, quick, device) -> dict` writes a report directory
(report.md, PNG figures, CSV data) and returns the headline numbers.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from attnphase.models import MODEL_MODULES


def run_model(name: str, out_dir: Path, quick: bool, device: str = "auto") -> dict:
    """Run the reproduction pipeline of model `name` into `out_dir/<module>`."""
    module_name = MODEL_MODULES[name].rsplit(".", 1)[-1]
    pipeline = importlib.import_module(f"attnphase.reproduce.{module_name}")
    return pipeline.run(Path(out_dir) / module_name, quick=quick, device=device)
