"""numpy's BLAS on one thread while the solvers' compiled loops run.

Why: after each call numpy's OpenBLAS keeps its worker threads spinning for a while, on the cores where the solvers'
compiled (numba) minimisation loops run next (derive.fused). The heavy work of those solvers is in the loops; their
BLAS calls are small (Jacobians and Hessians of a few variables), so one BLAS thread costs them nothing. Measured on
2 cores, positional-semantic `threshold --omega 0.3`: 23.1 s with two BLAS threads, 18.1 s with one (research notes).

The pool is limited at run time (threadpoolctl), so this holds however numpy was loaded (a notebook that imported it
first), and the caller's own limits are restored on the way out.
"""

from __future__ import annotations

import contextlib

__all__ = ["one_blas_thread"]


@contextlib.contextmanager
def one_blas_thread():
    """Run the block with every BLAS library loaded in the process (numpy's, scipy's) on one thread."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
