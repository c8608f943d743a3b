"""attnphase: a symbolic-numeric toolkit for solvable models of attention.

Layers (see DESIGN.md): `derive` (SymPy calculus, rewrites, code generation, rendering), `numeric`
(Gaussian expectations, fixed points, continuation, thresholds, ODEs, scaling fits), `validate`
(finite-size torch simulations and theory-vs-simulation comparisons), `models` (one symbolic source per
model), `api` (the Python entry points the CLI mirrors).
"""

from importlib.metadata import PackageNotFoundError, version as _dist_version

try:
    __version__ = _dist_version("attnphase")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
