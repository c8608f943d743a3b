"""attnphase: a symbolic-numeric toolkit for solvable models of attention.

Layers: `derive` (SymPy calculus, rewrites, code generation, rendering), `numeric` (Gaussian
expectations, fixed points, continuation, thresholds, ODEs, scaling fits, MCMC diagnostics), `validate`
(finite-size torch simulations and theory-vs-simulation comparisons), `models` (one symbolic source per
model), `api` (the Python entry points the CLI mirrors).

`__version__` is the release version of the installed package; results are keyed by the finer
`attnphase.version.code_version()`, which also changes with the source.
"""

__all__ = ["__version__"]


def __getattr__(name):
    # Read from the package metadata on first use, so that `import attnphase` stays instant.
    if name == "__version__":
        from attnphase.version import package_version

        return package_version()
    raise AttributeError(f"module 'attnphase' has no attribute {name!r}")
