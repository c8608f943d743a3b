"""What a report reads back of an earlier run's kept pieces, counted while `attnphase reproduce` runs a model.

`counting(say)` wraps one model's run: it counts the pieces read back (and those kept by other code, not used) by
`resume.take_tally`, plus the GD runs `positional_semantic_gd.cached_runner` reads (`count_read_back`: they are
plain JSON files, outside `resume`). With `say`, the count so far is said when the report starts computing and
whenever it goes on from reading kept pieces to computing new ones (`note_read_back`, called by the pipelines just
before they compute a piece, and by `computed_once` here), so a run stopped before the model finishes has shown
that it is at work and what it reused. Outside `counting` the calls do nothing: `resume`'s tally is then left to
whoever takes it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from attnphase import resume

__all__ = ["counting", "note_read_back", "count_read_back", "computed_once"]

_counting: dict | None = None  # while a model runs inside `counting`: its counts, `say` and the counts last said


@contextmanager
def counting(say: Callable[[dict[str, int]], None] | None = None):
    """Count the kept pieces the work inside reads back; yields the counts ({"read_back": n, "other_version": n}),
    complete once the block ends. say(counts): called with the counts so far by the first `note_read_back` (the work
    starts computing) and by each later one that finds them grown (None: nothing is said)."""
    global _counting
    resume.take_tally()  # what came before is not this model's
    state = {"counts": {"read_back": 0, "other_version": 0}, "say": say, "said": None}
    _counting = state
    try:
        yield state["counts"]
    finally:
        _counting = None
        for key, value in resume.take_tally().items():
            state["counts"][key] += value


def count_read_back(pieces: int = 1) -> None:
    """Count `pieces` read back outside `resume` (a GD run's file of `cached_runner`)."""
    if _counting is not None:
        _counting["counts"]["read_back"] += pieces


def note_read_back() -> None:
    """Just before a report computes a piece: take `resume`'s tally into the counts and say them if they grew."""
    if _counting is None:
        return
    counts = _counting["counts"]
    for key, value in resume.take_tally().items():
        counts[key] += value
    if _counting["say"] is not None and counts != _counting["said"]:  # the first time, and after new pieces
        _counting["said"] = dict(counts)
        _counting["say"](dict(counts))


def computed_once(path: Path, compute):
    """`resume.computed_once`, with `note_read_back` just before it computes."""
    def noted():
        note_read_back()
        return compute()

    return resume.computed_once(path, noted)
