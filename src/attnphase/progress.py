"""Progress of long work, shown on a terminal only.

Library code announces its stages with `task(description, total)` and advances them; nothing is shown
unless a command has switched display on with `shown(enabled)`. The CLI enables it when stderr is a
terminal and `--json` is not given, so piped or JSON output stays clean, and the numeric layers never
need a callback argument for it.

    with progress.task("alpha_c(omega)", total=len(omegas)) as bar:
        for omega in omegas:
            ...
            bar.advance(f"omega = {omega:g}")
"""

from __future__ import annotations

import contextvars
import sys
from contextlib import contextmanager

__all__ = ["shown", "task", "is_shown"]

_SHOWN: contextvars.ContextVar[bool] = contextvars.ContextVar("attnphase_progress_shown", default=False)


def is_shown() -> bool:
    return _SHOWN.get()


@contextmanager
def shown(enabled: bool):
    """Show progress bars of the work inside this block when `enabled` and stderr is a terminal."""
    token = _SHOWN.set(bool(enabled) and sys.stderr.isatty())
    try:
        yield
    finally:
        _SHOWN.reset(token)


class _Silent:
    def advance(self, note: str | None = None, amount: float = 1) -> None:
        pass


class _Bar:
    def __init__(self, description: str, total: float | None):
        from tqdm import tqdm

        self._bar = tqdm(total=total, desc=description, file=sys.stderr, leave=False, dynamic_ncols=True)

    def advance(self, note: str | None = None, amount: float = 1) -> None:
        if note is not None:
            self._bar.set_postfix_str(note, refresh=False)
        self._bar.update(amount)

    def close(self) -> None:
        self._bar.close()


@contextmanager
def task(description: str, total: float | None = None):
    """A stage of work with `total` steps (None: unknown); yields an object with `advance(note, amount)`."""
    if not _SHOWN.get():
        yield _Silent()
        return
    bar = _Bar(description, total)
    try:
        yield bar
    finally:
        bar.close()
