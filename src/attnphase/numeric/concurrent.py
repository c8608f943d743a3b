"""Independent jobs side by side on the cores numba may use, each job's compiled loops on its own thread alone.

Why: a split-line evaluation spends about half its time in numpy and Python between its compiled minimisation loops
(derive.fused), on one core, while the loops use every numba thread. Its lines are independent, so blocks of them
(numeric.split_line) run on worker threads instead, one block each at a time, with numba's thread count set to one on
each worker (the count is per thread) and the loops released from the GIL, so the numpy of one block overlaps the
loops of the other. Measured at the positional-semantic states of α_c(0.3), both branches, two cores: split-line 12
0.38 s against 0.64 s on one thread, count-split 8 1.10 s against 2.09 s; the two-branch solve at ω = 0.3, α = 1.25 as a
whole process 14.7 s against 16.6 s with the loops alone on both cores. A job that itself calls `map_side_by_side`
on a worker runs its items in turn (one numba thread there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

__all__ = ["map_side_by_side"]


def map_side_by_side(function: Callable, items: Iterable) -> list:
    """[function(item) for item in items] (in that order), on as many worker threads as the caller has numba threads
    (at most one per item; with fewer than two, in the caller's thread, one after the other). `function` must be safe
    to run on several threads at once (no shared state it changes)."""
    import numba

    items = list(items)
    workers = min(numba.get_num_threads(), len(items))
    if workers < 2:
        return [function(item) for item in items]

    def run(item):
        numba.set_num_threads(1)
        return function(item)

    pool = ThreadPoolExecutor(workers)
    try:
        return list(pool.map(run, items))
    finally:  # after an interrupt or a job's exception: start no further job, let the running ones end
        pool.shutdown(wait=True, cancel_futures=True)
